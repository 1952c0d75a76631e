package chat_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/services/chat/internal/chat"
)

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	// go-redis logs every failed dial; the tests that stop Redis expect them.
	redis.SetLogger(quietLogger{})
	os.Exit(m.Run())
}

// tail runs chat.Tail in the background and returns the events it sees.
func tail(t *testing.T, log chat.EventLog, after chat.Cursor) (<-chan chat.Event, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan chat.Event, 100)
	done := make(chan error, 1)
	go func() {
		done <- chat.Tail(ctx, log, "general", after, func(evs []chat.Event) error {
			for _, ev := range evs {
				out <- ev
			}
			return nil
		}, chat.TailOptions{Block: 200 * time.Millisecond, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	}()
	var once sync.Once
	var err error
	stop := func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return out, stop
}

func expectTexts(t *testing.T, evs <-chan chat.Event, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		select {
		case ev := <-evs:
			if ev.Type != chat.EventMessage || ev.Message.Text != fmt.Sprint("m", i) || ev.Cursor.ID != int64(i) {
				t.Fatalf("event %d = %+v", i, ev)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("event %d never arrived", i)
		}
	}
}

func testTail(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	v := en.users[chat.RoleViewer]
	en.send(v, "m1")
	evs, stop := tail(t, en.svc.Events(), chat.Cursor{})
	for i := 2; i <= 6; i++ {
		en.send(v, fmt.Sprint("m", i))
	}
	expectTexts(t, evs, 1, 6)
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("stop = %v", err)
	}
	select {
	case ev := <-evs:
		t.Fatalf("duplicate %+v", ev)
	default:
	}
	// A position outside the window ends the tail with HistoryGone.
	err := chat.Tail(en.ctx, en.svc.Events(), "general", chat.Cursor{ID: 50}, func([]chat.Event) error { return nil }, chat.TailOptions{})
	wantKind(t, err, chat.KindHistoryGone)
}

func TestMemoryTail(t *testing.T) { testTail(t, memoryEngine()) }

func TestRedisTail(t *testing.T) {
	srv := redistest.Start(t)
	testTail(t, redisEngine(srv))
}

// TestRedisTailSurvivesRestart stops and restarts Redis under a tailing
// reader: it resumes from its last cursor and misses nothing stored.
func TestRedisTailSurvivesRestart(t *testing.T) {
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	en := newEnv(t, redisEngine(srv), 1000, true)
	v := en.users[chat.RoleViewer]
	evs, stop := tail(t, en.svc.Events(), chat.Cursor{})
	for i := 1; i <= 3; i++ {
		en.send(v, fmt.Sprint("m", i))
	}
	expectTexts(t, evs, 1, 3)
	srv.Restart()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 4; i <= 6; i++ {
		// The first command after the restart may meet a dead pooled
		// connection; a 503 is then the right answer, and nothing was stored.
		var err error
		for attempt := 0; attempt < 20; attempt++ {
			if _, err = en.svc.Send(ctx, v, chat.SendInput{Message: fmt.Sprint("m", i)}); chat.KindOf(err) != chat.KindUnavailable {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	expectTexts(t, evs, 4, 6)
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("stop = %v", err)
	}
}
