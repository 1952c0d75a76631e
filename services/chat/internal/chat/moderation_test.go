package chat_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// events returns the events of a channel's log, by type.
func (e *env) events(channel string) map[chat.EventType][]chat.Event {
	e.t.Helper()
	evs, err := e.store.ReadEvents(e.ctx, channel, chat.Cursor{}, 10000)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[chat.EventType][]chat.Event{}
	for _, ev := range evs {
		out[ev.Type] = append(out[ev.Type], ev)
	}
	return out
}

func (e *env) sendIn(u chat.User, channel, text string) (chat.SendResult, error) {
	return e.svc.Send(e.ctx, chat.Held(u), chat.SendInput{Channel: channel, Message: text})
}

// consequence checks a refusal and returns its consequence.
func consequence(t *testing.T, err error, action chat.FilterAction, penalty chat.PenaltyKind) *chat.Consequence {
	t.Helper()
	ferr := wantKind(t, err, chat.KindBlocked)
	c := ferr.Consequence
	if c == nil || c.Action != action || c.Penalty != penalty {
		t.Fatalf("consequence = %+v, want %s/%s (%v)", c, action, penalty, err)
	}
	return c
}

// testFilterActions: timeout, ban and strike refuse the message and act
// on the sender in the same step; the 422 says what happened.
func testFilterActions(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	mod := en.users[chat.RoleModerator]
	add := func(in chat.FilterInput) chat.Filter {
		t.Helper()
		return must[chat.Filter](t)(en.svc.CreateFilter(en.ctx, mod, in))
	}
	to := add(chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "timeoutword", Action: chat.ActionTimeout, TimeoutSeconds: 120})
	if to.TimeoutSeconds != 120 {
		t.Fatalf("timeout filter = %+v", to)
	}
	if f := add(chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "defaultword", Action: chat.ActionTimeout}); f.TimeoutSeconds != chat.DefaultFilterTimeoutSeconds {
		t.Fatalf("default timeout = %+v", f)
	}
	add(chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "banword", Action: chat.ActionBan})
	add(chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "strikeword", Action: chat.ActionStrike})
	for _, in := range []chat.FilterInput{
		{Kind: chat.FilterBlockedTerm, Pattern: "x", Action: chat.ActionTimeout, TimeoutSeconds: chat.MaxTimeoutSeconds + 1},
		{Kind: chat.FilterBlockedTerm, Pattern: "x", Action: chat.ActionTimeout, TimeoutSeconds: -1},
		{Kind: chat.FilterBlockedTerm, Pattern: "x", Action: chat.ActionBlock, TimeoutSeconds: 5},
	} {
		_, err := en.svc.CreateFilter(en.ctx, mod, in)
		wantKind(t, err, chat.KindInvalid)
	}

	// timeout: refused, timed out until now+120 s, announced by automod.
	v := en.newUser("timed", chat.RoleViewer)
	_, err := en.sendIn(v, "", "say timeoutword")
	c := consequence(t, err, chat.ActionTimeout, chat.PenaltyTimeout)
	until := en.clock.Now().Add(120 * time.Second)
	if c.Until == nil || !c.Until.Equal(until) {
		t.Fatalf("until = %v, want %v", c.Until, until)
	}
	_, err = en.sendIn(v, "", "hello")
	if ferr := wantKind(t, err, chat.KindForbidden); ferr.Reason != "timed_out" {
		t.Fatalf("after a timeout filter: %v", err)
	}
	if ms := must[[]chat.Message](t)(en.svc.Messages(en.ctx, nil, "", chat.Page{})); len(ms) != 0 {
		t.Fatalf("a refused message was stored: %+v", ms)
	}
	to2 := en.events("general")[chat.EventUserTimedOut]
	if len(to2) != 1 || to2[0].Moderation.By.ID != chat.AutomodUser.ID || to2[0].Moderation.User.ID != v.ID {
		t.Fatalf("timeout events = %+v", to2)
	}

	// ban: refused, banned, announced.
	b := en.newUser("banned", chat.RoleViewer)
	_, err = en.sendIn(b, "", "banword")
	consequence(t, err, chat.ActionBan, chat.PenaltyBan)
	if u := must[chat.User](t)(en.svc.User(en.ctx, mod, b.ID)); !u.Banned || !strings.Contains(u.ModReason, "automod") {
		t.Fatalf("banned user = %+v", u)
	}
	if n := len(en.events("general")[chat.EventUserBanned]); n != 1 {
		t.Fatalf("%d ban events", n)
	}

	// strike: warn, 60 s, 10 min, ban; per channel.
	s := en.newUser("striker", chat.RoleViewer)
	_, err = en.sendIn(s, "", "strikeword")
	if c := consequence(t, err, chat.ActionStrike, chat.PenaltyWarn); c.Strike != 1 || c.StrikesExpireAt == nil {
		t.Fatalf("strike 1 = %+v", c)
	}
	en.send(s, "still allowed after a warning")
	_, err = en.sendIn(s, "", "strikeword")
	if c := consequence(t, err, chat.ActionStrike, chat.PenaltyTimeout); c.Strike != 2 || !c.Until.Equal(en.clock.Now().Add(time.Minute)) {
		t.Fatalf("strike 2 = %+v", c)
	}
	en.clock.Advance(61 * time.Second)
	_, err = en.sendIn(s, "", "strikeword")
	if c := consequence(t, err, chat.ActionStrike, chat.PenaltyTimeout); c.Strike != 3 || !c.Until.Equal(en.clock.Now().Add(10*time.Minute)) {
		t.Fatalf("strike 3 = %+v", c)
	}
	// Another channel has its own count.
	en.clock.Advance(601 * time.Second)
	_, err = en.sendIn(s, "elsewhere", "strikeword")
	if c := consequence(t, err, chat.ActionStrike, chat.PenaltyWarn); c.Strike != 1 {
		t.Fatalf("strike in another channel = %+v", c)
	}
	_, err = en.sendIn(s, "", "strikeword")
	if c := consequence(t, err, chat.ActionStrike, chat.PenaltyBan); c.Strike != 4 {
		t.Fatalf("strike 4 = %+v", c)
	}
	// Strikes expire a day after the last one.
	x := en.newUser("expiring", chat.RoleViewer)
	_, err = en.sendIn(x, "", "strikeword")
	consequence(t, err, chat.ActionStrike, chat.PenaltyWarn)
	en.clock.Advance(chat.StrikeExpiry + time.Second)
	_, err = en.sendIn(x, "", "strikeword")
	if c := consequence(t, err, chat.ActionStrike, chat.PenaltyWarn); c.Strike != 1 {
		t.Fatalf("strike after expiry = %+v", c)
	}
	// A block says so too; moderators are not checked.
	add(chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "blockword"})
	_, err = en.sendIn(en.users[chat.RoleViewer], "", "blockword")
	consequence(t, err, chat.ActionBlock, "")
	en.send(mod, "banword strikeword timeoutword")
}

