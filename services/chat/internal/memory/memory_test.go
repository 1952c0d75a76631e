package memory

import (
	"context"
	"testing"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// The behaviour suite for this engine is internal/chat's TestMemoryEngine;
// these tests pin what the suite cannot see from outside.

func TestTrimKeepsEventsAfterTheCut(t *testing.T) {
	s := New(2)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, err := s.AppendMessage(ctx, chat.Message{Channel: "c", Text: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.DeleteMessage(ctx, "c", 3, time.Now()); err != nil {
		t.Fatal(err)
	}
	c := s.channels["c"]
	var got []string
	for _, ev := range c.log {
		got = append(got, ev.Cursor.String())
	}
	if len(got) != 3 || got[0] != "2" || got[2] != "3-1" || c.trimmed != 1 {
		t.Fatalf("log %v trimmed %d", got, c.trimmed)
	}
}

func TestEarlierEventsDoNotChangeAfterDelete(t *testing.T) {
	s := New(10)
	ctx := context.Background()
	if _, err := s.AppendMessage(ctx, chat.Message{Channel: "c", Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	evs, _ := s.ReadEvents(ctx, "c", chat.Cursor{}, 10, 0)
	if _, err := s.DeleteMessage(ctx, "c", 1, time.Now()); err != nil {
		t.Fatal(err)
	}
	if evs[0].Message.Text != "hello" || evs[0].Message.Deleted {
		t.Fatalf("a delivered event changed: %+v", evs[0].Message)
	}
}

func TestGatesAreAllOrNothing(t *testing.T) {
	s := New(10)
	ctx := context.Background()
	now := time.Unix(1000, 0)
	a := chat.Gate{Channel: "c", Key: "a", For: 10 * time.Second}
	b := chat.Gate{Channel: "c", Key: "b", For: 30 * time.Second}
	if w, _ := s.Acquire(ctx, now, a); w != 0 {
		t.Fatal(w)
	}
	// a is closed, so b must not be taken either.
	if w, _ := s.Acquire(ctx, now.Add(time.Second), a, b); w != 9*time.Second {
		t.Fatalf("wait %v", w)
	}
	if w, _ := s.Acquire(ctx, now.Add(time.Second), b); w != 0 {
		t.Fatalf("b was taken by the failed attempt: %v", w)
	}
}
