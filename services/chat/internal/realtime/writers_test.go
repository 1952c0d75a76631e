package realtime_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/realtime"
)

// TestOneWriterIsNotHeldUpByStuckPeers: with a single writer, 20
// subscribers that never read fill their sockets and block the writes to
// them; the pool replaces each stuck writer, so 50 reading subscribers
// get every event of every burst, in order, and the stuck ones are closed
// as too slow (4008) or for a stuck write, as with a writer per socket.
// Without the replacement the one writer would wait on each stuck socket
// until its close: minutes for 20, far past the test's wait.
func TestOneWriterIsNotHeldUpByStuckPeers(t *testing.T) {
	r := startReplica(t, replicaConfig{publicRead: true, opts: realtime.Options{
		Writers: 1, QueueSize: 64, Limits: &realtime.Limits{}}}, testPrefix())
	const stuckN, fastN = 20, 50
	for i := 0; i < stuckN; i++ {
		c := rawStuckClient(t, r.base, "channel=pool")
		t.Cleanup(func() { _ = c.Close() })
	}
	fast := make([]*client, fastN)
	for i := range fast {
		fast[i] = dial(t, r.base, "channel=pool", nil)
		fast[i].hello()
	}
	waitConnections(t, r, stuckN+fastN)
	text := strings.Repeat("z", 450)
	// Bursts of 50, each read by every reading subscriber before the next
	// (so only the stuck ones can overflow their queue of 64), until the
	// stuck ones are gone, and a few bursts more.
	next := int64(1)
	for burst := 0; burst < 400; burst++ {
		for i := 0; i < 50; i++ {
			if _, err := r.svc.Send(context.Background(), chat.Held(r.admin), chat.SendInput{Channel: "pool", Message: text}); err != nil {
				t.Fatal(err)
			}
		}
		for i, c := range fast {
			for j, m := range c.messages(50) {
				if m.ID != next+int64(j) {
					t.Fatalf("reading subscriber %d: message %d of burst %d has id %d, want %d", i, j, burst, m.ID, next+int64(j))
				}
			}
		}
		next += 50
		if r.hub.Connections() == fastN && burst >= 10 {
			break
		}
	}
	t.Logf("%d messages sent", next-1)
	if got := r.hub.Connections(); got != fastN {
		t.Fatalf("%d connections after %d messages: the %d stuck subscribers were not all closed", got, next-1, stuckN)
	}
	if closed := metric(t, r.base, "chat_ws_slow_consumers_total") + metric(t, r.base, "chat_ws_dead_peers_total"); closed < stuckN {
		t.Fatalf("%v slow or dead closes, want at least %d", closed, stuckN)
	}
	if n := metric(t, r.base, "chat_ws_stuck_writes_total"); n < 1 {
		t.Fatalf("chat_ws_stuck_writes_total %v: no write was ever stuck, the test did not block a writer", n)
	}
	// The runners started in place of stuck ones exit once their writes
	// end: the pool is back to its one writer.
	deadline := time.Now().Add(wait)
	for metric(t, r.base, "chat_ws_writers") > 1 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := metric(t, r.base, "chat_ws_writers"); n != 1 {
		t.Fatalf("chat_ws_writers %v after the stuck sockets closed, want 1", n)
	}
}

// TestIdleSocketsCostNoWriterGoroutine: an idle socket costs no goroutine
// where the hub parks it in its poller (Linux), its reader elsewhere, and
// nothing more (the writers are the hub's, not one per socket, which made
// two).
func TestIdleSocketsCostNoWriterGoroutine(t *testing.T) {
	r := startReplica(t, replicaConfig{publicRead: true, opts: realtime.Options{Limits: &realtime.Limits{}}}, testPrefix())
	// Warm up: the room, its presence report and the pool's runners exist
	// before the count starts.
	for i := 0; i < 10; i++ {
		rawGreetedClient(t, r.base, "channel=idle")
	}
	before := settledGoroutines()
	const n = 200
	for i := 0; i < n; i++ {
		rawGreetedClient(t, r.base, "channel=idle")
	}
	waitConnections(t, r, n+10)
	after := settledGoroutines()
	perSocket := float64(after-before) / n
	t.Logf("goroutines: %d before, %d after %d idle sockets: %.2f per socket; %d parked", before, after, n, perSocket, r.hub.Parked())
	want, served := 1.0, n // a reader each
	if runtime.GOOS == "linux" {
		want, served = 0, r.hub.Parked()-10
	}
	if perSocket > want+0.25 {
		t.Fatalf("%.2f goroutines per idle socket (%d -> %d), want about %.0f", perSocket, before, after, want)
	}
	if perSocket < want-0.25 || served != n {
		t.Fatalf("%.2f goroutines per idle socket, %d parked: the sockets are not being served", perSocket, r.hub.Parked())
	}
}

func waitConnections(t *testing.T, r *replica, n int) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for r.hub.Connections() != n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := r.hub.Connections(); got != n {
		t.Fatalf("%d connections, want %d", got, n)
	}
}

// settledGoroutines is runtime.NumGoroutine once it has not changed for
// 300 ms (presence reports and writes after a join are over).
func settledGoroutines() int {
	last, same := runtime.NumGoroutine(), 0
	for deadline := time.Now().Add(wait); same < 3 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		n := runtime.NumGoroutine()
		if n == last {
			same++
		} else {
			last, same = n, 0
		}
	}
	return last
}

// rawGreetedClient is a WebSocket subscriber over plain TCP, with no
// goroutine of its own: it reads until the greeting (hello and presence)
// has arrived, then nothing more.
func rawGreetedClient(t *testing.T, base, query string) net.Conn {
	t.Helper()
	addr := strings.TrimPrefix(base, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	req := "GET " + realtime.WSPath + "?" + query + " HTTP/1.1\r\nHost: " + addr +
		"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %v %v", resp, err)
	}
	var seen []byte
	buf := make([]byte, 512)
	for !bytes.Contains(seen, []byte(`"type":"presence"`)) {
		k, err := br.Read(buf)
		if k == 0 {
			t.Fatalf("waiting for the greeting (have %q): %v", seen, err)
		}
		seen = append(seen, buf[:k]...)
	}
	_ = conn.SetReadDeadline(time.Time{})
	return conn
}

// metric sums the samples of a counter (all its labels) on base's /metrics.
func metric(t *testing.T, base, name string) float64 {
	t.Helper()
	sum, found := metricSum(t, base, name)
	if !found {
		t.Fatalf("no %s in /metrics", name)
	}
	return sum
}

// metricSum is metric for a counter vector, which has no sample until a
// label is first counted: found is false until then.
func metricSum(t *testing.T, base, name string) (sum float64, found bool) {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || !(strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, "{")) {
			continue
		}
		v, err := strconv.ParseFloat(rest[strings.LastIndexByte(rest, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum += v
		found = true
	}
	return sum, found
}
