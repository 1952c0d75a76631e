package redisstore

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/services/chat/internal/chat"
)

// TestClusterModerationEventIsNeverLost: on a real 3-primary cluster, a ban
// whose event cannot be appended to the channel (its log is broken for the
// moment) still bans atomically and succeeds; once the channel works again
// RepairPending appends the event, exactly once, however often it runs,
// with no feed subscribed.
func TestClusterModerationEventIsNeverLost(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = rdb.Close() })
	s := New(rdb, Options{Prefix: "pend:"})
	ctx := context.Background()
	for _, id := range []string{"u1", "u2"} {
		if err := s.CreateUser(ctx, chat.User{ID: id, Name: id, Role: chat.RoleViewer, TokenHash: "hash-" + id, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	ban := func(id, channel string) {
		t.Helper()
		banned := true
		ev := &chat.Event{Type: chat.EventUserBanned, Channel: channel,
			Moderation: &chat.Moderation{User: chat.UserRef{ID: id, Name: id}, At: time.Now()}}
		log := &chat.ModEntry{Channel: channel, Action: chat.ModBan, Actor: chat.AutomodUser, Target: &ev.Moderation.User, At: time.Now()}
		u, err := s.UpdateUser(ctx, id, chat.RoleViewer, chat.UserPatch{Banned: &banned}, ev, log)
		if err != nil {
			t.Fatalf("ban %s: %v", id, err)
		}
		if !u.Banned {
			t.Fatalf("ban %s: %+v", id, u)
		}
	}
	bans := func(channel string) int {
		t.Helper()
		evs, err := s.ReadEvents(ctx, channel, chat.Cursor{}, 100)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range evs {
			if e.Type == chat.EventUserBanned {
				n++
			}
		}
		return n
	}
	// entries counts the channel's moderation log entries, which travel
	// with the events.
	entries := func(channel string) int {
		t.Helper()
		es, err := s.ModLog(ctx, channel, nil, 100, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return len(es)
	}
	pending := func() int64 {
		t.Helper()
		n, err := rdb.HLen(ctx, s.uk("pending")).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	// The usual path: the event follows at once and nothing stays pending.
	ban("u1", "fine")
	if n := bans("fine"); n != 1 || pending() != 0 || entries("fine") != 1 {
		t.Fatalf("working channel: %d ban events, %d pending", n, pending())
	}

	// A channel whose log cannot take the event: the ban still holds.
	if err := rdb.Set(ctx, s.ck("broken", "seq"), "not-a-number", 0).Err(); err != nil {
		t.Fatal(err)
	}
	ban("u2", "broken")
	if u, err := s.User(ctx, "u2"); err != nil || !u.Banned {
		t.Fatalf("u2 after the failed append: %+v, %v", u, err)
	}
	if pending() != 1 || entries("broken") != 0 {
		t.Fatalf("%d pending events, want 1; %d log entries, want 0", pending(), entries("broken"))
	}
	if err := s.drainPending(ctx); chat.KindOf(err) != chat.KindUnavailable {
		t.Fatalf("drain with the channel still broken: %v", err)
	}
	if err := rdb.Del(ctx, s.ck("broken", "seq")).Err(); err != nil {
		t.Fatal(err)
	}
	// The repair appends it on its own, with no feed subscribed (a
	// replica serving no socket repairs too).
	rctx, stop := context.WithCancel(ctx)
	repaired := make(chan struct{})
	go func() { defer close(repaired); s.RepairPending(rctx) }()
	defer func() { stop(); <-repaired }()
	deadline := time.Now().Add(30 * time.Second)
	for bans("broken") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the pending ban event never reached the channel")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Applying the same entry again (a replica died between the append and
	// forgetting the entry, and another drains it) appends nothing.
	data, err := json.Marshal(chat.Event{Type: chat.EventUserBanned, Channel: "broken",
		Moderation: &chat.Moderation{User: chat.UserRef{ID: "u2", Name: "u2"}, At: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := newPendingEvent("broken", chat.EventUserBanned, data, &chat.ModEntry{Channel: "broken", Action: chat.ModBan, Actor: chat.AutomodUser, At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	p.key = "replayed"
	for i := 0; i < 2; i++ {
		if err := s.applyPending(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if n, m := bans("broken"), entries("broken"); n != 2 || m != 2 {
		t.Fatalf("%d ban events and %d log entries in the channel, want 2 (the drained one and the replayed one once)", n, m)
	}
	if pending() != 0 {
		t.Fatalf("%d pending events left", pending())
	}
}
