package realtime_test

import (
	"context"
	"testing"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/realtime"
)

// TestDeletedAndBannedUsersSocketsClose: with CHAT_PUBLIC_READ=false, a
// deleted user's sockets close with 4003 and a banned user's with 4004, on
// every replica, while everyone else's stay open and keep receiving.
func TestDeletedAndBannedUsersSocketsClose(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		rs := redisServer(t)
		a, b := twoReplicas(t, replicaConfig{redisURL: rs.URL()})
		testRevocations(t, a, b)
	})
	t.Run("memory", func(t *testing.T) {
		r := startReplica(t, replicaConfig{}, testPrefix())
		testRevocations(t, r, r)
	})
}

func testRevocations(t *testing.T, a, b *replica) {
	ctx := context.Background()
	alice, aliceTok := a.user(chat.RoleViewer, "alice")
	bob, bobTok := a.user(chat.RoleViewer, "bob")
	_, carolTok := a.user(chat.RoleViewer, "carol")
	aliceWS := dial(t, b.base, "channel=general", bearer(aliceTok))
	aliceWS.hello()
	bobOnA := dial(t, a.base, "channel=general", bearer(bobTok))
	bobOnA.hello()
	bobOnB := dial(t, b.base, "channel=other", bearer(bobTok))
	bobOnB.hello()
	carol := dial(t, b.base, "channel=general", bearer(carolTok))
	carol.hello()

	if err := a.svc.DeleteUser(ctx, a.admin, alice.ID); err != nil {
		t.Fatal(err)
	}
	if code := aliceWS.waitClosed(); code != realtime.CloseUserDeleted {
		t.Fatalf("deleted user's socket closed with %d, want %d", code, realtime.CloseUserDeleted)
	}
	if _, err := a.svc.Ban(ctx, a.admin, bob.ID, chat.BanInput{Reason: "spam"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*client{bobOnA, bobOnB} {
		if code := c.waitClosed(); code != realtime.CloseUserBanned {
			t.Fatalf("banned user's socket closed with %d, want %d", code, realtime.CloseUserBanned)
		}
	}
	if _, err := a.svc.Send(ctx, a.admin, chat.SendInput{Message: "still here"}); err != nil {
		t.Fatal(err)
	}
	for {
		e := carol.next()
		if e.Type == string(chat.EventMessage) {
			if m := e.msg(t); m.Text != "still here" {
				t.Fatalf("carol got %+v", m)
			}
			break
		}
	}
}
