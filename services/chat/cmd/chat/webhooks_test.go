package main

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/apistack/platform/libs/apiserver/redistest"

	"github.com/apistack/platform/services/chat/internal/webhooks"
	"github.com/apistack/platform/services/chat/internal/webhooks/webhookstest"
)

// TestWebhooksAndSendHookEndToEnd runs the binary with a send hook and a
// webhook receiver: the hook judges HTTP and WebSocket sends alike (allow,
// deny with a 403 and its reason, replace), the webhook endpoints answer
// as documented, and the receiver gets every stored message signed.
func TestWebhooksAndSendHookEndToEnd(t *testing.T) {
	hookSecret, err := webhooks.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	hook := webhookstest.NewReceiver(t)
	hook.Answer(func(r webhookstest.Request) (int, string) {
		var in struct{ Text string }
		_ = json.Unmarshal(r.Body, &in)
		switch {
		case strings.Contains(in.Text, "forbidden"):
			return http.StatusOK, `{"action":"deny","reason":"not on this platform"}`
		case strings.Contains(in.Text, "darn"):
			return http.StatusOK, `{"action":"replace","text":"` + strings.ReplaceAll(in.Text, "darn", "d*rn") + `"}`
		}
		return http.StatusOK, `{"action":"allow"}`
	})
	r := startReplica(t, redistest.Start(t).URL(), "CHAT_WEBHOOK_ALLOW_PRIVATE=true",
		"CHAT_SEND_HOOK_URL="+hook.URL, "CHAT_SEND_HOOK_SECRET="+hookSecret, "CHAT_SEND_HOOK_TIMEOUT=2s")
	rcv := webhookstest.NewReceiver(t)

	// Registration: the admin; a channel's broadcaster for its own channel only.
	var created struct{ ID, Secret string }
	if code, err := r.call("POST", "/api/v1/webhooks", faultAdminToken, map[string]any{"url": rcv.URL, "events": []string{"message.created"}, "channel": "general"}, &created); code != http.StatusCreated || err != nil {
		t.Fatalf("create: %d %v", code, err)
	}
	if !strings.HasPrefix(created.Secret, "whsec_") || !strings.HasPrefix(created.ID, "wh_") {
		t.Fatalf("created %+v", created)
	}
	var viewer struct{ ID, Token string }
	if code, err := r.call("POST", "/api/v1/users", faultAdminToken, map[string]string{"name": "viewer1"}, &viewer); code != http.StatusCreated {
		t.Fatalf("create user: %d %v", code, err)
	}
	var e struct {
		StatusCode int
		Reason     string
		Message    string
	}
	if code, _ := r.call("POST", "/api/v1/webhooks", viewer.Token, map[string]any{"url": rcv.URL, "events": []string{"message.created"}, "channel": "general"}, &e); code != http.StatusForbidden {
		t.Errorf("a viewer registered a webhook: %d", code)
	}
	if code, _ := r.call("PUT", "/api/v1/channels/mine/roles/"+viewer.ID, faultAdminToken, map[string]string{"role": "broadcaster"}, nil); code != http.StatusOK {
		t.Fatalf("name a broadcaster: %d", code)
	}
	var own struct{ ID string }
	if code, _ := r.call("POST", "/api/v1/webhooks", viewer.Token, map[string]any{"url": rcv.URL, "events": []string{"user.banned"}, "channel": "mine"}, &own); code != http.StatusCreated {
		t.Errorf("a broadcaster could not register for its channel: %d", code)
	}
	if code, _ := r.call("DELETE", "/api/v1/webhooks/"+created.ID, viewer.Token, nil, nil); code != http.StatusNotFound {
		t.Errorf("another channel's broadcaster deleting: %d, want 404", code)
	}
	for i := 0; i < webhooks.MaxPerChannel-1; i++ {
		r.call("POST", "/api/v1/webhooks", viewer.Token, map[string]any{"url": rcv.URL, "events": []string{"user.banned"}, "channel": "mine"}, nil)
	}
	if code, _ := r.call("POST", "/api/v1/webhooks", viewer.Token, map[string]any{"url": rcv.URL, "events": []string{"user.banned"}, "channel": "mine"}, &e); code != http.StatusConflict || e.Reason != "limit" {
		t.Errorf("webhook %d of a channel: %d %+v, want 409 limit", webhooks.MaxPerChannel+1, code, e)
	}
	if code, _ := r.call("POST", "/api/v1/webhooks", faultAdminToken, map[string]any{"url": rcv.URL, "events": []string{"message.nope"}}, &e); code != http.StatusBadRequest {
		t.Errorf("unknown event type: %d", code)
	}
	var list struct {
		Webhooks []struct{ ID, Secret string }
	}
	if code, _ := r.call("GET", "/api/v1/webhooks", faultAdminToken, nil, &list); code != http.StatusOK || len(list.Webhooks) != 1+webhooks.MaxPerChannel {
		t.Fatalf("list: %d %+v", code, list)
	}
	for _, w := range list.Webhooks {
		if w.Secret != "" {
			t.Errorf("the list shows a secret")
		}
	}

	// Sends over HTTP, judged by the hook.
	send := func(text string) (int, string) {
		var res struct{ Text, Reason string }
		code, _ := r.call("POST", "/api/v1/messages/send", viewer.Token, map[string]string{"channel": "general", "message": text}, &res)
		if code != http.StatusCreated {
			return code, res.Reason
		}
		return code, res.Text
	}
	if code, text := send("hello there"); code != http.StatusCreated || text != "hello there" {
		t.Errorf("allowed: %d %q", code, text)
	}
	if code, text := send("oh darn"); code != http.StatusCreated || text != "oh d*rn" {
		t.Errorf("replaced: %d %q", code, text)
	}
	if code, reason := send("something forbidden"); code != http.StatusForbidden || reason != "send_hook" {
		t.Errorf("denied: %d %q, want 403 send_hook", code, reason)
	}
	// Over the WebSocket: the same hook.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.Base, "http")+"/api/v1/ws?channel=general",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + viewer.Token}}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	wsAnswer := func(id int, text string) (string, int, string) {
		frame, _ := json.Marshal(map[string]any{"type": "send", "message": text, "id": id})
		if err := conn.Write(ctx, websocket.MessageText, frame); err != nil {
			t.Fatal(err)
		}
		for {
			_, data, err := conn.Read(ctx)
			if err != nil {
				t.Fatalf("ws: %v", err)
			}
			for _, line := range strings.Split(string(data), "\n") {
				var f struct {
					Type    string
					ID      *int
					Status  int
					Reason  string
					Message json.RawMessage
				}
				if json.Unmarshal([]byte(line), &f) != nil || f.ID == nil || *f.ID != id {
					continue
				}
				var m struct{ Text string }
				_ = json.Unmarshal(f.Message, &m) // an object in an ack, a string in an error
				text := m.Text
				return f.Type, f.Status, f.Reason + text
			}
		}
	}
	if typ, _, text := wsAnswer(2, "ws darn"); typ == "error" || text != "ws d*rn" {
		t.Errorf("ws replaced: %s %q", typ, text)
	}
	if typ, status, reason := wsAnswer(1, "ws forbidden"); typ != "error" || status != http.StatusForbidden || reason != "send_hook" {
		t.Errorf("ws denied: %s %d %q", typ, status, reason)
	}
	webhookstest.Verify(t, hookSecret, hook.Requests())

	// The webhook got the three stored messages, signed.
	deadline := time.Now().Add(20 * time.Second)
	for len(rcv.Requests()) < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	var texts []string
	for _, req := range rcv.Requests() {
		var ev struct {
			Type string
			Data struct{ Text string }
		}
		_ = json.Unmarshal(req.Body, &ev)
		texts = append(texts, ev.Data.Text)
	}
	// Up to four deliveries of an endpoint are in flight at once: no order
	// is promised (README, Webhooks), only that each arrives.
	slices.Sort(texts)
	if strings.Join(texts, "|") != "hello there|oh d*rn|ws d*rn" {
		t.Errorf("webhook texts %q", texts)
	}
	webhookstest.Verify(t, created.Secret, rcv.Requests())

	var ds struct {
		Deliveries []struct {
			ID, Status   string
			AttemptCount int `json:"attempt_count"`
		}
	}
	if code, _ := r.call("GET", "/api/v1/webhooks/"+created.ID+"/deliveries", faultAdminToken, nil, &ds); code != http.StatusOK || len(ds.Deliveries) != 3 {
		t.Fatalf("deliveries: %d %+v", code, ds)
	}
	if code, _ := r.call("POST", "/api/v1/webhooks/"+created.ID+"/deliveries/"+ds.Deliveries[0].ID+"/retry", faultAdminToken, nil, nil); code != http.StatusOK {
		t.Errorf("retry: %d", code)
	}
	if code, _ := r.call("DELETE", "/api/v1/webhooks/"+created.ID, faultAdminToken, nil, nil); code != http.StatusNoContent {
		t.Errorf("delete: %d", code)
	}
}
