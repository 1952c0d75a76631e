package chat_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// community is a channel "alpha" with a broadcaster (alice) named by the
// platform's administrator and a moderator (bob) named by alice; both are
// viewers platform-wide.
type community struct {
	*env
	alice, bob chat.User
}

func newCommunity(t *testing.T, e engine, limits chat.Limits) community {
	t.Helper()
	en := newEnvLimits(t, e, 1000, true, limits)
	c := community{env: en, alice: en.newUser("alice", chat.RoleViewer), bob: en.newUser("bob", chat.RoleViewer)}
	must[chat.Member](t)(en.svc.SetChannelRole(en.ctx, en.users[chat.RoleBroadcaster], "alpha", c.alice.ID, chat.RoleBroadcaster))
	must[chat.Member](t)(en.svc.SetChannelRole(en.ctx, c.alice, "Alpha", c.bob.ID, chat.RoleModerator))
	return c
}

func (c community) sendIn(u chat.User, channel, text string) (chat.SendResult, error) {
	return c.svc.Send(c.ctx, chat.Held(u), chat.SendInput{Channel: channel, Message: text})
}

func (c community) mustSendIn(u chat.User, channel, text string) chat.SendResult {
	c.t.Helper()
	res, err := c.sendIn(u, channel, text)
	if err != nil {
		c.t.Fatalf("send %q as %s in %s: %v", text, u.Name, channel, err)
	}
	return res
}

