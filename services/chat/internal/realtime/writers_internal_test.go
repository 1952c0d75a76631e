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
