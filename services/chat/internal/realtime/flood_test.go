package realtime_test

import (
	"bytes"
	"encoding/binary"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apistack/platform/services/chat/internal/realtime"
)

// TestFlooderIsCutOffOnceClosed: a client that sends frames as fast as it
// can and never reads fills its queue with error frames and is closed as
// too slow (4008). From that decision on the server reads nothing more from
// it: it neither waits for a close frame the flooder will never send (the
// WebSocket library waits 5 s, reading and discarding all the while) nor
// handles its frames, and the socket and its goroutines are soon gone.
//
// What the flooder still writes after the decision is bounded by the
// socket buffers (a few MB on loopback) when the server stops reading; a
// server that kept reading for seconds took hundreds of MB.
func TestFlooderIsCutOffOnceClosed(t *testing.T) {
	r := startReplica(t, replicaConfig{publicRead: true, opts: realtime.Options{
		QueueSize: 16, Writers: 1, Limits: &realtime.Limits{}}}, testPrefix())
	// Warm up: the room and the writer (started by the pong) exist before
	// the goroutine count, which leaves out the test's HTTP connections.
	warm := rawGreetedClient(t, r.base, "channel=flood")
	if _, err := warm.Write(maskedFrames([]byte(`{"type":"ping"}`), 1)); err != nil {
		t.Fatal(err)
	}
	_ = warm.SetReadDeadline(time.Now().Add(wait))
	if _, err := warm.Read(make([]byte, 512)); err != nil {
		t.Fatalf("no pong: %v", err)
	}
	warm.Close()
	waitConnections(t, r, 0)
	http.DefaultClient.CloseIdleConnections()
	before := settledGoroutines()

	conn := rawUpgrade(t, r.base, "channel=flood")
	defer conn.Close()
	// Send frames at the frame size limit, past the connection's send
	// rate: each is answered with a rate_limited error frame, which the
	// flooder never reads.
	chunk := maskedFrames([]byte(`{"type":"send","message":"`+strings.Repeat("f", 4000)+`"}`), 16)
	var written atomic.Int64
	flooded := make(chan error, 1)
	go func() {
		for {
			_ = conn.SetWriteDeadline(time.Now().Add(wait))
			n, err := conn.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				flooded <- err
				return
			}
		}
	}()
	deadline := time.Now().Add(wait)
	for closes, _ := metricSum(t, r.base, "chat_ws_server_closes_total"); closes == 0; closes, _ = metricSum(t, r.base, "chat_ws_server_closes_total") {
		if time.Now().After(deadline) {
			t.Fatal("the flooder was never closed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	atDecision := written.Load()
	handled := metric(t, r.base, "chat_ws_send_errors_total")
	var err error
	select {
	case err = <-flooded:
	case <-time.After(wait):
		t.Fatal("the flooder can still write: the server neither closed its socket nor stopped reading")
	}
	after := written.Load() - atDecision
	t.Logf("%d MB written before the decision, %d MB after (%v)", atDecision>>20, after>>20, err)
	if after > 32<<20 {
		t.Fatalf("the server read %d MB from the flooder after it decided to close it", after>>20)
	}
	waitConnections(t, r, 0)
	if more := metric(t, r.base, "chat_ws_send_errors_total") - handled; more > 0 {
		t.Fatalf("the server handled %v frames after it decided to close the flooder", more)
	}
	if n := metric(t, r.base, "chat_ws_server_closes_total"); n != 1 {
		t.Fatalf("chat_ws_server_closes_total %v, want 1", n)
	}
	http.DefaultClient.CloseIdleConnections()
	if now := settledGoroutines(); now > before {
		t.Fatalf("%d goroutines after the flooder left, %d before", now, before)
	}
}

// maskedFrames is n client text frames of payload (at most 64 KiB). Their
// mask key is zero, so the payload goes as it is.
func maskedFrames(payload []byte, n int) []byte {
	var b bytes.Buffer
	for range n {
		b.Write([]byte{0x81, 0x80 | 126})
		_ = binary.Write(&b, binary.BigEndian, uint16(len(payload)))
		b.Write([]byte{0, 0, 0, 0})
		b.Write(payload)
	}
	return b.Bytes()
}