func testChannelRoles(t *testing.T, e engine) {
	c := newCommunity(t, e, chat.Limits{ChannelRoles: 3})
	admin, mod, v := c.users[chat.RoleBroadcaster], c.users[chat.RoleModerator], c.users[chat.RoleViewer]

	// The one function: the higher of the platform-wide role and the role
	// given in the channel.
	for _, tc := range []struct {
		u       chat.User
		channel string
		want    chat.Role
	}{
		{c.alice, "alpha", chat.RoleBroadcaster}, {c.alice, "beta", chat.RoleViewer},
		{c.bob, "alpha", chat.RoleModerator}, {c.bob, "beta", chat.RoleViewer},
		{mod, "alpha", chat.RoleModerator}, {admin, "alpha", chat.RoleBroadcaster},
	} {
		m := must[chat.Member](t)(c.svc.Member(c.ctx, tc.u, tc.channel))
		if m.Role() != tc.want {
			t.Errorf("role of %s in %s = %s, want %s", tc.u.Name, tc.channel, m.Role(), tc.want)
		}
	}
	// A platform-wide moderator above a role given lower keeps its own.
	must[chat.Member](t)(c.svc.SetChannelRole(c.ctx, c.alice, "alpha", mod.ID, chat.RoleVIP))
	if m := must[chat.Member](t)(c.svc.Member(c.ctx, mod, "alpha")); m.Role() != chat.RoleModerator {
		t.Fatalf("platform moderator given vip in alpha = %s", m.Role())
	}

	// Messages show the role held where they are sent.
	if r := c.mustSendIn(c.bob, "alpha", "hi").Message.User.Role; r != chat.RoleModerator {
		t.Fatalf("bob's message in alpha shows %s", r)
	}
	if r := c.mustSendIn(c.bob, "beta", "hi").Message.User.Role; r != chat.RoleViewer {
		t.Fatalf("bob's message in beta shows %s", r)
	}

	// Who names whom.
	_, err := c.svc.SetChannelRole(c.ctx, c.alice, "alpha", v.ID, chat.RoleBroadcaster)
	wantKind(t, err, chat.KindForbidden) // only the platform names a broadcaster
	_, err = c.svc.SetChannelRole(c.ctx, c.alice, "beta", v.ID, chat.RoleModerator)
	wantKind(t, err, chat.KindForbidden) // alice is nobody in beta
	_, err = c.svc.SetChannelRole(c.ctx, c.bob, "alpha", v.ID, chat.RoleVIP)
	wantKind(t, err, chat.KindForbidden) // moderators do not change roles
	_, err = c.svc.SetChannelRole(c.ctx, mod, "alpha", v.ID, chat.RoleVIP)
	wantKind(t, err, chat.KindForbidden) // nor do platform-wide ones
	_, err = c.svc.SetChannelRole(c.ctx, c.alice, "alpha", c.alice.ID, chat.RoleViewer)
	wantKind(t, err, chat.KindForbidden) // alice cannot step down herself
	_, err = c.svc.SetChannelRole(c.ctx, c.alice, "alpha", "nobody", chat.RoleVIP)
	wantKind(t, err, chat.KindNotFound)
	_, err = c.svc.SetChannelRole(c.ctx, c.alice, "no such!", v.ID, chat.RoleVIP)
	wantKind(t, err, chat.KindInvalid)

	// The list is for the channel's moderators; highest first.
	_, err = c.svc.ChannelRoles(c.ctx, v, "alpha")
	wantKind(t, err, chat.KindForbidden)
	_, err = c.svc.ChannelRoles(c.ctx, c.bob, "beta")
	wantKind(t, err, chat.KindForbidden)
	got := must[[]chat.ChannelRole](t)(c.svc.ChannelRoles(c.ctx, c.bob, "alpha"))
	var names []string
	for _, r := range got {
		names = append(names, r.Name+":"+string(r.Role))
	}
	if strings.Join(names, " ") != "alice:broadcaster bob:moderator moderator_one:vip" {
		t.Fatalf("roles in alpha = %v", names)
	}

	// The cap (3 here) bounds the users holding a role in one channel;
	// changing a role held already is no new entry.
	_, err = c.svc.SetChannelRole(c.ctx, c.alice, "alpha", v.ID, chat.RoleSubscriber)
	if e := wantKind(t, err, chat.KindConflict); e.Reason != chat.ReasonLimit || e.Limit != 3 || !strings.Contains(e.Message, "CHAT_MAX_CHANNEL_ROLES") {
		t.Fatalf("past the cap: %+v", e)
	}
	must[chat.Member](t)(c.svc.SetChannelRole(c.ctx, c.alice, "alpha", mod.ID, chat.RoleSubscriber))
	// Taking one back (viewer) frees a place; taking back none is a no-op.
	must[chat.Member](t)(c.svc.SetChannelRole(c.ctx, c.alice, "alpha", mod.ID, chat.RoleViewer))
	must[chat.Member](t)(c.svc.SetChannelRole(c.ctx, c.alice, "alpha", mod.ID, chat.RoleViewer))
	must[chat.Member](t)(c.svc.SetChannelRole(c.ctx, c.alice, "alpha", v.ID, chat.RoleVIP))

	// A role change applies to a held sender's next send: a VIP skips slow
	// mode, a viewer again does not.
	must[chat.Channel](t)(c.svc.UpdateChannel(c.ctx, c.bob, "alpha", chat.ChannelPatch{SlowModeSeconds: ptr(30)}))
	_, err = c.svc.UpdateChannel(c.ctx, c.bob, "beta", chat.ChannelPatch{SlowModeSeconds: ptr(30)})
	wantKind(t, err, chat.KindForbidden)
	c.mustSendIn(v, "alpha", "one")
	c.mustSendIn(v, "alpha", "two")
	must[chat.Member](t)(c.svc.SetChannelRole(c.ctx, c.alice, "alpha", v.ID, chat.RoleViewer))
	c.mustSendIn(v, "alpha", "three")
	_, err = c.sendIn(v, "alpha", "four")
	wantKind(t, err, chat.KindSlowMode)

	// Only the platform removes a channel's broadcaster.
	_, err = c.svc.SetChannelRole(c.ctx, mod, "alpha", c.alice.ID, chat.RoleViewer)
	wantKind(t, err, chat.KindForbidden)
	must[chat.Member](t)(c.svc.SetChannelRole(c.ctx, admin, "alpha", c.alice.ID, chat.RoleViewer))
	_, err = c.svc.SetChannelRole(c.ctx, c.alice, "alpha", c.bob.ID, chat.RoleVIP)
	wantKind(t, err, chat.KindForbidden)
}

