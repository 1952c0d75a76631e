package realtime_test

import (
	"context"
	"testing"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// TestPurgeDeliversTombstones: a purge reaches every reader of the
// channel live, one message_deleted event per message deleted.
func TestPurgeDeliversTombstones(t *testing.T) {
	r := startReplica(t, replicaConfig{publicRead: true}, testPrefix())
	ctx := context.Background()
	mod, _ := r.user(chat.RoleModerator, "mod")
	spammer, token := r.user(chat.RoleViewer, "spammer")
	reader := dial(t, r.base, "channel=general", nil)
	reader.hello()
	c := dial(t, r.base, "channel=general", nil)
	c.hello()
	if e := c.auth(token); e.Type != "ack" {
		t.Fatalf("auth = %+v", e)
	}
	sent := map[int64]bool{}
	for _, text := range []string{"buy now", "cheap", "click"} {
		ack := c.send(text)
		if ack.Type != "ack" {
			t.Fatalf("send = %+v", ack)
		}
		sent[ack.msg(t).ID] = true
	}
	reader.messages(3)
	res, err := r.svc.Purge(ctx, mod, "general", spammer.ID, chat.PurgeInput{Reason: "spam"})
	if err != nil || res.Deleted != 3 {
		t.Fatalf("purge = %+v, %v", res, err)
	}
	for len(sent) > 0 {
		ev := reader.next()
		if ev.Type != string(chat.EventMessageDeleted) {
			continue
		}
		m := ev.msg(t)
		if !sent[m.ID] || !m.Deleted || m.Text != "" {
			t.Fatalf("message_deleted = %+v (want one of %v)", m, sent)
		}
		delete(sent, m.ID)
	}
}
