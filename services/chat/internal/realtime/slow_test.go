package realtime_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/realtime"
)

// TestSlowConsumerIsDroppedWithoutSlowingOthers: a subscriber that never
// reads fills its socket, then its queue, and is dropped; a reading
// subscriber gets every message meanwhile.
func TestSlowConsumerIsDroppedWithoutSlowingOthers(t *testing.T) {
	r := startReplica(t, replicaConfig{publicRead: true, opts: realtime.Options{QueueSize: 64}}, testPrefix())
	fast := dial(t, r.base, "channel=slow", nil)
	fast.hello()
	// A client that never reads: the server's writes back up.
	stuck := rawStuckClient(t, r.base, "channel=slow")
	defer stuck.Close()
	deadline := time.Now().Add(wait)
	for r.hub.Connections() != 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	const n = 6000
	text := strings.Repeat("y", 450)
	// Bursts smaller than the queue, each waited for by the reading
	// subscriber: only the stuck one can fall behind.
	var ms []chat.Message
	for len(ms) < n {
		for i := 0; i < 50; i++ {
			if _, err := r.svc.Send(context.Background(), chat.Held(r.admin), chat.SendInput{Channel: "slow", Message: text}); err != nil {
				t.Fatal(err)
			}
		}
		ms = append(ms, fast.messages(50)...)
	}
	if ms[n-1].ID != n {
		t.Fatalf("fast subscriber's last id %d", ms[n-1].ID)
	}
	for r.hub.Connections() > 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := r.hub.Connections(); got != 1 {
		t.Fatalf("connections %d: the stuck subscriber was not dropped", got)
	}
}

// TestSlowConsumerIsCountedOnce: a client that sends pings and never reads
// its pongs overflows its queue and is closed as a slow consumer; the
// pings it keeps sending while the close runs do not count it again.
// chat_ws_slow_consumers_total counts sockets: before, it counted each
// answer that found the queue full (hundreds for one socket).
func TestSlowConsumerIsCountedOnce(t *testing.T) {
	r := startReplica(t, replicaConfig{publicRead: true, opts: realtime.Options{QueueSize: 16}}, testPrefix())
	stuck := rawStuckClient(t, r.base, "channel=pings")
	defer stuck.Close()
	// One frame holds as many pings as fit in 4 KiB, one per line.
	frame := maskedText(bytes.Repeat([]byte(`{"type":"ping"}`+"\n"), 250))
	flooded := make(chan int)
	go func() {
		n := 0
		deadline := time.Now().Add(wait)
		// Until the server drops the connection (its close handshake
		// waits for this client, which never reads, then gives up).
		for time.Now().Before(deadline) {
			_ = stuck.SetWriteDeadline(time.Now().Add(wait))
			if _, err := stuck.Write(frame); err != nil {
				break
			}
			n++
		}
		flooded <- n
	}()
	n := <-flooded
	deadline := time.Now().Add(wait)
	for r.hub.Connections() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := r.hub.Connections(); got != 0 {
		t.Fatalf("connections %d: the flooder was not dropped (%d frames written)", got, n)
	}
	if got := metric(t, r.base, "chat_ws_slow_consumers_total"); got != 1 {
		t.Fatalf("chat_ws_slow_consumers_total = %v for one slow socket (%d frames of pings written), want 1", got, n)
	}
}

// maskedText is a client's text frame (RFC 6455 §5.2): FIN, masked with a
// zero key, so the payload goes as it is.
func maskedText(payload []byte) []byte {
	f := []byte{0x81}
	switch n := len(payload); {
	case n < 126:
		f = append(f, 0x80|byte(n))
	default:
		f = append(f, 0x80|126, byte(n>>8), byte(n))
	}
	f = append(f, 0, 0, 0, 0)
	return append(f, payload...)
}