func testChannelModeration(t *testing.T, e engine) {
	c := newCommunity(t, e, chat.Limits{})
	mod, v := c.users[chat.RoleModerator], c.users[chat.RoleViewer]

	// bob moderates alpha, not beta and not the platform.
	_, err := c.svc.Ban(c.ctx, c.bob, v.ID, chat.BanInput{})
	wantKind(t, err, chat.KindForbidden)
	_, err = c.svc.Ban(c.ctx, c.bob, v.ID, chat.BanInput{Channel: "beta"})
	wantKind(t, err, chat.KindForbidden)
	_, err = c.svc.Ban(c.ctx, c.bob, c.alice.ID, chat.BanInput{Channel: "alpha"})
	wantKind(t, err, chat.KindForbidden) // the channel's broadcaster
	_, err = c.svc.Ban(c.ctx, c.bob, mod.ID, chat.BanInput{Channel: "alpha"})
	wantKind(t, err, chat.KindForbidden) // a platform-wide moderator is one in alpha too
	_, err = c.svc.Timeout(c.ctx, c.bob, v.ID, chat.TimeoutInput{Channel: "alpha", Seconds: 0})
	wantKind(t, err, chat.KindInvalid)

	m := must[chat.Member](t)(c.svc.Ban(c.ctx, c.bob, v.ID, chat.BanInput{Channel: "alpha", Reason: "spam"}))
	if m.Channel != "alpha" || !m.Standing.Banned || m.Standing.ModReason != "spam" || m.User.Banned {
		t.Fatalf("banned in alpha = %+v", m)
	}
	_, err = c.sendIn(v, "alpha", "let me in")
	if e := wantKind(t, err, chat.KindForbidden); e.Reason != "banned" || !strings.Contains(e.Message, "alpha") {
		t.Fatalf("send while banned in alpha: %+v", e)
	}
	c.mustSendIn(v, "beta", "fine here")
	_, err = c.svc.Ban(c.ctx, c.bob, v.ID, chat.BanInput{Channel: "alpha"})
	wantKind(t, err, chat.KindConflict)
	_, err = c.svc.Timeout(c.ctx, c.bob, v.ID, chat.TimeoutInput{Channel: "alpha", Seconds: 5})
	wantKind(t, err, chat.KindConflict)

	// The event is in alpha's log, marked as held there only.
	evs := must[[]chat.Event](t)(c.store.ReadEvents(c.ctx, "alpha", chat.Cursor{}, 100))
	last := evs[len(evs)-1]
	if last.Type != chat.EventUserBanned || last.Moderation == nil || last.Moderation.Scope != chat.ScopeChannel ||
		last.Moderation.User.ID != v.ID || last.Moderation.By.Role != chat.RoleModerator {
		t.Fatalf("ban event = %+v %+v", last, last.Moderation)
	}

	// Unban there lifts it there.
	m = must[chat.Member](t)(c.svc.Unban(c.ctx, c.bob, v.ID, "alpha"))
	if m.Standing.Banned || m.Standing.ModReason != "" {
		t.Fatalf("unbanned = %+v", m)
	}
	c.mustSendIn(v, "alpha", "back")

	// A timeout in alpha: refused there with until, beta untouched.
	m = must[chat.Member](t)(c.svc.Timeout(c.ctx, c.bob, v.ID, chat.TimeoutInput{Channel: "alpha", Seconds: 60}))
	until := c.clock.Now().Add(time.Minute)
	_, err = c.sendIn(v, "alpha", "hm")
	if e := wantKind(t, err, chat.KindForbidden); e.Reason != "timed_out" || !e.Until.Equal(until) {
		t.Fatalf("send while timed out in alpha: %+v", e)
	}
	c.mustSendIn(v, "beta", "still here")
	c.clock.Advance(time.Minute)
	c.mustSendIn(v, "alpha", "and back")

	// A platform-wide ban needs a platform-wide role, and holds in alpha.
	must[chat.Member](t)(c.svc.Ban(c.ctx, mod, v.ID, chat.BanInput{}))
	_, err = c.sendIn(v, "alpha", "x")
	wantKind(t, err, chat.KindForbidden)
	// bob cannot lift it: it is not alpha's.
	_, err = c.svc.Unban(c.ctx, c.bob, v.ID, "")
	wantKind(t, err, chat.KindForbidden)

	// A moderator of alpha deletes there only.
	msg := c.mustSendIn(c.alice, "beta", "mine").Message
	_, err = c.svc.DeleteMessage(c.ctx, c.bob, "beta", msg.ID)
	wantKind(t, err, chat.KindForbidden)
	sub := c.users[chat.RoleSubscriber]
	msg = c.mustSendIn(sub, "alpha", "delete me").Message
	must[chat.Message](t)(c.svc.DeleteMessage(c.ctx, c.bob, "alpha", msg.ID))
}