// testHold: a hold filter keeps the message for review (nothing stored,
// nobody sees it); approve stores it with the sender's text, deny drops
// it; the queue is bounded and expires.
func testHold(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	mod, v := en.users[chat.RoleModerator], en.users[chat.RoleViewer]
	must[chat.Filter](t)(en.svc.CreateFilter(en.ctx, mod, chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "review*", Action: chat.ActionHold}))
	must[chat.Filter](t)(en.svc.CreateFilter(en.ctx, mod, chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "darn", Action: chat.ActionMask}))
	r := en.send(v, "please review this, darn")
	if r.Held == nil || r.Held.ID == 0 || r.Message.ID != 0 || r.Held.Reason != chat.HeldByFilter || r.Held.Text != "please review this, darn" {
		t.Fatalf("held send = %+v", r)
	}
	r2 := en.send(v, "review me too")
	if ms := must[[]chat.Message](t)(en.svc.Messages(en.ctx, nil, "", chat.Page{})); len(ms) != 0 {
		t.Fatalf("held messages were stored: %+v", ms)
	}
	_, err := en.svc.HeldMessages(en.ctx, v, "general")
	wantKind(t, err, chat.KindForbidden)
	hs := must[[]chat.HeldMessage](t)(en.svc.HeldMessages(en.ctx, mod, "general"))
	if len(hs) != 2 || hs[0].ID != r.Held.ID || hs[1].ID != r2.Held.ID {
		t.Fatalf("queue = %+v", hs)
	}
	_, err = en.svc.ApproveHeld(en.ctx, v, "general", r.Held.ID)
	wantKind(t, err, chat.KindForbidden)
	m := must[chat.Message](t)(en.svc.ApproveHeld(en.ctx, mod, "general", r.Held.ID))
	if m.ID == 0 || m.Text != "please review this, darn" || m.User.ID != v.ID || !m.CreatedAt.Equal(en.clock.Now()) {
		t.Fatalf("approved = %+v", m)
	}
	if evs := en.events("general")[chat.EventMessage]; len(evs) != 1 || evs[0].Message.Text != m.Text {
		t.Fatalf("approved message not delivered: %+v", evs)
	}
	_, err = en.svc.ApproveHeld(en.ctx, mod, "general", r.Held.ID)
	wantKind(t, err, chat.KindNotFound)
	must[struct{}](t)(struct{}{}, en.svc.DenyHeld(en.ctx, mod, "general", r2.Held.ID))
	wantKind(t, en.svc.DenyHeld(en.ctx, mod, "general", r2.Held.ID), chat.KindNotFound)
	if hs := must[[]chat.HeldMessage](t)(en.svc.HeldMessages(en.ctx, mod, "general")); len(hs) != 0 {
		t.Fatalf("queue after review = %+v", hs)
	}
	if ms := must[[]chat.Message](t)(en.svc.Messages(en.ctx, nil, "", chat.Page{})); len(ms) != 1 {
		t.Fatalf("a denied message was stored: %+v", ms)
	}

	// Held messages expire.
	old := en.send(v, "review later")
	en.clock.Advance(chat.HeldTTL + time.Second)
	if hs := must[[]chat.HeldMessage](t)(en.svc.HeldMessages(en.ctx, mod, "general")); len(hs) != 0 {
		t.Fatalf("expired queue = %+v", hs)
	}
	_, err = en.svc.ApproveHeld(en.ctx, mod, "general", old.Held.ID)
	wantKind(t, err, chat.KindNotFound)

	// The queue is bounded per channel.
	for i := range chat.MaxHeldPerChannel {
		en.send(v, fmt.Sprintf("review %d", i))
	}
	_, err = en.sendIn(v, "", "review one more")
	wantLimit(t, err, chat.MaxHeldPerChannel, "per channel")
	must[chat.SendResult](t)(en.sendIn(v, "other", "review elsewhere"))
}

