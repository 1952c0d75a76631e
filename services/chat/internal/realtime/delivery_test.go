package realtime

import (
	"context"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver/testkit"
	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/memory"
)

// testRoom is a started room at pos with subscribers a and b, over log.
func testRoom(t *testing.T, log chat.EventLog, pos chat.Cursor) (*room, *conn, *conn) {
	t.Helper()
	h := &Hub{log: log, opts: Options{QueueSize: 1000, Batch: 64, ReadLimit: 100}, metrics: newMetrics(), logger: testkit.Logger()}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	t.Cleanup(h.cancel)
	r := newRoom(h, "c")
	r.started, r.pos = true, pos
	a, b := testConn(1000, 64), testConn(1000, 64)
	a.hub, b.hub = h, h
	r.subs[a], r.subs[b] = struct{}{}, struct{}{}
	return r, a, b
}

func notices(evs []chat.Event, prev chat.Cursor) []chat.Notice {
	out := make([]chat.Notice, len(evs))
	for i := range evs {
		out[i] = chat.Notice{Channel: "c", Prev: prev, Event: &evs[i]}
		prev = evs[i].Cursor
	}
	return out
}

// queued waits until c holds n events and returns its frames.
func queued(t *testing.T, c *conn, n int) []*frame {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		got, q := c.queued, append([]*frame(nil), c.queue[c.head:]...)
		c.mu.Unlock()
		if got >= n {
			return q
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events queued, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLoneNoticeIsDeliveredWithoutReadingTheLog: a notice that follows
// the room's position is fanned out from the notice itself, at once: the
// room has no log to read (nil), so any read or wait would fail the test.
func TestLoneNoticeIsDeliveredWithoutReadingTheLog(t *testing.T) {
	r, a, b := testRoom(t, nil, chat.Cursor{ID: 4})
	r.deliver(notices(events(5, 5), chat.Cursor{ID: 4})[0])
	for _, c := range []*conn{a, b} {
		q := queued(t, c, 1)
		if len(q) != 1 || q[0].cursors[0] != (chat.Cursor{ID: 5}) {
			t.Fatalf("queue %v, want event 5 alone", q)
		}
	}
	r.mu.Lock()
	pos := r.pos
	r.mu.Unlock()
	if pos != (chat.Cursor{ID: 5}) {
		t.Fatalf("position %v, want 5", pos)
	}
}

// TestNoticesThatPileUpGoOutTogether: notices that arrive while the room's
// worker is busy (here: before it may start) go out as one frame, encoded
// once and shared by every subscriber.
func TestNoticesThatPileUpGoOutTogether(t *testing.T) {
	r, a, b := testRoom(t, nil, chat.Cursor{ID: 0})
	r.started = false
	for _, n := range notices(events(1, 40), chat.Cursor{}) {
		r.deliver(n)
	}
	r.mu.Lock()
	r.started, r.working = true, true
	r.mu.Unlock()
	r.work()
	qa, qb := queued(t, a, 40), queued(t, b, 40)
	if len(qa) != 1 || len(qb) != 1 || qa[0] != qb[0] || qa[0].events() != 40 {
		t.Fatalf("queues of %d and %d frames; want one shared frame of 40 events", len(qa), len(qb))
	}
}

// TestGapInNoticesIsFilledFromTheLog: a notice whose predecessor is not
// the last event delivered (notices were lost, e.g. while the feed
// reconnected) makes the room read the log: every event arrives once, in
// order; later notices for events already read are skipped.
func TestGapInNoticesIsFilledFromTheLog(t *testing.T) {
	store := memory.New(100)
	ctx := context.Background()
	for i := 0; i < 6; i++ {
		if _, err := store.AppendMessage(ctx, chat.Message{Channel: "c", Text: "m", CreatedAt: time.Now()}, chat.Once{}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := store.ReadEvents(ctx, "c", chat.Cursor{}, 100)
	if err != nil || len(all) != 6 {
		t.Fatalf("log: %d events, %v", len(all), err)
	}
	r, a, _ := testRoom(t, store, chat.Cursor{ID: 1})
	ns := notices(all, chat.Cursor{})
	// Notices of 2 and 3 are lost; 4 arrives, then 5 and 6 (already read
	// by then), and a notice without an event.
	for _, n := range append(ns[3:], chat.Notice{Channel: "c"}) {
		r.deliver(n)
	}
	var got []chat.Cursor
	for _, f := range queued(t, a, 5) {
		got = append(got, f.cursors...)
	}
	time.Sleep(50 * time.Millisecond) // a duplicate would be queued by now
	a.mu.Lock()
	extra := a.queued
	a.mu.Unlock()
	if len(got) != 5 || extra != 5 {
		t.Fatalf("delivered %v (%d queued), want 2..6 once", got, extra)
	}
	for i, c := range got {
		if !c.At(chat.Cursor{ID: int64(i + 2)}) {
			t.Fatalf("delivered %v, want 2..6 in order", got)
		}
	}
}

// TestChain: which notices apply directly and when the log must be read.
func TestChain(t *testing.T) {
	evs := events(1, 3)
	ns := notices(evs, chat.Cursor{})
	if got, gap := chain(ns, chat.Cursor{}); len(got) != 3 || gap {
		t.Fatalf("contiguous: %d events, gap %v", len(got), gap)
	}
	// Events at or before pos may be a reset store's: the log decides.
	if got, gap := chain(ns, chat.Cursor{ID: 2}); len(got) != 1 || got[0].Cursor.ID != 3 || !gap {
		t.Fatalf("partly delivered: %v, gap %v", got, gap)
	}
	if got, gap := chain(ns[1:], chat.Cursor{}); len(got) != 0 || !gap {
		t.Fatalf("missing first: %v, gap %v", got, gap)
	}
	if _, gap := chain([]chat.Notice{{Channel: "c"}}, chat.Cursor{}); !gap {
		t.Fatal("a notice without an event must read the log")
	}
}

// slowHead is the memory engine with a Head that waits for release.
type slowHead struct {
	*memory.Store
	release chan struct{}
}

func (s slowHead) Head(ctx context.Context, channel string) (chat.Cursor, error) {
	select {
	case <-s.release:
	case <-ctx.Done():
		return chat.Cursor{}, ctx.Err()
	}
	return s.Store.Head(ctx, channel)
}

// TestRoomBeingJoinedIsNotStoppedAsIdle: a room whose start outlasts
// RoomLinger (a slow store) is not stopped under a connection waiting to
// join it; the join completes once the store answers.
func TestRoomBeingJoinedIsNotStoppedAsIdle(t *testing.T) {
	store := slowHead{Store: memory.New(10), release: make(chan struct{})}
	svc := chat.NewService(store, chat.Options{PublicRead: true, Logger: testkit.Logger()})
	h, err := NewHub(svc, Sources{Feed: store, Users: store}, Options{RoomLinger: time.Millisecond, Logger: testkit.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	joined := make(chan error, 1)
	go func() {
		_, _, err := h.join(context.Background(), "c", &conn{})
		joined <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.mu.RLock()
		r := h.rooms["c"]
		h.mu.RUnlock()
		if r != nil && r.joining.Load() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the join never reached the room")
		}
		time.Sleep(time.Millisecond)
	}
	h.sweep(time.Now().Add(time.Hour)) // the room is well past its linger
	h.mu.RLock()
	r := h.rooms["c"]
	h.mu.RUnlock()
	if r == nil || r.ctx.Err() != nil {
		t.Fatal("a room being joined was stopped as idle")
	}
	close(store.release)
	if err := <-joined; err != nil {
		t.Fatalf("join: %v", err)
	}
}