func testChannelCommandsAndFilters(t *testing.T, e engine) {
	c := newCommunity(t, e, chat.Limits{Commands: 2, Filters: 2})
	mod, v := c.users[chat.RoleModerator], c.users[chat.RoleViewer]

	must[chat.Command](t)(c.svc.CreateCommand(c.ctx, mod, chat.CommandInput{Command: "!so", Response: "platform", CooldownSeconds: ptr(0)}))
	_, err := c.svc.CreateCommand(c.ctx, c.bob, chat.CommandInput{Command: "!x", Response: "no"})
	wantKind(t, err, chat.KindForbidden) // platform-wide needs a platform role
	_, err = c.svc.CreateCommand(c.ctx, c.bob, chat.CommandInput{Command: "!x", Response: "no", Channel: "beta"})
	wantKind(t, err, chat.KindForbidden)
	own := must[chat.Command](t)(c.svc.CreateCommand(c.ctx, c.bob, chat.CommandInput{Command: "!so", Response: "alpha ${count}", Channel: "alpha", CooldownSeconds: ptr(0)}))
	if own.Channel != "alpha" {
		t.Fatalf("channel command = %+v", own)
	}
	// Its own command answers in alpha; the platform's elsewhere.
	if r := c.mustSendIn(v, "alpha", "!so").Reply; r == nil || r.Text != "alpha 1" {
		t.Fatalf("reply in alpha = %+v", r)
	}
	if r := c.mustSendIn(v, "beta", "!so").Reply; r == nil || r.Text != "platform" {
		t.Fatalf("reply in beta = %+v", r)
	}
	if got := must[chat.Command](t)(c.svc.Command(c.ctx, nil, "alpha", "so")); got.Channel != "alpha" || got.Count != 1 {
		t.Fatalf("!so as alpha resolves it = %+v", got)
	}
	if got := must[chat.Command](t)(c.svc.Command(c.ctx, nil, "", "so")); got.Channel != "" || got.Count != 1 {
		t.Fatalf("platform !so = %+v", got)
	}
	// Quotas count per scope: alpha holds two, like the platform.
	must[chat.Command](t)(c.svc.CreateCommand(c.ctx, c.bob, chat.CommandInput{Command: "!two", Response: "2", Channel: "alpha"}))
	_, err = c.svc.CreateCommand(c.ctx, c.bob, chat.CommandInput{Command: "!three", Response: "3", Channel: "alpha"})
	if e := wantKind(t, err, chat.KindConflict); e.Reason != chat.ReasonLimit {
		t.Fatalf("third alpha command: %+v", e)
	}
	must[chat.Command](t)(c.svc.CreateCommand(c.ctx, mod, chat.CommandInput{Command: "!two", Response: "platform 2"}))
	list := must[[]chat.Command](t)(c.svc.Commands(c.ctx, nil, "alpha"))
	var names []string
	for _, cmd := range list {
		names = append(names, cmd.Name+"@"+cmd.Channel)
	}
	if strings.Join(names, " ") != "!so@alpha !two@alpha" {
		t.Fatalf("commands answering in alpha = %v", names)
	}
	if list := must[[]chat.Command](t)(c.svc.Commands(c.ctx, nil, "")); len(list) != 2 || list[0].Channel != "" {
		t.Fatalf("platform commands = %+v", list)
	}
	resp := "changed"
	_, err = c.svc.UpdateCommand(c.ctx, c.bob, "", "so", chat.CommandPatch{Response: &resp})
	wantKind(t, err, chat.KindForbidden)
	must[chat.Command](t)(c.svc.UpdateCommand(c.ctx, c.bob, "alpha", "so", chat.CommandPatch{Response: &resp}))
	must[struct{}](t)(struct{}{}, c.svc.DeleteCommand(c.ctx, c.bob, "alpha", "so"))
	if r := c.mustSendIn(v, "alpha", "!so").Reply; r == nil || r.Text != "platform" {
		t.Fatalf("reply in alpha once its own is gone = %+v", r)
	}

	// Filters: the platform's run first, then the channel's.
	must[chat.Filter](t)(c.svc.CreateFilter(c.ctx, mod, chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "darn"}))
	_, err = c.svc.CreateFilter(c.ctx, c.bob, chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "x"})
	wantKind(t, err, chat.KindForbidden)
	must[chat.Filter](t)(c.svc.CreateFilter(c.ctx, c.bob, chat.FilterInput{Channel: "alpha", Kind: chat.FilterRegex, Pattern: "darn|heck"}))
	f2 := must[chat.Filter](t)(c.svc.CreateFilter(c.ctx, c.bob, chat.FilterInput{Channel: "alpha", Kind: chat.FilterBlockedTerm, Pattern: "gosh"}))
	_, err = c.svc.CreateFilter(c.ctx, c.bob, chat.FilterInput{Channel: "alpha", Kind: chat.FilterBlockedTerm, Pattern: "more"})
	if e := wantKind(t, err, chat.KindConflict); e.Reason != chat.ReasonLimit {
		t.Fatalf("third alpha filter: %+v", e)
	}
	_, err = c.sendIn(v, "alpha", "darn")
	if e := wantKind(t, err, chat.KindBlocked); e.Reason != string(chat.FilterBlockedTerm) {
		t.Fatalf("darn in alpha blocked by %+v, want the platform's blocked_term first", e)
	}
	_, err = c.sendIn(v, "alpha", "heck")
	if e := wantKind(t, err, chat.KindBlocked); e.Reason != string(chat.FilterRegex) {
		t.Fatalf("heck in alpha: %+v", e)
	}
	c.mustSendIn(v, "beta", "heck gosh")
	// bob is a moderator in alpha: its filters skip him there.
	c.mustSendIn(c.bob, "alpha", "heck")
	fs := must[[]chat.Filter](t)(c.svc.Filters(c.ctx, c.bob, "alpha"))
	if len(fs) != 2 || fs[0].Channel != "alpha" {
		t.Fatalf("alpha's filters = %+v", fs)
	}
	_, err = c.svc.Filters(c.ctx, c.bob, "")
	wantKind(t, err, chat.KindForbidden)
	wantKind(t, c.svc.DeleteFilter(c.ctx, c.bob, "", f2.ID), chat.KindForbidden)
	must[struct{}](t)(struct{}{}, c.svc.DeleteFilter(c.ctx, c.bob, "alpha", f2.ID))
	c.mustSendIn(v, "alpha", "gosh")
}