func patch(t *testing.T, en *env, channel string, p chat.ChannelPatch) chat.Channel {
	t.Helper()
	return must[chat.Channel](t)(en.svc.UpdateChannel(en.ctx, en.users[chat.RoleModerator], channel, p))
}

// testChannelModes: first-message review, minimum account age, unique
// chat and shield mode's preset.
func testChannelModes(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	mod, vip := en.users[chat.RoleModerator], en.users[chat.RoleVIP]
	veteran := en.users[chat.RoleViewer]
	en.send(veteran, "I was here before")

	for _, p := range []chat.ChannelPatch{
		{MinAccountAgeSeconds: ptr(-1)}, {MinAccountAgeSeconds: ptr(chat.MaxMinAccountAgeSeconds + 1)},
		{AutoShieldFirstChatters: ptr(-1)}, {ShieldQuietSeconds: ptr(5)},
		{AutoShieldBlocked: ptr(-1)}, {AutoShieldBlocked: ptr(chat.MaxAutoShieldBlocked + 1)},
	} {
		_, err := en.svc.UpdateChannel(en.ctx, mod, "general", p)
		wantKind(t, err, chat.KindInvalid)
	}
	_, err := en.svc.UpdateChannel(en.ctx, veteran, "general", chat.ChannelPatch{Shield: ptr(true)})
	wantKind(t, err, chat.KindForbidden)

	c := patch(t, en, "general", chat.ChannelPatch{FirstMessageReview: ptr(true), MinAccountAgeSeconds: ptr(600), UniqueChat: ptr(true)})
	if !c.FirstMessageReview || c.MinAccountAgeSeconds != 600 || !c.UniqueChat || c.Shield {
		t.Fatalf("channel = %+v", c)
	}
	if got := must[chat.Channel](t)(en.svc.Channel(en.ctx, nil, "general")); got != c {
		t.Fatalf("read back %+v, want %+v", got, c)
	}
	// Minimum account age: 403 saying from when.
	fresh := en.newUser("fresh", chat.RoleViewer)
	_, err = en.sendIn(fresh, "", "hi")
	ferr := wantKind(t, err, chat.KindForbidden)
	if ferr.Reason != "account_too_new" || !ferr.Until.Equal(fresh.CreatedAt.Add(600*time.Second)) {
		t.Fatalf("account age refusal = %+v", ferr)
	}
	en.send(vip, "vips are not checked")
	en.clock.Advance(601 * time.Second)
	// First message review: the first message is held, the next after
	// approval goes through; a chatter from before is not held.
	r := en.send(fresh, "my first words")
	if r.Held == nil || r.Held.Reason != chat.HeldFirstMessage {
		t.Fatalf("first message = %+v", r)
	}
	must[chat.Message](t)(en.svc.ApproveHeld(en.ctx, mod, "general", r.Held.ID))
	if r := en.send(fresh, "now I am known"); r.Held != nil {
		t.Fatalf("second message held: %+v", r)
	}
	en.send(veteran, "hello again")
	// Unique chat: the same text (case and spaces aside) within 30 s.
	_, err = en.sendIn(veteran, "", "  HELLO again ")
	if ferr := wantKind(t, err, chat.KindSlowMode); ferr.Reason != "unique_chat" || ferr.RetryAfter != chat.UniqueChatWindow {
		t.Fatalf("unique chat = %+v", ferr)
	}
	// Under the filters' folding (issue 41): runs of spaces, fullwidth
	// forms, Cyrillic look-alikes and zero-width characters are the same
	// text.
	for _, same := range []string{"hello  again", "ｈｅｌｌｏ　ａｇａｉｎ", "h\u0435ll\u043e again", "hel\u200blo again"} {
		_, err = en.sendIn(veteran, "", same)
		if ferr := wantKind(t, err, chat.KindSlowMode); ferr.Reason != "unique_chat" {
			t.Fatalf("unique chat for %q = %+v", same, ferr)
		}
	}
	en.send(veteran, "something new")
	en.clock.Advance(chat.UniqueChatWindow)
	en.send(veteran, "hello again")

	// Shield mode: the preset applies on top of the channel's settings.
	en.clock.Advance(2 * time.Hour)
	c = patch(t, en, "calm", chat.ChannelPatch{Shield: ptr(true)})
	if !c.Shield || !c.ShieldOn(en.clock.Now()) {
		t.Fatalf("shield = %+v", c)
	}
	on := en.events("calm")[chat.EventShieldMode]
	if len(on) != 1 || !on[0].Shield.On || on[0].Shield.Auto || on[0].Shield.By.ID != mod.ID {
		t.Fatalf("shield events = %+v", on)
	}
	newbie := en.newUser("newbie", chat.RoleViewer)
	_, err = en.sendIn(newbie, "calm", "raid!")
	if ferr := wantKind(t, err, chat.KindForbidden); ferr.Reason != "account_too_new" {
		t.Fatalf("shield account age = %v", err)
	}
	if r := must[chat.SendResult](t)(en.sendIn(veteran, "calm", "first time here")); r.Held == nil {
		t.Fatalf("shield did not hold a first message: %+v", r)
	}
	must[chat.SendResult](t)(en.sendIn(vip, "calm", "vip one"))
	must[chat.SendResult](t)(en.sendIn(vip, "calm", "vip two"))
	c = patch(t, en, "calm", chat.ChannelPatch{Shield: ptr(false)})
	if c.ShieldOn(en.clock.Now()) {
		t.Fatalf("shield still on: %+v", c)
	}
	if evs := en.events("calm")[chat.EventShieldMode]; len(evs) != 2 || evs[1].Shield.On {
		t.Fatalf("shield off events = %+v", evs)
	}
	must[chat.SendResult](t)(en.sendIn(newbie, "calm", "now I may"))
}

