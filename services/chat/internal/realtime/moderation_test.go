package realtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// TestModerationFrames: a held message is acked as pending to its sender
// alone and reaches readers once approved; a refusing filter's error frame
// carries its consequence and readers see automod's timeout; shield mode
// switches arrive as shield_mode events.
func TestModerationFrames(t *testing.T) {
	r := startReplica(t, replicaConfig{publicRead: true}, testPrefix())
	ctx := context.Background()
	mod, _ := r.user(chat.RoleModerator, "mod")
	_, token := r.user(chat.RoleViewer, "sender")
	for _, in := range []chat.FilterInput{
		{Kind: chat.FilterBlockedTerm, Pattern: "pending*", Action: chat.ActionHold},
		{Kind: chat.FilterBlockedTerm, Pattern: "toxic", Action: chat.ActionTimeout, TimeoutSeconds: 60},
	} {
		if _, err := r.svc.CreateFilter(ctx, mod, in); err != nil {
			t.Fatal(err)
		}
	}
	reader := dial(t, r.base, "channel=general", nil)
	reader.hello()
	c := dial(t, r.base, "channel=general", nil)
	c.hello()
	if e := c.auth(token); e.Type != "ack" {
		t.Fatalf("auth = %+v", e)
	}

	ack := c.send("pending review")
	if ack.Type != "ack" || ack.Held == nil || ack.Held.Text != "pending review" || len(ack.Raw) != 0 {
		t.Fatalf("held ack = %+v", ack)
	}
	if _, err := r.svc.ApproveHeld(ctx, mod, "general", ack.Held.ID); err != nil {
		t.Fatal(err)
	}
	// The reader's first message is the approved one: the held message
	// never reached it before.
	if ms := reader.messages(1); ms[0].Text != "pending review" {
		t.Fatalf("reader got %+v", ms)
	}

	e := c.send("you are toxic")
	if e.Type != "error" || e.Status != 422 || e.Consequence == nil || e.Consequence.Penalty != chat.PenaltyTimeout || e.Consequence.Until == nil {
		t.Fatalf("timeout error frame = %+v", e)
	}
	for {
		ev := reader.next()
		if ev.Type == string(chat.EventUserTimedOut) {
			if ev.Moderation == nil || ev.Moderation.By.ID != chat.AutomodUser.ID {
				t.Fatalf("timeout event = %+v", ev)
			}
			break
		}
	}

	on := true
	if _, err := r.svc.UpdateChannel(ctx, mod, "general", chat.ChannelPatch{Shield: &on}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		ev := reader.next()
		if ev.Type == string(chat.EventShieldMode) {
			if ev.Shield == nil || !ev.Shield.On || ev.Shield.By.ID != mod.ID {
				t.Fatalf("shield event = %+v", ev)
			}
			return
		}
	}
	t.Fatal("no shield_mode event")
}