// testChannelOwnersAreChannels: what a channel owns counts the channel
// against CHAT_MAX_CHANNELS first, so the channels' own commands, filters
// and roles are bounded in all.
func testChannelOwnersAreChannels(t *testing.T, e engine) {
	en := newEnvLimits(t, e, 1000, true, chat.Limits{Channels: 1})
	admin, mod, v := en.users[chat.RoleBroadcaster], en.users[chat.RoleModerator], en.users[chat.RoleViewer]
	must[chat.Command](t)(en.svc.CreateCommand(en.ctx, mod, chat.CommandInput{Command: "!a", Response: "a", Channel: "alpha"}))
	must[chat.Filter](t)(en.svc.CreateFilter(en.ctx, mod, chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "a", Channel: "alpha"}))
	_, err := en.svc.CreateCommand(en.ctx, mod, chat.CommandInput{Command: "!b", Response: "b", Channel: "beta"})
	wantLimit(t, err, 1, "CHAT_MAX_CHANNELS")
	_, err = en.svc.CreateFilter(en.ctx, mod, chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "b", Channel: "beta"})
	wantLimit(t, err, 1, "CHAT_MAX_CHANNELS")
	_, err = en.svc.SetChannelRole(en.ctx, admin, "beta", v.ID, chat.RoleVIP)
	wantLimit(t, err, 1, "CHAT_MAX_CHANNELS")
	// Platform-wide ones are no channel's.
	must[chat.Command](t)(en.svc.CreateCommand(en.ctx, mod, chat.CommandInput{Command: "!b", Response: "b"}))
}

