package realtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/realtime"
)

// TestBackloggedSocketsArePaced: one writer for 200 subscribers and messages
// sent in bursts of 5 every millisecond or so: events reach
// each socket faster than the writer goes round. Paced, each socket is then
// written at most once per Pace, a frame carrying everything that came
// meanwhile; unpaced (the same run on a replica with Pace -1), the writer
// goes round as fast as it can and writes each socket every few
// milliseconds. Both get every message once, in order. Batch and QueueSize
// are large so that neither full frames nor overflows decide the count.
func TestBackloggedSocketsArePaced(t *testing.T) {
	const pace = 200 * time.Millisecond
	const run = 1500 * time.Millisecond
	// The paced writes during the run, its first busy turns, and the drain.
	most := float64(run/pace) + 3 + 3
	unpaced, sentU := pacedRun(t, -1, run)
	paced, sentP := pacedRun(t, pace, run)
	t.Logf("frames per socket: %.1f unpaced (%d messages), %.1f paced at %v (%d messages); at most %.0f paced", unpaced, sentU, paced, pace, sentP, most)
	// Unpaced, frames of a few events each show the writer behind; a
	// machine too loaded to send faster than one pass of the writer, or
	// much slower in the second run, cannot tell.
	if unpaced <= 2*most || float64(sentU)/unpaced < 2 || sentP < sentU/2 {
		t.Skipf("unpaced %.1f frames per socket for %d messages, paced %d messages: the sends did not keep the writer behind", unpaced, sentU, sentP)
	}
	if paced > most {
		t.Fatalf("%.1f frames per socket in %v, want at most %.0f: backlogged sockets are not paced at %v", paced, run, most, pace)
	}
}

// pacedRun sends to 200 subscribers of one replica for run and returns the
// frames written per subscriber and the messages sent, once every
// subscriber has read every message, in order.
func pacedRun(t *testing.T, pace, run time.Duration) (float64, int) {
	t.Helper()
	r := startReplica(t, replicaConfig{publicRead: true, opts: realtime.Options{
		Writers: 1, Pace: pace, Batch: 100000, QueueSize: 100000, Limits: &realtime.Limits{}}}, testPrefix())
	const subs = 200
	clients := make([]*client, subs)
	for i := range clients {
		clients[i] = dial(t, r.base, "channel=paced", nil)
		clients[i].hello()
	}
	waitConnections(t, r, subs)
	time.Sleep(300 * time.Millisecond) // presence frames written
	frames0 := metric(t, r.base, "chat_ws_frames_written_total")
	sent := 0
	for start := time.Now(); time.Since(start) < run; {
		// Bursts of a few, so that each socket has several events queued
		// by its turn, and a pause that leaves the writer a CPU.
		for range 5 {
			if _, err := r.svc.Send(context.Background(), chat.Held(r.admin), chat.SendInput{Channel: "paced", Message: "m"}); err != nil {
				t.Fatal(err)
			}
			sent++
		}
		time.Sleep(time.Millisecond)
	}
	for i, c := range clients {
		msgs := c.messages(sent)
		for j := 1; j < len(msgs); j++ {
			if msgs[j].ID != msgs[j-1].ID+1 {
				t.Fatalf("pace %v, subscriber %d: message %d has id %d after %d", pace, i, j, msgs[j].ID, msgs[j-1].ID)
			}
		}
	}
	frames := metric(t, r.base, "chat_ws_frames_written_total") - frames0
	r.stop()
	return frames / subs, sent
}

// TestSocketsThatKeepUpAreNotPaced: a subscriber that has read each message
// before the next is sent has nothing queued after any write, so however
// long Pace is, every message is written at once.
func TestSocketsThatKeepUpAreNotPaced(t *testing.T) {
	r := startReplica(t, replicaConfig{publicRead: true, opts: realtime.Options{
		Writers: 1, Pace: time.Hour, Limits: &realtime.Limits{}}}, testPrefix())
	clients := make([]*client, 5)
	for i := range clients {
		clients[i] = dial(t, r.base, "channel=kept", nil)
		clients[i].hello()
	}
	for n := 0; n < 50; n++ {
		start := time.Now()
		res, err := r.svc.Send(context.Background(), chat.Held(r.admin), chat.SendInput{Channel: "kept", Message: "m"})
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range clients {
			if got := c.messages(1)[0]; got.ID != res.Message.ID {
				t.Fatalf("subscriber %d: message %d, want %d", i, got.ID, res.Message.ID)
			}
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("message %d took %v to reach every subscriber", n, d)
		}
	}
}
