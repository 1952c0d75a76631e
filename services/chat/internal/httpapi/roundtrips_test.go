package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver/redistest"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// TestSendRoundTrips bounds the Redis round trips of one HTTP send (issue
// 12): on a busy replica each sequential round trip waits for the Go
// scheduler to notice the reply, so a send costs what its round trips
// cost. The token and its user come in one script, a sender loaded by the
// request is not loaded again, and the reads a send needs (filters,
// channel settings, the send limit) go in one pipeline.
func TestSendRoundTrips(t *testing.T) {
	rs := redistest.Start(t)
	trips := &redistest.Trips{}
	s := newStack(t, engine{name: "redis", redis: rs}, stackOptions{storeHook: trips, sendLimit: chat.DefaultSendLimit})
	_, viewer := s.user(chat.RoleViewer)
	s.must(201, "POST", "/api/v1/commands", adminToken, map[string]any{"command": "hello", "response": "hi ${user}", "cooldown_seconds": 0, "user_cooldown_seconds": 1}, nil)
	s.must(200, "PATCH", "/api/v1/channels/slow", adminToken, map[string]any{"slow_mode_seconds": 5}, nil)
	// The first use of each script loads it (EVALSHA, NOSCRIPT, EVAL), and
	// the first send to a channel claims it (a viewer's opens it, the
	// admin's first then makes it the platform's, once): warm up.
	_, other := s.user(chat.RoleViewer)
	s.send(other, "slow", "warm up")
	s.send(viewer, "", "warm up")
	s.send(adminToken, "", "warm up")
	s.send(viewer, "", "!hello")
	s.Clock.Advance(2 * time.Second) // past the viewer's cooldown of !hello

	cases := []struct {
		name, token, channel, text string
		max                        int
	}{
		// token+user, filters, append
		{"admin", adminToken, "", "hello from the admin", 3},
		// token+user, (filters, settings, send limit), append
		{"viewer", viewer, "", "hello from a viewer", 3},
		// the same: the slow-mode gate is passed by the append
		{"viewer slow mode", viewer, "slow", "hello in slow mode", 3},
		// the same as admin with the command in the pipeline, then its
		// count and its reply
		{"admin command", adminToken, "", "!hello", 5},
		// the same as the viewer, then the cooldown, the count, the reply
		{"viewer command", viewer, "", "!hello", 6},
	}
	for _, c := range cases {
		got := trips.During(func() {
			m := s.send(c.token, c.channel, c.text)
			if strings.HasPrefix(c.text, "!") && m.Reply == nil {
				t.Errorf("%s: no bot reply", c.name)
			}
		})
		t.Logf("%s: %d round trips: %s", c.name, len(got), strings.Join(got, ", "))
		if len(got) > c.max {
			t.Errorf("%s: %d round trips, want at most %d: %s", c.name, len(got), c.max, fmt.Sprint(got))
		}
	}
	// An Idempotency-Key costs no round trip: its record is read in the
	// pipeline and written by the append; a repeat is answered from the
	// pipeline.
	keyed := func() {
		r := s.callWith("POST", "/api/v1/messages/send", viewer, map[string]any{"message": "keyed"}, http.Header{"Idempotency-Key": {"rt-1"}})
		if r.Status != 201 {
			t.Fatalf("keyed send: %s", r)
		}
	}
	for i, max := range []int{3, 2} {
		got := trips.During(keyed)
		t.Logf("keyed send %d: %d round trips: %s", i+1, len(got), strings.Join(got, ", "))
		if len(got) > max {
			t.Errorf("keyed send %d: %d round trips, want at most %d: %s", i+1, len(got), max, fmt.Sprint(got))
		}
	}
	// A message slow mode refuses costs no more, and stores nothing.
	before := len(s.messages("?channel=slow"))
	got := trips.During(func() {
		errorBody(t, s.call("POST", "/api/v1/messages/send", viewer, map[string]any{"channel": "slow", "message": "too soon"}), 429)
	})
	t.Logf("refused by slow mode: %d round trips: %s", len(got), strings.Join(got, ", "))
	if len(got) > 3 {
		t.Errorf("refused by slow mode: %d round trips, want at most 3: %s", len(got), fmt.Sprint(got))
	}
	if after := len(s.messages("?channel=slow")); after != before {
		t.Errorf("slow mode refused a message but the channel went from %d to %d messages", before, after)
	}
}