// testChannelFilterActions: a channel's own filter acts in the channel's
// scope (its ban, timeout and strikes hold there only), and the modes and
// the review queue ask the role held in the channel.
func testChannelFilterActions(t *testing.T, e engine) {
	c := newCommunity(t, e, chat.Limits{})
	add := func(in chat.FilterInput) {
		t.Helper()
		in.Channel = "alpha"
		must[chat.Filter](t)(c.svc.CreateFilter(c.ctx, c.bob, in))
	}
	add(chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "alphaban", Action: chat.ActionBan})
	add(chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "alphatimeout", Action: chat.ActionTimeout, TimeoutSeconds: 30})
	add(chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "alphastrike", Action: chat.ActionStrike})

	// ban: banned in alpha, not platform-wide; the event says so.
	b := c.newUser("banme", chat.RoleViewer)
	_, err := c.sendIn(b, "alpha", "alphaban")
	consequence(t, err, chat.ActionBan, chat.PenaltyBan)
	if u := must[chat.User](t)(c.svc.User(c.ctx, c.users[chat.RoleModerator], b.ID)); u.Banned {
		t.Fatalf("a channel filter banned platform-wide: %+v", u)
	}
	if m := must[chat.Member](t)(c.svc.Member(c.ctx, b, "alpha")); !m.Standing.Banned || !strings.Contains(m.Standing.ModReason, "automod") {
		t.Fatalf("standing in alpha after a ban filter = %+v", m.Standing)
	}
	_, err = c.sendIn(b, "alpha", "hello")
	if e := wantKind(t, err, chat.KindForbidden); e.Reason != "banned" {
		t.Fatalf("send in alpha after a ban filter: %+v", e)
	}
	c.mustSendIn(b, "beta", "alphaban is only a word here")
	bans := c.events("alpha")[chat.EventUserBanned]
	if len(bans) != 1 || bans[0].Moderation.Scope != chat.ScopeChannel || bans[0].Moderation.By.ID != chat.AutomodUser.ID {
		t.Fatalf("ban events in alpha = %+v", bans)
	}

	// timeout: in alpha only, until now+30 s.
	to := c.newUser("timeme", chat.RoleViewer)
	_, err = c.sendIn(to, "alpha", "alphatimeout")
	cq := consequence(t, err, chat.ActionTimeout, chat.PenaltyTimeout)
	until := c.clock.Now().Add(30 * time.Second)
	if cq.Until == nil || !cq.Until.Equal(until) {
		t.Fatalf("until = %v, want %v", cq.Until, until)
	}
	if u := must[chat.User](t)(c.svc.User(c.ctx, c.users[chat.RoleModerator], to.ID)); u.TimedOutUntil != nil {
		t.Fatalf("a channel filter timed out platform-wide: %+v", u)
	}
	_, err = c.sendIn(to, "alpha", "hello")
	if e := wantKind(t, err, chat.KindForbidden); e.Reason != "timed_out" || !e.Until.Equal(until) {
		t.Fatalf("send in alpha after a timeout filter: %+v", e)
	}
	c.mustSendIn(to, "beta", "fine")

	// strike: the ladder in alpha; the third strike's timeout is alpha's.
	s := c.newUser("strikeme", chat.RoleViewer)
	_, err = c.sendIn(s, "alpha", "alphastrike")
	if cq := consequence(t, err, chat.ActionStrike, chat.PenaltyWarn); cq.Strike != 1 {
		t.Fatalf("strike 1 = %+v", cq)
	}
	_, err = c.sendIn(s, "alpha", "alphastrike")
	if cq := consequence(t, err, chat.ActionStrike, chat.PenaltyTimeout); cq.Strike != 2 {
		t.Fatalf("strike 2 = %+v", cq)
	}
	c.mustSendIn(s, "beta", "fine")

	// A channel's VIP skips alpha's modes; a viewer's first message waits
	// for review, which alpha's moderator (bob) gives, and only there.
	vip := c.newUser("alphavip", chat.RoleViewer)
	must[chat.Member](t)(c.svc.SetChannelRole(c.ctx, c.alice, "alpha", vip.ID, chat.RoleVIP))
	must[chat.Channel](t)(c.svc.UpdateChannel(c.ctx, c.bob, "alpha", chat.ChannelPatch{FirstMessageReview: ptr(true)}))
	if r := c.mustSendIn(vip, "alpha", "first"); r.Held != nil {
		t.Fatalf("a channel VIP's first message was held: %+v", r.Held)
	}
	fresh := c.newUser("fresh", chat.RoleViewer)
	r := c.mustSendIn(fresh, "alpha", "first")
	if r.Held == nil {
		t.Fatalf("a viewer's first message was not held: %+v", r)
	}
	_, err = c.svc.HeldMessages(c.ctx, c.bob, "beta")
	wantKind(t, err, chat.KindForbidden)
	_, err = c.svc.HeldMessages(c.ctx, vip, "alpha")
	wantKind(t, err, chat.KindForbidden)
	if hs := must[[]chat.HeldMessage](t)(c.svc.HeldMessages(c.ctx, c.bob, "alpha")); len(hs) != 1 || hs[0].ID != r.Held.ID {
		t.Fatalf("alpha's queue = %+v", hs)
	}
	must[chat.Message](t)(c.svc.ApproveHeld(c.ctx, c.bob, "alpha", r.Held.ID))
}