// raiders creates n viewers old enough for shield mode's account age.
func raiders(en *env, prefix string, n int) []chat.User {
	us := make([]chat.User, n)
	for i := range us {
		us[i] = en.newUser(fmt.Sprintf("%s%d", prefix, i), chat.RoleViewer)
	}
	en.clock.Advance(2 * time.Duration(chat.ShieldMinAccountAgeSeconds) * time.Second)
	return us
}

// testAutoShield: with the defaults, 40 accounts never seen in the
// channel sending within 10 s turn shield mode on, once, announced; it
// goes off after the quiet period; a moderator's "off" wins.
func testAutoShield(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	regular := en.users[chat.RoleViewer]
	en.send(regular, "regular")
	rs := raiders(en, "raider", 40)
	patch(t, en, "general", chat.ChannelPatch{AutoShield: ptr(true)})
	// Regulars do not count.
	for range 5 {
		en.send(regular, fmt.Sprintf("still here %d", en.clock.Now().UnixNano()))
	}
	tripped := -1
	for i, u := range rs {
		r := en.send(u, "raid "+u.Name)
		en.clock.Advance(250 * time.Millisecond)
		c := must[chat.Channel](t)(en.svc.Channel(en.ctx, nil, "general"))
		if c.ShieldOn(en.clock.Now()) && tripped < 0 {
			tripped = i
		}
		if tripped >= 0 && i > tripped && r.Held == nil {
			t.Fatalf("raider %d sent with shield on: %+v", i, r)
		}
	}
	if tripped != chat.DefaultAutoShieldFirstChatters-1 {
		t.Fatalf("shield tripped at raider %d, want %d", tripped, chat.DefaultAutoShieldFirstChatters-1)
	}
	evs := en.events("general")[chat.EventShieldMode]
	if len(evs) != 1 || !evs[0].Shield.On || !evs[0].Shield.Auto || evs[0].Shield.By.ID != chat.AutomodUser.ID || evs[0].Shield.Until == nil {
		t.Fatalf("shield events = %+v", evs)
	}
	// Before the quiet period is over nothing ends; after, the end is
	// announced once, however often it is asked for.
	// (Each raider after the trip pushed the end on.)
	last := must[chat.Channel](t)(en.svc.Channel(en.ctx, nil, "general")).ShieldUntil
	if until := must[time.Time](t)(en.svc.EndAutoShield(en.ctx, "general")); last == nil || !until.Equal(*last) || !until.After(*evs[0].Shield.Until) {
		t.Fatalf("EndAutoShield before the end = %v, want %v, after %v", until, last, *evs[0].Shield.Until)
	}
	en.clock.Advance(chat.DefaultShieldQuietSeconds * time.Second)
	if c := must[chat.Channel](t)(en.svc.Channel(en.ctx, nil, "general")); c.ShieldOn(en.clock.Now()) {
		t.Fatalf("shield on after the quiet period: %+v", c)
	}
	for range 2 {
		if until := must[time.Time](t)(en.svc.EndAutoShield(en.ctx, "general")); !until.IsZero() {
			t.Fatalf("EndAutoShield after the end = %v", until)
		}
	}
	evs = en.events("general")[chat.EventShieldMode]
	if len(evs) != 2 || evs[1].Shield.On || !evs[1].Shield.Auto || evs[1].Shield.By.ID != chat.AutomodUser.ID {
		t.Fatalf("shield events after the end = %+v", evs)
	}
	if n := autoShieldOffs(t, en, "general"); n != 1 {
		t.Fatalf("%d automod shield_off entries in the moderation log after the end, want 1", n)
	}

	// A moderator's "off" ends it, and the raid watch does not overrule
	// it within ShieldHoldOff, however many fresh accounts come.
	patch(t, en, "other", chat.ChannelPatch{AutoShield: ptr(true), AutoShieldFirstChatters: ptr(3)})
	more := raiders(en, "wave", 8)
	for _, u := range more[:3] {
		en.sendIn(u, "other", "wave") //nolint:errcheck // held or sent, the count is what matters
	}
	if c := must[chat.Channel](t)(en.svc.Channel(en.ctx, nil, "other")); !c.ShieldOn(en.clock.Now()) {
		t.Fatalf("threshold 3 did not trip: %+v", c)
	}
	patch(t, en, "other", chat.ChannelPatch{Shield: ptr(false)})
	en.clock.Advance(chat.ShieldHoldOff / 2)
	for _, u := range more[3:7] {
		if r := must[chat.SendResult](t)(en.sendIn(u, "other", "wave")); r.Held != nil {
			t.Fatalf("held after a moderator's off: %+v", r)
		}
	}
	if c := must[chat.Channel](t)(en.svc.Channel(en.ctx, nil, "other")); c.ShieldOn(en.clock.Now()) {
		t.Fatalf("shield back on within the hold-off: %+v", c)
	}
	// The raid goes on past the hold-off: those who came after the off
	// and one more are the threshold within a window, and it is back on.
	en.clock.Advance(chat.ShieldHoldOff/2 + time.Second)
	if _, err := en.sendIn(more[7], "other", "wave"); err != nil {
		t.Fatal(err)
	}
	if c := must[chat.Channel](t)(en.svc.Channel(en.ctx, nil, "other")); !c.ShieldOn(en.clock.Now()) {
		t.Fatalf("a raid that went on past the hold-off did not switch shield back on: %+v", c)
	}
	evs = en.events("other")[chat.EventShieldMode]
	if len(evs) != 3 || !evs[0].Shield.Auto || evs[1].Shield.On || evs[1].Shield.Auto || !evs[2].Shield.On || !evs[2].Shield.Auto {
		t.Fatalf("shield events in other = %+v", evs)
	}
}

