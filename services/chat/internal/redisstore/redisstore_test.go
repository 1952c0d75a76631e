package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/services/chat/internal/chat"
)

// The behaviour suite for this engine is internal/chat's TestRedisEngine;
// these tests pin the Redis layout that live delivery may read directly.

func open(t *testing.T, history int) (*Store, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return New(rdb, Options{History: history}), rdb
}

func TestMessagesAreStreamEntriesNamedByID(t *testing.T) {
	s, rdb := open(t, 2)
	ctx := context.Background()
	for _, text := range []string{"a", "b", "c"} {
		if _, err := s.AppendMessage(ctx, chat.Message{Channel: "general", Text: text, CreatedAt: time.Now()}, chat.Once{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.DeleteMessage(ctx, "general", 3, time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	xs, err := rdb.XRange(ctx, "chat:{ch:general}:log", "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range xs {
		ids = append(ids, x.ID+"/"+x.Values["t"].(string))
	}
	// History 2: message 1 is trimmed; the deletion follows message 3.
	want := []string{"2-0/message", "3-0/message", "3-1/message_deleted"}
	if len(ids) != len(want) {
		t.Fatalf("entries %v, want %v", ids, want)
	}
	for i := range want {
		if ids[i] != want[i] {
			t.Fatalf("entries %v, want %v", ids, want)
		}
	}
	if trim, _ := rdb.Get(ctx, "chat:{ch:general}:trim").Int(); trim != 1 {
		t.Fatalf("trim mark %d", trim)
	}
}

func TestStoppedServerIsUnavailable(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	defer rdb.Close()
	s := New(rdb, Options{})
	srv.Stop()
	ctx := context.Background()
	checks := map[string]error{
		"ping":   s.Ping(ctx),
		"create": s.CreateUser(ctx, chat.User{ID: "x", Name: "x", Role: chat.RoleViewer}),
	}
	_, checks["append"] = s.AppendMessage(ctx, chat.Message{Channel: "general", Text: "x"}, chat.Once{})
	_, checks["read"] = s.ReadEvents(ctx, "general", chat.Cursor{}, 10)
	_, checks["gate"] = s.Acquire(ctx, time.Now(), chat.Gate{Channel: "general", Key: "k", For: time.Second})
	for op, err := range checks {
		if chat.KindOf(err) != chat.KindUnavailable {
			t.Errorf("%s: %v, want unavailable", op, err)
		}
	}
}

func TestOpenRejectsBadURL(t *testing.T) {
	if _, err := Open(context.Background(), "http://nope", Options{}); err == nil {
		t.Fatal("bad URL accepted")
	}
}

// TestFeedRefusesClientsItCannotRoute: live delivery places each channel
// on the server that owns its slot, which a Ring (client-side sharding)
// cannot tell; Subscribe says so instead of delivering nothing.
func TestFeedRefusesClientsItCannotRoute(t *testing.T) {
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	_, err := New(ring, Options{}).Subscribe(func(chat.Notice) {})
	if !errors.Is(err, errUnsupportedClient) {
		t.Fatalf("Subscribe on a Ring: %v, want errUnsupportedClient", err)
	}
}