// testOpenChannels (issue 41): viewers' first messages open channels in a
// pool of their own, so however many viewers squat new names the
// platform can still make channels; an open channel idle for
// OpenChannelIdle gives its place to a new one, and one written to keeps
// it; the platform's act in an open channel makes it the platform's.
func testOpenChannels(t *testing.T, e engine) {
	const max = 3
	en := newEnvLimits(t, e, 1000, true, chat.Limits{Channels: max})
	admin := en.users[chat.RoleBroadcaster]
	viewers := make([]chat.User, 6)
	for i := range viewers {
		viewers[i] = en.newUser(fmt.Sprintf("squatter%d", i), chat.RoleViewer)
	}
	sendIn := func(u chat.User, channel string) error {
		_, err := en.svc.Send(en.ctx, chat.Held(u), chat.SendInput{Channel: channel, Message: "hi " + channel})
		return err
	}
	for i, u := range viewers[:max] {
		if err := sendIn(u, fmt.Sprintf("squat%d", i)); err != nil {
			t.Fatalf("open channel %d: %v", i, err)
		}
	}
	for i, u := range viewers[max:] {
		wantLimit(t, sendIn(u, fmt.Sprintf("more%d", i)), max, "CHAT_MAX_CHANNELS")
	}
	// The platform's channels are untouched by the squatters: the admin
	// names a broadcaster in new channels up to the limit.
	bc := en.newUser("caster", chat.RoleViewer)
	for i := 0; i < max; i++ {
		must[chat.Member](t)(en.svc.SetChannelRole(en.ctx, admin, fmt.Sprintf("show%d", i), bc.ID, chat.RoleBroadcaster))
	}
	// Viewers write in the platform's channels and in open ones.
	if err := sendIn(viewers[4], "show0"); err != nil {
		t.Fatalf("a viewer in the platform's channel: %v", err)
	}
	if err := sendIn(viewers[5], "squat0"); err != nil {
		t.Fatalf("a viewer in an open channel: %v", err)
	}
	// Idle open channels are reclaimed; squat0 was written to just now.
	en.clock.Advance(chat.OpenChannelIdle - time.Minute)
	if err := sendIn(viewers[0], "squat0"); err != nil {
		t.Fatal(err)
	}
	en.clock.Advance(2 * time.Minute)
	if err := sendIn(viewers[3], "fresh1"); err != nil {
		t.Fatalf("a new open channel once idle ones are reclaimed: %v", err)
	}
	if err := sendIn(viewers[4], "fresh2"); err != nil {
		t.Fatalf("a second new open channel: %v", err)
	}
	wantLimit(t, sendIn(viewers[5], "fresh3"), max, "CHAT_MAX_CHANNELS")
	if err := sendIn(viewers[1], "squat0"); err != nil {
		t.Fatalf("the open channel written to kept its place: %v", err)
	}
	// A second replica sees the same pools.
	if en.second != nil {
		wantLimit(t, func() error {
			_, err := en.second().Send(en.ctx, chat.Held(viewers[2]), chat.SendInput{Channel: "fresh4", Message: "x"})
			return err
		}(), max, "CHAT_MAX_CHANNELS")
	}
}

