package realtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/realtime"
)

// TestDeletedAndBannedUsersSocketsClose: with CHAT_PUBLIC_READ=false, a
// deleted user's sockets close with 4003 and a banned user's with 4004, on
// every replica, while everyone else's stay open and keep receiving.
func TestDeletedAndBannedUsersSocketsClose(t *testing.T) {
	onEngines(t, testRevocations)
}

func testRevocations(t *testing.T, a, b *replica) {
	ctx := context.Background()
	alice, aliceTok := a.user(chat.RoleViewer, "alice")
	bob, bobTok := a.user(chat.RoleViewer, "bob")
	_, carolTok := a.user(chat.RoleViewer, "carol")
	aliceWS := join(t, b.base, "general", aliceTok)
	bobOnA := join(t, a.base, "general", bobTok)
	bobOnB := join(t, b.base, "other", bobTok)
	carol := join(t, b.base, "general", carolTok)

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
	if _, err := a.svc.Send(ctx, chat.Held(a.admin), chat.SendInput{Message: "still here"}); err != nil {
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

// TestRevocationMissedWhileFeedDownIsRechecked: a deletion and a ban made
// while a replica's feed is disconnected (Redis restarted, and the replica
// cannot log in again yet) are published to nobody on that replica; once
// its feed reconnects it rechecks the users of its open sockets and closes
// the deleted user's with 4003 and the banned user's with 4004, while the
// others stay open and keep receiving.
func TestRevocationMissedWhileFeedDownIsRechecked(t *testing.T) {
	rs := redisServer(t, "--appendonly", "yes", "--appendfsync", "always")
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer admin.Close()
	// Replica a logs in as its own ACL user, which a restarted Redis does
	// not know until the test creates it again: that keeps a's feed down
	// while b (the default user) deletes and bans.
	addUser := func() {
		t.Helper()
		if err := admin.Do(ctx, "ACL", "SETUSER", "replica-a", "on", ">secret-a", "~*", "&*", "+@all").Err(); err != nil {
			t.Fatal(err)
		}
	}
	addUser()
	prefix := testPrefix()
	a := startReplica(t, replicaConfig{redisURL: "redis://replica-a:secret-a@" + rs.Addr() + "/0"}, prefix)
	b := startReplica(t, replicaConfig{redisURL: rs.URL()}, prefix)

	alice, aliceTok := b.user(chat.RoleViewer, "alice")
	bob, bobTok := b.user(chat.RoleViewer, "bob")
	_, carolTok := b.user(chat.RoleViewer, "carol")
	dave, daveTok := b.user(chat.RoleViewer, "dave")
	// dave is banned before he connects: he may read (the protocol's rule),
	// and the recheck must leave him alone.
	if _, err := b.svc.Ban(ctx, b.admin, dave.ID, chat.BanInput{Reason: "earlier"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.svc.Ban(ctx, b.admin, bob.ID, chat.BanInput{Reason: "first"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.svc.Unban(ctx, b.admin, bob.ID, ""); err != nil {
		t.Fatal(err)
	}
	aliceWS := join(t, a.base, "general", aliceTok)
	bobWS := join(t, a.base, "other", bobTok)
	carol := join(t, a.base, "general", carolTok)
	daveWS := join(t, a.base, "general", daveTok)

	rs.Restart()
	if err := rs.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	retry := func(what string, f func() error) {
		t.Helper()
		deadline := time.Now().Add(wait)
		for {
			err := f()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v", what, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	retry("delete alice", func() error { return b.svc.DeleteUser(ctx, b.admin, alice.ID) })
	retry("ban bob", func() error { _, err := b.svc.Ban(ctx, b.admin, bob.ID, chat.BanInput{Reason: "spam"}); return err })
	time.Sleep(time.Second)
	for name, c := range map[string]*client{"alice": aliceWS, "bob": bobWS} {
		select {
		case <-c.closed:
			t.Fatalf("%s's socket closed while replica a's feed was down (%v): the test does not test the recheck", name, c.err)
		default:
		}
	}
	addUser()
	if code := aliceWS.waitClosed(); code != realtime.CloseUserDeleted {
		t.Fatalf("deleted user's socket closed with %d, want %d", code, realtime.CloseUserDeleted)
	}
	if code := bobWS.waitClosed(); code != realtime.CloseUserBanned {
		t.Fatalf("banned user's socket closed with %d, want %d", code, realtime.CloseUserBanned)
	}
	if _, err := b.svc.Send(ctx, chat.Held(b.admin), chat.SendInput{Message: "still here"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*client{carol, daveWS} {
		for {
			e := c.next()
			if e.Type == string(chat.EventMessage) {
				if m := e.msg(t); m.Text != "still here" {
					t.Fatalf("got %+v", m)
				}
				break
			}
		}
	}
}