// testAutoShieldBlocked: messages refused by filters are the raid
// watch's other count (auto_shield_blocked); regulars trip it too, and
// held messages do not count. An automatic end that no replica announced
// is announced by the next send.
func testAutoShieldBlocked(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	mod := en.users[chat.RoleModerator]
	regulars := raiders(en, "regular", 3)
	for _, u := range regulars {
		if _, err := en.sendIn(u, "spammed", "hello"); err != nil {
			t.Fatal(err)
		}
	}
	must[chat.Filter](t)(en.svc.CreateFilter(en.ctx, mod, chat.FilterInput{Channel: "spammed", Kind: chat.FilterBlockedTerm, Pattern: "spam", Action: chat.ActionBlock}))
	must[chat.Filter](t)(en.svc.CreateFilter(en.ctx, mod, chat.FilterInput{Channel: "spammed", Kind: chat.FilterBlockedTerm, Pattern: "later", Action: chat.ActionHold}))
	c := patch(t, en, "spammed", chat.ChannelPatch{AutoShield: ptr(true), AutoShieldBlocked: ptr(3)})
	if c.AutoShieldBlocked != 3 {
		t.Fatalf("auto_shield_blocked = %d", c.AutoShieldBlocked)
	}
	for _, u := range regulars {
		r := must[chat.SendResult](t)(en.sendIn(u, "spammed", "later"))
		if r.Held == nil {
			t.Fatalf("not held: %+v", r)
		}
	}
	// One account's refused messages count once (issue 41): thirty of
	// them within the window do not switch shield on for everybody.
	for i := range 30 {
		_, err := en.sendIn(regulars[0], "spammed", fmt.Sprintf("spam alone %d", i))
		wantKind(t, err, chat.KindBlocked)
	}
	if c := must[chat.Channel](t)(en.svc.Channel(en.ctx, nil, "spammed")); c.ShieldOn(en.clock.Now()) {
		t.Fatalf("one account's 30 blocked messages tripped the shield: %+v", c)
	}
	for i := range 3 {
		if c := must[chat.Channel](t)(en.svc.Channel(en.ctx, nil, "spammed")); c.ShieldOn(en.clock.Now()) {
			t.Fatalf("shield on after %d blocked senders", i)
		}
		_, err := en.sendIn(regulars[i], "spammed", fmt.Sprintf("spam %d", i))
		wantKind(t, err, chat.KindBlocked)
		en.clock.Advance(time.Second)
	}
	c = must[chat.Channel](t)(en.svc.Channel(en.ctx, nil, "spammed"))
	if !c.ShieldOn(en.clock.Now()) {
		t.Fatalf("3 blocked senders within a minute did not trip: %+v", c)
	}
	evs := en.events("spammed")[chat.EventShieldMode]
	if len(evs) != 1 || !evs[0].Shield.Auto || !strings.Contains(evs[0].Shield.Reason, "blocked") {
		t.Fatalf("shield events = %+v", evs)
	}
	// Quiet: the next send (by a regular, who meets the modes) finds the
	// shield over and announces it.
	en.clock.Advance(chat.DefaultShieldQuietSeconds * time.Second)
	if _, err := en.sendIn(regulars[2], "spammed", "calm again"); err != nil {
		t.Fatal(err)
	}
	if evs := en.events("spammed")[chat.EventShieldMode]; len(evs) != 2 || evs[1].Shield.On {
		t.Fatalf("shield events after the quiet period = %+v", evs)
	}

	// The default: DefaultAutoShieldBlocked refused messages within a
	// minute, and not one fewer.
	patch(t, en, "spammed", chat.ChannelPatch{AutoShieldBlocked: ptr(0)})
	spammers := raiders(en, "spammer", chat.DefaultAutoShieldBlocked)
	en.clock.Advance(chat.AutoShieldWindow)
	for i := range chat.DefaultAutoShieldBlocked {
		if c := must[chat.Channel](t)(en.svc.Channel(en.ctx, nil, "spammed")); c.ShieldOn(en.clock.Now()) {
			t.Fatalf("shield on after %d blocked messages", i)
		}
		_, err := en.sendIn(spammers[i], "spammed", fmt.Sprintf("spam again %d", i))
		wantKind(t, err, chat.KindBlocked)
		en.clock.Advance(time.Second)
	}
	if c := must[chat.Channel](t)(en.svc.Channel(en.ctx, nil, "spammed")); !c.ShieldOn(en.clock.Now()) {
		t.Fatalf("%d blocked messages within a minute did not trip: %+v", chat.DefaultAutoShieldBlocked, c)
	}
}

