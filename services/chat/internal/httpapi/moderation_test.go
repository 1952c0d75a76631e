package httpapi_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/httpapi"
)

// TestModerationOverHTTP: filter actions answer 422 with the consequence
// or 202 for a hold; the review queue's endpoints; the modes on PATCH and
// GET /channels, with their refusals.
func TestModerationOverHTTP(t *testing.T) {
	engines(t, func(t *testing.T, e engine) {
		s := newStack(t, e, stackOptions{})
		_, mod := s.user(chat.RoleModerator)
		_, viewer := s.user(chat.RoleViewer)
		s.must(201, "POST", "/api/v1/filters", mod, map[string]any{"kind": "blocked_term", "pattern": "toxic", "action": "timeout", "timeout_seconds": 30}, nil)
		s.must(201, "POST", "/api/v1/filters", mod, map[string]any{"kind": "blocked_term", "pattern": "spam", "action": "strike"}, nil)
		s.must(201, "POST", "/api/v1/filters", mod, map[string]any{"kind": "blocked_term", "pattern": "maybe", "action": "hold"}, nil)
		errorBody(t, s.call("POST", "/api/v1/filters", mod, map[string]any{"kind": "blocked_term", "pattern": "x", "action": "explode"}), 400)
		errorBody(t, s.call("POST", "/api/v1/filters", mod, map[string]any{"kind": "blocked_term", "pattern": "x", "timeout_seconds": 5}), 400)

		send := func(token, channel, text string) resp {
			if channel == "" {
				channel = chat.DefaultChannel
			}
			return s.call("POST", "/api/v1/messages/send", token, map[string]any{"channel": channel, "message": text})
		}
		// strike 1: a warning, in the body.
		b := errorBody(t, send(viewer, "", "spam"), 422)
		c, _ := b["consequence"].(map[string]any)
		if b["reason"] != "blocked_term" || c["action"] != "strike" || c["penalty"] != "warn" || c["strike"] != float64(1) || c["strikes_expire_at"] == nil {
			t.Fatalf("strike body = %v", b)
		}
		// timeout: the end of it, then 403.
		b = errorBody(t, send(viewer, "", "so toxic"), 422)
		c, _ = b["consequence"].(map[string]any)
		until := s.Clock.Now().Add(30 * time.Second).Format(time.RFC3339)
		if c["action"] != "timeout" || c["penalty"] != "timeout" || c["until"] != until {
			t.Fatalf("timeout body = %v (want until %s)", b, until)
		}
		if b := errorBody(t, send(viewer, "", "hello"), 403); b["reason"] != "timed_out" {
			t.Fatalf("after the timeout: %v", b)
		}
		s.Clock.Advance(31 * time.Second)

		// hold: 202 with the review id; the queue; approve; deny.
		r := send(viewer, "", "maybe this")
		if r.Status != 202 {
			t.Fatalf("hold: %s", r)
		}
		var held httpapi.SentMessage
		if err := json.Unmarshal(r.Raw, &held); err != nil {
			t.Fatal(err)
		}
		if held.Held == nil || held.Held.ID == 0 || held.ID != held.Held.ID || held.Held.Text != "maybe this" {
			t.Fatalf("held answer = %s", r.Raw)
		}
		second := send(viewer, "", "maybe not")
		var list httpapi.HeldList
		errorBody(t, s.call("GET", "/api/v1/channels/general/held", viewer, nil), 403)
		s.must(200, "GET", "/api/v1/channels/general/held", mod, nil, &list)
		if len(list.Held) != 2 || list.Held[0].Reason != "filter" {
			t.Fatalf("queue = %+v", list)
		}
		var m httpapi.Message
		s.must(201, "POST", fmt.Sprintf("/api/v1/channels/general/held/%d/approve", held.Held.ID), mod, nil, &m)
		if m.ID == 0 || m.Text != "maybe this" {
			t.Fatalf("approved = %+v", m)
		}
		errorBody(t, s.call("POST", fmt.Sprintf("/api/v1/channels/general/held/%d/approve", held.Held.ID), mod, nil), 404)
		s.must(204, "DELETE", fmt.Sprintf("/api/v1/channels/general/held/%d", int(second.JSON()["held"].(map[string]any)["id"].(float64))), mod, nil, nil)
		if ms := s.messages(""); len(ms) != 1 || ms[0].Text != "maybe this" {
			t.Fatalf("messages = %+v", ms)
		}

		// Modes.
		var ch httpapi.Channel
		s.must(200, "PATCH", "/api/v1/channels/modes", mod, map[string]any{"min_account_age_seconds": 3600, "unique_chat": true,
			"first_message_review": true, "auto_shield": true, "auto_shield_first_chatters": 50, "auto_shield_blocked": 40, "shield_quiet_seconds": 120}, &ch)
		if ch.MinAccountAgeSeconds != 3600 || !ch.UniqueChat || !ch.FirstMessageReview || !ch.AutoShield || ch.AutoShieldFirstChatters != 50 || ch.AutoShieldBlocked != 40 || ch.ShieldQuietSeconds != 120 || ch.ShieldActive {
			t.Fatalf("patched = %+v", ch)
		}
		var got httpapi.Channel
		s.must(200, "GET", "/api/v1/channels/modes", "", nil, &got)
		if got != ch {
			t.Fatalf("read back %+v, want %+v", got, ch)
		}
		errorBody(t, s.call("PATCH", "/api/v1/channels/modes", mod, map[string]any{"shield_quiet_seconds": 10}), 400)
		errorBody(t, s.call("PATCH", "/api/v1/channels/modes", mod, map[string]any{"auto_shield_blocked": 10001}), 400)
		errorBody(t, s.call("PATCH", "/api/v1/channels/modes", viewer, map[string]any{"shield": true}), 403)
		_, fresh := s.user(chat.RoleViewer)
		b = errorBody(t, send(fresh, "modes", "hi"), 403)
		if b["reason"] != "account_too_new" || b["until"] == nil {
			t.Fatalf("account age = %v", b)
		}
		s.Clock.Advance(2 * time.Hour)
		if r := send(fresh, "modes", "first"); r.Status != 202 {
			t.Fatalf("first message review: %s", r)
		}
		s.must(200, "PATCH", "/api/v1/channels/modes", mod, map[string]any{"first_message_review": false}, nil)
		s.send(fresh, "modes", "again")
		if b := errorBody(t, send(fresh, "modes", "AGAIN"), 429); b["reason"] != "unique_chat" || r.Header.Get("Retry-After") == "" && b["retry_after_seconds"] == nil {
			t.Fatalf("unique chat = %v", b)
		}
		s.must(200, "PATCH", "/api/v1/channels/modes", mod, map[string]any{"shield": true}, &ch)
		if !ch.Shield || !ch.ShieldActive {
			t.Fatalf("shield = %+v", ch)
		}
	})
}
