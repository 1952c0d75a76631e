package httpapi_test

import (
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver/redistest"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/httpapi"
)

// TestTwoInstancesShareRedis runs two service instances on one Redis, as two
// replicas behind a proxy: what one accepts, the other serves.
func TestTwoInstancesShareRedis(t *testing.T) {
	e := engine{name: "redis", redis: redistest.Start(t)}
	clk := newClock()
	a := newStack(t, e, stackOptions{prefix: "shared:", clock: clk})
	b := newStack(t, e, stackOptions{prefix: "shared:", clock: clk})

	// Users: created on A, their token works on B; roles changed on B show on A.
	u, tok := a.user(chat.RoleViewer)
	var me httpapi.User
	b.must(200, "GET", "/api/v1/users/me", tok, nil, &me)
	if me.ID != u.ID {
		t.Fatalf("B sees %+v, want %s", me, u.ID)
	}
	b.must(200, "PATCH", "/api/v1/users/"+u.ID, adminToken, map[string]any{"role": "subscriber"}, nil)
	a.must(200, "GET", "/api/v1/users/me", tok, nil, &me)
	if me.Role != "subscriber" {
		t.Fatalf("A sees role %s", me.Role)
	}
	// The same name cannot be taken twice through two replicas.
	errorBody(t, b.call("POST", "/api/v1/users", adminToken, map[string]any{"name": u.Name}), 409)

	// Commands: created on A, conflict on B, triggered on B, counted once across both.
	a.must(201, "POST", "/api/v1/commands", adminToken, map[string]any{"command": "shared", "response": "#${count}", "cooldown_seconds": 0}, nil)
	errorBody(t, b.call("POST", "/api/v1/commands", adminToken, map[string]any{"command": "!SHARED", "response": "x"}), 409)
	if m := b.send(tok, "", "!shared"); m.Reply == nil || m.Reply.Text != "#1" {
		t.Fatalf("B's reply: %+v", m.Reply)
	}
	if m := a.send(tok, "", "!shared"); m.Reply == nil || m.Reply.Text != "#2" {
		t.Fatalf("A's reply: %+v", m.Reply)
	}

	// Messages: one sequence per channel whichever replica stores them.
	a.send(tok, "", "from a")
	b.send(tok, "", "from b")
	ma, mb := a.messages(""), b.messages("")
	if len(ma) != 6 || len(mb) != 6 {
		t.Fatalf("A has %d messages, B %d", len(ma), len(mb))
	}
	for i := range ma {
		if ma[i].ID != int64(i+1) || ma[i].ID != mb[i].ID || ma[i].Text != mb[i].Text {
			t.Fatalf("replicas disagree at %d: %+v vs %+v", i, ma[i], mb[i])
		}
	}

	// Moderation and filters hold on every replica.
	var f httpapi.Filter
	b.must(201, "POST", "/api/v1/filters", adminToken, map[string]any{"kind": "blocked_term", "pattern": "forbidden"}, &f)
	errorBody(t, a.call("POST", "/api/v1/messages/send", tok, map[string]any{"message": "FORBIDDEN"}), 422)
	a.must(200, "POST", "/api/v1/users/"+u.ID+"/ban", adminToken, nil, nil)
	errorBody(t, b.call("POST", "/api/v1/messages/send", tok, map[string]any{"message": "hi"}), 403)
	// Slow mode set on one replica applies on the other.
	b.must(200, "DELETE", "/api/v1/users/"+u.ID+"/ban", adminToken, nil, nil)
	a.must(200, "PATCH", "/api/v1/channels/general", adminToken, map[string]any{"slow_mode_seconds": 120}, nil)
	b.send(tok, "", "one")
	errorBody(t, a.call("POST", "/api/v1/messages/send", tok, map[string]any{"message": "two"}), 429)
}

// TestRedisDown: with Redis gone every answer that would claim a change is
// a 503, nothing is acknowledged, and the service recovers when it returns.
func TestRedisDown(t *testing.T) {
	rs := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always") // acknowledged data survives SIGKILL
	s := newStack(t, engine{name: "redis", redis: rs}, stackOptions{})
	_, tok := s.user(chat.RoleModerator)
	s.send(tok, "", "before")

	rs.Stop()
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/api/v1/messages/send", map[string]any{"message": "lost?"}},
		{"GET", "/api/v1/messages", nil},
		{"POST", "/api/v1/commands", map[string]any{"command": "x", "response": "y"}},
		{"GET", "/api/v1/commands", nil},
		{"POST", "/api/v1/users", map[string]any{"name": "nobody"}},
		{"GET", "/api/v1/users/me", nil},
		{"PATCH", "/api/v1/channels/general", map[string]any{"slow_mode_seconds": 5}},
	} {
		r := s.call(c.method, c.path, tok, c.body)
		m := errorBody(t, r, 503)
		if r.Header.Get("Retry-After") == "" || m["message"] == "" {
			t.Errorf("%s %s: %s", c.method, c.path, r)
		}
	}

	rs.Start()
	s.waitReady()
	got := s.messages("")
	if len(got) != 1 || got[0].Text != "before" {
		t.Fatalf("after the outage: %+v", got)
	}
	s.send(tok, "", "after")
}

// waitReady polls /readyz until Redis answers again: the client redials in
// the background, on its own schedule.
func (s *stack) waitReady() {
	s.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for s.call("GET", "/readyz", "", nil).Status != 200 {
		if time.Now().After(deadline) {
			s.t.Fatal("/readyz did not recover after Redis came back")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
