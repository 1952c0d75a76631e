package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver/redistest"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// roundTrips is a go-redis hook that records every round trip the store's
// client makes: one entry per command, one per pipeline (however many
// commands it carries).
type roundTrips struct {
	mu    sync.Mutex
	trips []string
}

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.add(cmd.Name())
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		names := make([]string, len(cmds))
		for i, c := range cmds {
			names[i] = c.Name()
		}
		r.add("pipeline(" + strings.Join(names, " ") + ")")
		return next(ctx, cmds)
	}
}

func (r *roundTrips) add(s string) { r.mu.Lock(); r.trips = append(r.trips, s); r.mu.Unlock() }

// during returns the round trips f made.
func (r *roundTrips) during(f func()) []string {
	r.mu.Lock()
	r.trips = nil
	r.mu.Unlock()
	f()
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.trips...)
}

// TestSendRoundTrips bounds the Redis round trips of one HTTP send (issue
// 12): on a busy replica each sequential round trip waits for the Go
// scheduler to notice the reply, so a send costs what its round trips
// cost. The token and its user come in one script, a sender loaded by the
// request is not loaded again, and the reads a send needs (filters,
// channel settings, the send limit) go in one pipeline.
func TestSendRoundTrips(t *testing.T) {
	rs := redistest.Start(t)
	trips := &roundTrips{}
	s := newStack(t, engine{name: "redis", redis: rs}, stackOptions{storeHook: trips, sendLimit: chat.DefaultSendLimit})
	_, viewer := s.user(chat.RoleViewer)
	s.must(201, "POST", "/api/v1/commands", adminToken, map[string]any{"command": "hello", "response": "hi ${user}", "cooldown_seconds": 0, "user_cooldown_seconds": 1}, nil)
	s.must(200, "PATCH", "/api/v1/channels/slow", adminToken, map[string]any{"slow_mode_seconds": 5}, nil)
	// The first use of each script loads it (EVALSHA, NOSCRIPT, EVAL), and
	// the first send to a channel claims it: warm up.
	_, other := s.user(chat.RoleViewer)
	s.send(other, "slow", "warm up")
	s.send(viewer, "", "warm up")
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
		got := trips.during(func() {
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
	// A message slow mode refuses costs no more, and stores nothing.
	before := len(s.messages("?channel=slow"))
	got := trips.during(func() {
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