// testRaidOnTwoReplicas: two services on one store take the same raid:
// one shield activation, one strike per message, no held message lost.
func testRaidOnTwoReplicas(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	svcs := []*chat.Service{en.svc, en.second()}
	mod := en.users[chat.RoleModerator]
	must[chat.Filter](t)(en.svc.CreateFilter(en.ctx, mod, chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "spam", Action: chat.ActionStrike}))
	rs := raiders(en, "r", 60)
	patch(t, en, "general", chat.ChannelPatch{AutoShield: ptr(true)})
	var wg sync.WaitGroup
	var mu sync.Mutex
	held, sent := 0, 0
	for i, u := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := svcs[i%2].Send(en.ctx, chat.Held(u), chat.SendInput{Message: "raid from " + u.Name})
			if err != nil {
				t.Errorf("raider %d: %v", i, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if r.Held != nil {
				held++
			} else {
				sent++
			}
		}()
	}
	wg.Wait()
	if evs := en.events("general")[chat.EventShieldMode]; len(evs) != 1 {
		t.Fatalf("%d shield activations, want 1: %+v", len(evs), evs)
	}
	if c := must[chat.Channel](t)(en.svc.Channel(en.ctx, nil, "general")); !c.ShieldOn(en.clock.Now()) {
		t.Fatalf("shield off after the raid: %+v", c)
	}
	hs := must[[]chat.HeldMessage](t)(en.svc.HeldMessages(en.ctx, mod, "general"))
	ms := must[[]chat.Message](t)(en.svc.Messages(en.ctx, nil, "", chat.Page{Limit: 200}))
	// Sends that read the settings before the trip go through: what
	// matters is that each message is in exactly one place.
	if len(hs) != held || len(ms) != sent || held+sent != len(rs) {
		t.Fatalf("held %d (queue %d), sent %d (stored %d) of %d", held, len(hs), sent, len(ms), len(rs))
	}
	// Both replicas end the shield at once when it is due: one end.
	en.clock.Advance(chat.DefaultShieldQuietSeconds * time.Second)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := svcs[i%2].EndAutoShield(en.ctx, "general"); err != nil {
				t.Errorf("end shield: %v", err)
			}
		}()
	}
	wg.Wait()
	if evs := en.events("general")[chat.EventShieldMode]; len(evs) != 2 || evs[1].Shield.On {
		t.Fatalf("shield events after the end on two replicas = %+v", evs)
	}
	if n := autoShieldOffs(t, en, "general"); n != 1 {
		t.Fatalf("%d automod shield_off entries after the end on two replicas, want 1", n)
	}

	// Blocked messages on both replicas at once: counted together, one
	// activation.
	must[chat.Filter](t)(en.svc.CreateFilter(en.ctx, mod, chat.FilterInput{Channel: "blocked", Kind: chat.FilterBlockedTerm, Pattern: "junk", Action: chat.ActionBlock}))
	patch(t, en, "blocked", chat.ChannelPatch{AutoShield: ptr(true), AutoShieldBlocked: ptr(10)})
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := svcs[i%2].Send(en.ctx, chat.Held(rs[i]), chat.SendInput{Channel: "blocked", Message: "junk"})
			if chat.KindOf(err) != chat.KindBlocked {
				t.Errorf("blocked send %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if evs := en.events("blocked")[chat.EventShieldMode]; len(evs) != 1 || !evs[0].Shield.On {
		t.Fatalf("%d shield activations from blocked messages, want 1: %+v", len(evs), evs)
	}

	// One user's strikes from both replicas at once: one per message.
	s := en.newUser("striker", chat.RoleViewer)
	const hits = 3
	strikes := make(chan int, hits)
	for i := range hits {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := svcs[i%2].Send(en.ctx, chat.Held(s), chat.SendInput{Channel: "strikes", Message: "spam"})
			if ce, ok := chat.AsError(err); ok && ce.Consequence != nil {
				strikes <- ce.Consequence.Strike
			} else if chat.KindOf(err) != chat.KindForbidden { // timed out by a strike that came first
				t.Errorf("strike %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	close(strikes)
	seen := map[int]bool{}
	for n := range strikes {
		if seen[n] {
			t.Fatalf("strike %d counted twice", n)
		}
		seen[n] = true
	}
	if !seen[1] {
		t.Fatalf("strikes %v: the first is missing", seen)
	}
}

// autoShieldOffs counts the raid watch's shield_off entries in a
// channel's moderation log.
func autoShieldOffs(t *testing.T, en *env, channel string) int {
	t.Helper()
	page := must[chat.ModLogPage](t)(en.svc.ModLog(en.ctx, en.users[chat.RoleBroadcaster], channel, chat.MaxModLogLimit, ""))
	n := 0
	for _, e := range page.Entries {
		if e.Action == chat.ModShieldOff && e.Actor.ID == chat.AutomodUser.ID && e.Rule == chat.RuleRaidWatch {
			n++
		}
	}
	return n
}
