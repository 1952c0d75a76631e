//go:build !race

package realtime_test

import (
	"bufio"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apistack/platform/services/chat/internal/realtime"
)

// TestIdleSocketMemory holds idle sockets on a replica and bounds the heap each one
// keeps: the resident memory of 100,000 idle sockets on one replica depends on it
// (docs/benchmarks.md), twice over, as the collector lets the heap grow to twice
// what is live. The clients are raw TCP connections that did a handshake, so that
// what the test process holds per socket is the server's side. The goroutine's
// stack (4 KB: coder/websocket's read path does not fit in 2 KB) is logged, not
// bounded: when the runtime shrinks it is not this code's to decide. Without the
// race detector, which makes everything larger (make test runs it so).
func TestIdleSocketMemory(t *testing.T) {
	const n = 400
	// About 3.5 KB: coder/websocket's connection (1.4 KB), the socket, this
	// package's conn, wsbuf's buffers. net/http's 8 KB of hijacked buffers
	// alone would break it.
	const limit = 5 << 10
	r := startReplica(t, replicaConfig{publicRead: true, opts: realtime.Options{Limits: &realtime.Limits{}}}, testPrefix())
	addr := strings.TrimPrefix(r.base, "http://")
	// A first socket makes the room and the feed, which are not a socket's cost.
	conns := []net.Conn{handshake(t, addr)}
	settle := func() runtime.MemStats {
		// The janitor runs each second (it drops drained queues).
		time.Sleep(2500 * time.Millisecond)
		var ms runtime.MemStats
		for range 3 {
			runtime.GC()
		}
		runtime.ReadMemStats(&ms)
		return ms
	}
	before := settle()
	for range n {
		conns = append(conns, handshake(t, addr))
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	deadline := time.Now().Add(wait)
	for r.hub.Connections() < n+1 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := r.hub.Connections(); got != n+1 {
		t.Fatalf("%d sockets open, want %d", got, n+1)
	}
	after := settle()
	heap := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	stack := (int64(after.StackInuse) - int64(before.StackInuse)) / n
	t.Logf("per idle socket: %d B of heap, %d B of stack; %d parked", heap, stack, r.hub.Parked())
	if heap > limit {
		t.Fatalf("an idle socket keeps %d B of heap, over %d B", heap, limit)
	}
	// No goroutine per idle socket where the poller runs (Linux): a reader
	// blocked in coder/websocket's Read held a 4 KB stack.
	if runtime.GOOS == "linux" {
		if p := r.hub.Parked(); p != n+1 {
			t.Fatalf("%d of %d idle sockets parked", p, n+1)
		}
		if stack > 1<<10 {
			t.Fatalf("an idle socket keeps %d B of stack: a goroutine each", stack)
		}
	}
}

// handshake opens a WebSocket on channel "mem" and reads the 101 answer; the
// frames that follow stay unread in the socket's buffers.
func handshake(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(wait))
	_, err = c.Write([]byte("GET /api/v1/ws?channel=mem HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 16), nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %v, %v", resp, err)
	}
	c.SetDeadline(time.Time{})
	return c
}
