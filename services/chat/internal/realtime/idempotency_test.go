package realtime_test

import (
	"context"
	"testing"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// TestSendFrameIdempotencyKey: a send frame repeated with its
// idempotency_key (a client that lost the ack and resends) is acked with
// the first message, replayed, and stored once; the key with another text
// is refused as over REST.
func TestSendFrameIdempotencyKey(t *testing.T) {
	r := startReplica(t, replicaConfig{publicRead: true}, testPrefix())
	_, token := r.user(chat.RoleViewer, "resender")
	c := dial(t, r.base, "channel=general", nil)
	c.hello()
	if e := c.auth(token); e.Type != "ack" {
		t.Fatalf("auth = %+v", e)
	}
	send := func(text string) event {
		return c.request(map[string]any{"type": "send", "message": text, "idempotency_key": "frame-1"})
	}
	first := send("only once")
	again := send("only once")
	if first.Type != "ack" || first.Replayed || again.Type != "ack" || !again.Replayed || again.msg(t).ID != first.msg(t).ID {
		t.Fatalf("first %+v, again %+v: want one message, the second ack replayed", first, again)
	}
	if e := send("another text"); e.Type != "error" || e.Status != 422 || e.Reason != chat.ReasonKeyReused {
		t.Fatalf("reused key = %+v", e)
	}
	if e := c.request(map[string]any{"type": "send", "message": "x", "idempotency_key": "no spaces"}); e.Code != "invalid" || e.Status != 400 {
		t.Fatalf("malformed key = %+v", e)
	}
	ms, err := r.svc.Messages(context.Background(), nil, "general", chat.Page{})
	if err != nil || len(ms) != 1 {
		t.Fatalf("stored %d messages (%v), want 1", len(ms), err)
	}
}
