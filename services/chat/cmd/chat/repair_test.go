package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver/redistest"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// TestClusterRepairRunsWithoutLiveDelivery: on a Redis Cluster, a ban whose
// event could not reach its channel at once is appended later by the
// engine's repair, which build starts with the engine: no hub is mounted
// here (serveHTTP never runs), so nothing subscribes to the engine's feed.
// App.Close stops the repair.
func TestClusterRepairRunsWithoutLiveDelivery(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	app, err := build(context.Background(), envOf(map[string]string{"REDIS_URL": c.URL(), "CHAT_ADMIN_TOKEN": "0123456789abcdef0123"}), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = app.Close()
		}
	}()
	if app.stopRepair == nil {
		t.Fatal("build started no repair on a Redis Cluster")
	}
	ctx := context.Background()
	u := chat.User{ID: "u1", Name: "u1", Role: chat.RoleViewer, TokenHash: "hash-u1", CreatedAt: time.Now()}
	if err := app.Store.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	// A channel whose log cannot take an event (README: the key layout).
	seq := "chat:{ch:broken}:seq"
	if err := app.Redis.Set(ctx, seq, "not-a-number", 0).Err(); err != nil {
		t.Fatal(err)
	}
	banned := true
	ev := &chat.Event{Type: chat.EventUserBanned, Channel: "broken",
		Moderation: &chat.Moderation{User: chat.UserRef{ID: u.ID, Name: u.Name}, At: time.Now()}}
	if _, err := app.Store.UpdateUser(ctx, u.ID, chat.RoleViewer, chat.UserPatch{Banned: &banned}, ev, nil); err != nil {
		t.Fatal(err)
	}
	bans := func() int {
		t.Helper()
		evs, err := app.Store.ReadEvents(ctx, "broken", chat.Cursor{}, 100)
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
	if n := bans(); n != 0 {
		t.Fatalf("%d ban events in a channel whose log was broken", n)
	}
	if err := app.Redis.Del(ctx, seq).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for bans() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the pending ban event never reached the channel without a hub")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := bans(); n != 1 {
		t.Fatalf("%d ban events, want 1", n)
	}
	closed = true
	done := make(chan error, 1)
	go func() { done <- app.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("App.Close did not return: the repair was not stopped")
	}
}