// testClosedChannels: with CHAT_OPEN_CHANNELS off a viewer writes only
// where the platform made a channel.
func testClosedChannels(t *testing.T, e engine) {
	en := newEnvOptions(t, e, 1000, chat.Options{PublicRead: true, ClosedChannels: true})
	admin, v := en.users[chat.RoleBroadcaster], en.users[chat.RoleViewer]
	_, err := en.svc.Send(en.ctx, chat.Held(v), chat.SendInput{Channel: "nowhere", Message: "hi"})
	wantKind(t, err, chat.KindNotFound)
	if h := must[chat.Cursor](t)(en.store.Head(en.ctx, "nowhere")); h != (chat.Cursor{}) {
		t.Fatalf("a refused open channel has events: %v", h)
	}
	bc := en.newUser("caster", chat.RoleViewer)
	must[chat.Member](t)(en.svc.SetChannelRole(en.ctx, admin, "show", bc.ID, chat.RoleBroadcaster))
	must[chat.SendResult](t)(en.svc.Send(en.ctx, chat.Held(v), chat.SendInput{Channel: "show", Message: "hi"}))
	must[chat.SendResult](t)(en.svc.Send(en.ctx, chat.Held(admin), chat.SendInput{Channel: "news", Message: "the platform opens it"}))
	must[chat.SendResult](t)(en.svc.Send(en.ctx, chat.Held(v), chat.SendInput{Channel: "news", Message: "hi"}))
}
