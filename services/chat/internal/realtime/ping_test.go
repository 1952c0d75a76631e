package realtime_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/realtime"
)

// Pings go out with no goroutine waiting for the pong: a peer that answers (a
// real client, whose pongs the parked socket's wake-up skips) stays open and
// parked through several rounds and still gets what is sent and can send; one
// that never answers (a raw socket that reads nothing) is dropped as dead.
func TestPingsKeepALivePeerAndDropADeadOne(t *testing.T) {
	r := startReplica(t, replicaConfig{publicRead: true, opts: realtime.Options{
		PingInterval: time.Second, PongTimeout: 1500 * time.Millisecond}}, testPrefix())
	_, token := r.user(chat.RoleViewer, "pinged")
	live := join(t, r.base, "pings", token)
	rawUpgrade(t, r.base, "channel=pings") // answers nothing
	deadline := time.Now().Add(3 * wait)
	for r.hub.Connections() != 1 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if n := r.hub.Connections(); n != 1 {
		t.Fatalf("%d sockets open after the pong timeout, want 1 (the live one)", n)
	}
	// Several more rounds of pings: the live peer stays, and between them its
	// socket waits in the poller, not in a goroutine.
	time.Sleep(3 * time.Second)
	if n := r.hub.Connections(); n != 1 {
		t.Fatalf("the live peer was dropped (%d open)", n)
	}
	if p := r.hub.Parked(); p != 1 {
		t.Fatalf("%d sockets parked, want the live one", p)
	}
	if ack := live.send("still here"); ack.Type != "ack" {
		t.Fatalf("send after the pings: %+v", ack)
	}
	if got := live.messages(1)[0].Text; got != "still here" {
		t.Fatalf("delivered %q", got)
	}
}

// A socket that sent goes back to the poller with no goroutine left behind:
// the worker that ran its sends ends when none is queued.
func TestASocketThatSentHoldsNoGoroutine(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the poller is Linux's")
	}
	r := startReplica(t, replicaConfig{publicRead: true}, testPrefix())
	_, token := r.user(chat.RoleViewer, "sender")
	c := join(t, r.base, "quiet", token)
	before := settledGoroutines()
	for i := range 5 {
		if ack := c.send(fmt.Sprintf("message %d", i)); ack.Type != "ack" {
			t.Fatalf("send: %+v", ack)
		}
	}
	c.messages(5)
	after := settledGoroutines()
	if after > before {
		t.Fatalf("goroutines %d -> %d after the socket sent and went quiet", before, after)
	}
	if p := r.hub.Parked(); p != 1 {
		t.Fatalf("%d sockets parked, want 1", p)
	}
}
