package realtime

import (
	"strings"
	"testing"

	"github.com/apistack/platform/services/chat/internal/chat"
)

func events(from, to int64) []chat.Event {
	var out []chat.Event
	for id := from; id <= to; id++ {
		out = append(out, chat.Event{Type: chat.EventMessage, Channel: "c", Cursor: chat.Cursor{ID: id},
			Message: &chat.Message{ID: id, Channel: "c", Text: "m"}})
	}
	return out
}

// testConn is a connection held as during its setup (awake, not on a
// pool): the tests call next themselves.
func testConn(queue, batch int) *conn {
	return &conn{hub: &Hub{opts: Options{QueueSize: queue, Batch: batch}, metrics: newMetrics()}, awake: true}
}

// TestWriterBatchesUpTo16AndSkipsWhatTheClientHas: a subscriber that is
// behind gets frames of at most Batch events; events up to its last
// cursor (written by a recovery) are skipped, even inside a frame.
func TestWriterBatchesUpTo16AndSkipsWhatTheClientHas(t *testing.T) {
	c := testConn(1000, 16)
	var all []*frame
	for id := int64(1); id <= 40; id += 5 {
		fs, err := encodeEvents(events(id, id+4), 16)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, fs...)
	}
	if !c.push(all, 40) {
		t.Fatal("queue overflowed")
	}
	c.last = chat.Cursor{ID: 3}
	var sizes []int
	next := int64(4)
	for {
		data, n, _ := c.next()
		if data == nil {
			break
		}
		lines := strings.Split(string(data), "\n")
		if len(lines) != n {
			t.Fatalf("frame has %d lines for %d events", len(lines), n)
		}
		for _, l := range lines {
			if !strings.Contains(l, `"cursor":"`+chat.Cursor{ID: next}.String()+`"`) {
				t.Fatalf("line %q, want cursor %d", l, next)
			}
			next++
		}
		sizes = append(sizes, n)
	}
	// 37 events left: 2 (rest of the first frame) + 5+5 = 12, +5 would be 17.
	want := []int{12, 15, 10}
	if len(sizes) != len(want) || sizes[0] != want[0] || sizes[1] != want[1] || sizes[2] != want[2] {
		t.Fatalf("frame sizes %v, want %v", sizes, want)
	}
	if c.queued != 0 {
		t.Fatalf("queued %d after draining", c.queued)
	}
}

// TestOneFrameIsTheSharedBytes: a caught-up subscriber writes the frame
// the reader encoded, not a copy.
func TestOneFrameIsTheSharedBytes(t *testing.T) {
	fs, err := encodeEvents(events(1, 1), 16)
	if err != nil {
		t.Fatal(err)
	}
	a, b := testConn(10, 16), testConn(10, 16)
	a.push(fs, 1)
	b.push(fs, 1)
	da, _, _ := a.next()
	db, _, _ := b.next()
	if &da[0] != &fs[0].data[0] || &db[0] != &fs[0].data[0] {
		t.Fatal("subscribers got copies of the encoded frame")
	}
}

func TestQueueOverflowRefusesThePush(t *testing.T) {
	c := testConn(8, 16)
	fs, _ := encodeEvents(events(1, 5), 16)
	if !c.push(fs, 5) {
		t.Fatal("first push refused")
	}
	fs, _ = encodeEvents(events(6, 10), 16)
	if c.push(fs, 5) {
		t.Fatal("push beyond the queue accepted")
	}
	if !c.closing {
		t.Fatal("an overflowing connection is not marked closing")
	}
}

// TestFanoutSharesOneFrameForABatch: the events of one read are encoded
// once, into one frame of up to Batch events, and every subscriber's
// queue holds that very frame; a subscriber that keeps up writes its bytes
// as they are, without a copy.
func TestFanoutSharesOneFrameForABatch(t *testing.T) {
	h := &Hub{opts: Options{QueueSize: 100, Batch: 16}, metrics: newMetrics()}
	r := &room{hub: h, subs: map[*conn]struct{}{}}
	a, b := testConn(100, 16), testConn(100, 16)
	a.hub, b.hub = h, h
	r.subs[a], r.subs[b] = struct{}{}, struct{}{}
	if err := r.fanout(events(1, 5)); err != nil {
		t.Fatal(err)
	}
	if len(a.queue) != 1 || len(b.queue) != 1 || a.queue[0] != b.queue[0] {
		t.Fatalf("queues %v and %v: want the same single frame", a.queue, b.queue)
	}
	shared := a.queue[0].data
	for _, c := range []*conn{a, b} {
		data, n, buf := c.next()
		if n != 5 || buf != nil || &data[0] != &shared[0] {
			t.Fatalf("wrote %d events (pooled copy %v); want the shared frame of 5", n, buf != nil)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if !strings.Contains(line, `"cursor":"`+chat.Cursor{ID: int64(i + 1)}.String()+`"`) {
				t.Fatalf("line %d = %q", i, line)
			}
		}
	}
	if r.pos != (chat.Cursor{ID: 5}) {
		t.Fatalf("room position %v, want 5", r.pos)
	}
}
