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
		if _, err := s.AppendMessage(ctx, chat.Message{Channel: "c", Text: "x"}, chat.Once{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.DeleteMessage(ctx, "c", 3, time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	c := s.channels["c"]
	var got []string
	for _, ev := range c.log {
		pos := ev.Cursor
		pos.Epoch = 0
		got = append(got, pos.String())
	}
	if len(got) != 3 || got[0] != "2" || got[2] != "3-1" || c.trimmed != (chat.Cursor{ID: 1}) {
		t.Fatalf("log %v trimmed %v", got, c.trimmed)
	}
}

func TestEarlierEventsDoNotChangeAfterDelete(t *testing.T) {
	s := New(10)
	ctx := context.Background()
	if _, err := s.AppendMessage(ctx, chat.Message{Channel: "c", Text: "hello"}, chat.Once{}); err != nil {
		t.Fatal(err)
	}
	evs, _ := s.ReadEvents(ctx, "c", chat.Cursor{}, 10)
	if _, err := s.DeleteMessage(ctx, "c", 1, time.Now(), nil); err != nil {
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

// TestReadingCreatesNoChannel: readers naming channels that were never
// written (an anonymous subscriber can name any) leave nothing behind,
// and such a channel reads its first message once it is written.
func TestReadingCreatesNoChannel(t *testing.T) {
	s := New(10)
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		name := "never" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if _, err := s.Head(ctx, name); err != nil {
			t.Fatal(err)
		}
		if ok, _ := s.Recoverable(ctx, name, chat.Cursor{}); !ok {
			t.Fatal("the start of an empty channel is recoverable")
		}
		if evs, err := s.ReadEvents(ctx, name, chat.Cursor{}, 10); err != nil || len(evs) != 0 {
			t.Fatalf("read %v %v", evs, err)
		}
	}
	if n := len(s.channels); n != 0 {
		t.Fatalf("reads created %d channels", n)
	}
	if _, err := s.AppendMessage(ctx, chat.Message{Channel: "late", Text: "first"}, chat.Once{}); err != nil {
		t.Fatal(err)
	}
	if evs, err := s.ReadEvents(ctx, "late", chat.Cursor{}, 10); err != nil || len(evs) != 1 || evs[0].Message.Text != "first" {
		t.Fatalf("the first message of a new channel: %+v %v", evs, err)
	}
}
