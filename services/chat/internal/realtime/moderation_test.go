package realtime_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver/testkit"
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

// TestAutoShieldEndsOnTheSocket: the raid watch's shield goes off by
// itself after the quiet period, and readers on two replicas see one
// shield_mode off, announced by whichever replica's room asked first,
// with nobody sending.
func TestAutoShieldEndsOnTheSocket(t *testing.T) {
	rs := redisServer(t)
	clock := testkit.NewClock(time.Now())
	prefix := testPrefix()
	a := startReplica(t, replicaConfig{redisURL: rs.URL(), publicRead: true, now: clock.Now}, prefix)
	b := startReplica(t, replicaConfig{redisURL: rs.URL(), publicRead: true, now: clock.Now}, prefix)
	ctx := context.Background()
	mod, _ := a.user(chat.RoleModerator, "mod")
	on, three := true, 3
	if _, err := a.svc.UpdateChannel(ctx, mod, "raided", chat.ChannelPatch{AutoShield: &on, AutoShieldFirstChatters: &three}); err != nil {
		t.Fatal(err)
	}
	readers := []*client{dial(t, a.base, "channel=raided", nil), dial(t, b.base, "channel=raided", nil)}
	for _, c := range readers {
		c.hello()
	}
	for i := range three {
		u, _ := a.user(chat.RoleViewer, fmt.Sprintf("raider%d", i))
		if _, err := a.svc.Send(ctx, chat.Held(u), chat.SendInput{Channel: "raided", Message: "raid"}); err != nil {
			t.Fatal(err)
		}
	}
	// shieldEvents reads c's shield_mode events until want arrived, then
	// for a while more, to see that no other follows.
	shieldEvents := func(c *client, want int) []event {
		t.Helper()
		var out []event
		deadline := time.Now().Add(wait)
		quiet := time.Time{}
		for {
			select {
			case e := <-c.events:
				if e.Type == string(chat.EventShieldMode) {
					out = append(out, e)
					if len(out) == want {
						quiet = time.Now().Add(1500 * time.Millisecond)
					}
				}
			case <-time.After(100 * time.Millisecond):
			}
			if !quiet.IsZero() && time.Now().After(quiet) || time.Now().After(deadline) {
				return out
			}
		}
	}
	for _, c := range readers {
		if evs := shieldEvents(c, 1); len(evs) != 1 || !evs[0].Shield.On || !evs[0].Shield.Auto {
			t.Fatalf("shield events after the trip = %+v", evs)
		}
	}
	clock.Advance(chat.DefaultShieldQuietSeconds * time.Second)
	for _, c := range readers {
		evs := shieldEvents(c, 1)
		if len(evs) != 1 || evs[0].Shield.On || !evs[0].Shield.Auto || evs[0].Shield.By.ID != chat.AutomodUser.ID {
			t.Fatalf("shield events after the quiet period = %+v", evs)
		}
	}
}

// TestAutoShieldEndReachesALaterRoom: a room that starts while an
// automatic shield is on (its readers came after the trip) learns the
// shield's end at its start and announces the end when it is due.
func TestAutoShieldEndReachesALaterRoom(t *testing.T) {
	clock := testkit.NewClock(time.Now())
	r := startReplica(t, replicaConfig{publicRead: true, now: clock.Now}, testPrefix())
	ctx := context.Background()
	mod, _ := r.user(chat.RoleModerator, "mod")
	on, two := true, 2
	if _, err := r.svc.UpdateChannel(ctx, mod, "later", chat.ChannelPatch{AutoShield: &on, AutoShieldFirstChatters: &two}); err != nil {
		t.Fatal(err)
	}
	for i := range two {
		u, _ := r.user(chat.RoleViewer, fmt.Sprintf("early%d", i))
		if _, err := r.svc.Send(ctx, chat.Held(u), chat.SendInput{Channel: "later", Message: "raid"}); err != nil {
			t.Fatal(err)
		}
	}
	if c, err := r.svc.Channel(ctx, nil, "later"); err != nil || !c.ShieldOn(clock.Now()) {
		t.Fatalf("shield not on: %+v, %v", c, err)
	}
	reader := dial(t, r.base, "channel=later", nil)
	reader.hello()
	clock.Advance(chat.DefaultShieldQuietSeconds * time.Second)
	for {
		ev := reader.next()
		if ev.Type == string(chat.EventShieldMode) && ev.Shield != nil && !ev.Shield.On {
			if !ev.Shield.Auto {
				t.Fatalf("off event = %+v", ev)
			}
			return
		}
	}
}
