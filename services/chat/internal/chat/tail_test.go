package chat_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/libs/apiserver/testkit"
	"github.com/apistack/platform/services/chat/internal/chat"
)

func TestMain(m *testing.M) {
	// go-redis logs every failed dial; the tests that stop Redis expect them.
	testkit.QuietRedis()
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
			if _, err = en.svc.Send(ctx, chat.Held(v), chat.SendInput{Message: fmt.Sprint("m", i)}); chat.KindOf(err) != chat.KindUnavailable {
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

// tailBatches runs chat.Tail with opts and returns the batches it hands over.
func tailBatches(t *testing.T, log chat.EventLog, opts chat.TailOptions) <-chan []chat.Event {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan []chat.Event, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = chat.Tail(ctx, log, "general", chat.Cursor{}, func(evs []chat.Event) error {
			out <- evs
			return nil
		}, opts)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return out
}

func nextBatch(t *testing.T, batches <-chan []chat.Event) []chat.Event {
	t.Helper()
	select {
	case b := <-batches:
		return b
	case <-time.After(20 * time.Second):
		t.Fatal("no batch in time")
		return nil
	}
}

// wantBatch checks that batch holds messages from..to, in order.
func wantBatch(t *testing.T, batch []chat.Event, from, to int) {
	t.Helper()
	if len(batch) != to-from+1 {
		t.Fatalf("batch of %d events, want m%d..m%d", len(batch), from, to)
	}
	for i, ev := range batch {
		if ev.Cursor.ID != int64(from+i) || ev.Message.Text != fmt.Sprint("m", from+i) {
			t.Fatalf("batch[%d] = %+v, want m%d", i, ev, from+i)
		}
	}
}

// TestTailCoalescesEventsOfOneWindow: the first event after a quiet spell
// is handed over at once, alone; those appended during the pause that
// follows come back together, in order, each once.
func TestTailCoalescesEventsOfOneWindow(t *testing.T) {
	en := newEnv(t, memoryEngine(), 1000, true)
	v := en.users[chat.RoleViewer]
	const window = time.Second
	batches := tailBatches(t, en.svc.Events(), chat.TailOptions{Block: 100 * time.Millisecond, Coalesce: window})
	time.Sleep(50 * time.Millisecond) // the tail is blocked on an empty log
	start := time.Now()
	en.send(v, "m1")
	wantBatch(t, nextBatch(t, batches), 1, 1)
	if d := time.Since(start); d >= window {
		t.Errorf("a lone event waited %s: the window must not delay it", d)
	}
	for i := 2; i <= 6; i++ {
		en.send(v, fmt.Sprint("m", i))
	}
	wantBatch(t, nextBatch(t, batches), 2, 6)
	select {
	case b := <-batches:
		t.Fatalf("extra batch %+v", b)
	case <-time.After(window + window/2):
	}
}

// TestTailReadsOnAfterAFullBatch: a full batch means more is waiting, so
// the pause does not apply and a backlog drains at read speed.
func TestTailReadsOnAfterAFullBatch(t *testing.T) {
	en := newEnv(t, memoryEngine(), 1000, true)
	v := en.users[chat.RoleViewer]
	for i := 1; i <= 7; i++ {
		en.send(v, fmt.Sprint("m", i))
	}
	start := time.Now()
	batches := tailBatches(t, en.svc.Events(), chat.TailOptions{Limit: 3, Coalesce: time.Minute})
	wantBatch(t, nextBatch(t, batches), 1, 3)
	wantBatch(t, nextBatch(t, batches), 4, 6)
	wantBatch(t, nextBatch(t, batches), 7, 7)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("backlog took %s: full batches must not pause", d)
	}
}
