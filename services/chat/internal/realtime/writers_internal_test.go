package realtime

import "testing"

// TestConnRingKeepsOrderAcrossGrowth: the ready FIFO hands connections
// out in the order they came, also when it grows while wrapped around.
func TestConnRingKeepsOrderAcrossGrowth(t *testing.T) {
	var q connRing
	conns := make([]*conn, 100)
	for i := range conns {
		conns[i] = &conn{}
	}
	in, out := 0, 0
	// Push 10, pop 7, repeatedly: the head moves around the buffer while
	// it fills up and grows.
	for in < len(conns) {
		for k := 0; k < 10 && in < len(conns); k++ {
			q.push(conns[in])
			in++
		}
		for k := 0; k < 7 && q.len() > 0; k++ {
			if c := q.pop(); c != conns[out] {
				t.Fatalf("pop %d: got another connection than the one pushed %d-th", out, out)
			}
			out++
		}
	}
	for q.len() > 0 {
		if c := q.pop(); c != conns[out] {
			t.Fatalf("pop %d out of order", out)
		}
		out++
	}
	if out != len(conns) {
		t.Fatalf("popped %d of %d", out, len(conns))
	}
	for i, c := range q.buf {
		if c != nil {
			t.Fatalf("slot %d still holds a popped connection", i)
		}
	}
}

// TestSettlePacesOnlyAFastBacklog: a write counts as busy when it carried
// several events at a rate that fills a paced write with busyEvents. The
// pairs the feed hands over at 100 messages a second (a write every 20 ms)
// never pace a socket, which would add up to a pace of latency to each;
// the same pairs every 2 ms (the writers behind at saturation) do, and a
// paced write that still carries many stays paced.
func TestSettlePacesOnlyAFastBacklog(t *testing.T) {
	const pace = 16_000_000 // ns
	writes := func(events int, interval int64) int {
		c := &conn{hub: &Hub{opts: Options{Batch: 64}, writers: &writers{pace: pace}}}
		for i := range 6 {
			c.wrotePrev, c.wrote = c.wrote, int64(i+1)*interval
			c.settle(events)
		}
		return c.busy
	}
	for _, tc := range []struct {
		name     string
		events   int
		interval int64
		paced    bool
	}{
		{"pairs at 100 messages a second", 2, 20_000_000, false},
		{"threes at 100 messages a second", 3, 30_000_000, false},
		{"pairs every 2 ms", 2, 2_000_000, true},
		{"a paced write of 16 ms of saturation", 16, pace, true},
		{"single events however fast", 1, 100_000, false},
		{"full frames", 64, 1_000_000, false},
	} {
		if busy := writes(tc.events, tc.interval); (busy >= busyTurns) != tc.paced {
			t.Errorf("%s: %d busy writes in a row, paced %v, want paced %v", tc.name, busy, busy >= busyTurns, tc.paced)
		}
	}
}
