package realtime_test

import (
	"context"
	"testing"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/realtime"
)

// TestChannelBanClosesThatChannelsSockets: a ban held in one channel
// closes the user's sockets on that channel with 4005, on every replica,
// after the user_banned event; the user's sockets on other channels stay
// open and may send; and a role given in a channel applies to an open
// socket's next frame.
func TestChannelBanClosesThatChannelsSockets(t *testing.T) {
	onEngines(t, testChannelBan)
}

func testChannelBan(t *testing.T, a, b *replica) {
	ctx := context.Background()
	bob, bobTok := a.user(chat.RoleViewer, "bob")
	_, carolTok := a.user(chat.RoleViewer, "carol")
	bobOnA := join(t, a.base, "alpha", bobTok)
	bobOnB := join(t, b.base, "alpha", bobTok)
	bobElsewhere := join(t, b.base, "beta", bobTok)
	carol := join(t, b.base, "alpha", carolTok)

	// A role given in alpha shows on bob's next frame there, not in beta.
	if _, err := a.svc.SetChannelRole(ctx, a.admin, "alpha", bob.ID, chat.RoleVIP); err != nil {
		t.Fatal(err)
	}
	if e := bobOnB.send("as a vip"); e.Type != "ack" {
		t.Fatalf("send in alpha: %+v", e)
	} else if m := e.msg(t); m.User.Role != chat.RoleVIP {
		t.Fatalf("bob's message in alpha shows %s, want vip", m.User.Role)
	}
	if e := bobElsewhere.send("in beta"); e.Type != "ack" {
		t.Fatalf("send in beta: %+v", e)
	} else if m := e.msg(t); m.User.Role != chat.RoleViewer {
		t.Fatalf("bob's message in beta shows %s, want viewer", m.User.Role)
	}

	if _, err := a.svc.Ban(ctx, a.admin, bob.ID, chat.BanInput{Channel: "alpha", Reason: "spam"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*client{bobOnA, bobOnB} {
		if code := c.waitClosed(); code != realtime.CloseChannelBanned {
			t.Fatalf("socket of a user banned from its channel closed with %d, want %d", code, realtime.CloseChannelBanned)
		}
	}
	// carol sees the ban, scoped to the channel, and stays.
	for {
		e := carol.next()
		if e.Type == string(chat.EventUserBanned) {
			if e.Moderation == nil || e.Moderation.Scope != chat.ScopeChannel || e.Moderation.User.ID != bob.ID {
				t.Fatalf("carol got %+v", e)
			}
			break
		}
	}
	if e := bobElsewhere.send("still fine in beta"); e.Type != "ack" {
		t.Fatalf("send in beta after the ban in alpha: %+v", e)
	}
}
