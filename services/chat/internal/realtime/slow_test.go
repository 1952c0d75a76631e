package realtime_test

import (
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
