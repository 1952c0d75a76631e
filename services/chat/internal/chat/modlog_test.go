package chat_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// modlog reads a channel's whole moderation log as mod, page by page of
// two, newest first, checking that the pages join up.
func (e *env) modlog(channel string) []chat.ModEntry {
	e.t.Helper()
	mod := e.users[chat.RoleModerator]
	var out []chat.ModEntry
	before := ""
	for range 1000 {
		p := must[chat.ModLogPage](e.t)(e.svc.ModLog(e.ctx, mod, channel, 2, before))
		out = append(out, p.Entries...)
		if p.Next == "" {
			return out
		}
		if len(p.Entries) != 2 || p.Next != p.Entries[1].ID {
			e.t.Fatalf("page %+v: next %q", p.Entries, p.Next)
		}
		before = p.Next
	}
	e.t.Fatal("the moderation log does not end")
	return nil
}

// actions lists the entries' actions, oldest first.
func actions(es []chat.ModEntry) []chat.ModAction {
	out := make([]chat.ModAction, len(es))
	for i, e := range es {
		out[len(es)-1-i] = e.Action
	}
	return out
}

func count(es []chat.ModEntry, a chat.ModAction) int {
	n := 0
	for _, e := range es {
		if e.Action == a {
			n++
		}
	}
	return n
}

// testModLog: every moderation action in a channel, manual or automatic,
// is one entry with its actor, target and details, newest first, with
// cursors; moderators only; kept for the window.
func testModLog(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	admin, mod, vip, v := en.users[chat.RoleBroadcaster], en.users[chat.RoleModerator], en.users[chat.RoleVIP], en.users[chat.RoleViewer]
	ctx, ch := en.ctx, "general"
	step := func() { en.clock.Advance(time.Second) }

	m1 := en.send(v, "hello").Message
	own := en.send(mod, "mine").Message
	must[chat.Message](t)(en.svc.DeleteMessage(ctx, mod, ch, own.ID)) // own: not moderation
	must[chat.Message](t)(en.svc.DeleteMessage(ctx, mod, ch, m1.ID))
	must[chat.Message](t)(en.svc.DeleteMessage(ctx, mod, ch, m1.ID)) // again: nothing happens
	step()
	must[chat.Member](t)(en.svc.Timeout(ctx, mod, v.ID, chat.TimeoutInput{Seconds: 60, Reason: "calm down", Channel: ch}))
	step()
	must[chat.Member](t)(en.svc.Unban(ctx, mod, v.ID, ch))
	must[chat.Member](t)(en.svc.Ban(ctx, mod, v.ID, chat.BanInput{Reason: "spam", Channel: ch}))
	must[chat.Member](t)(en.svc.Unban(ctx, mod, v.ID, ch))
	// Platform-wide: recorded in the channel it is announced in.
	must[chat.Member](t)(en.svc.Timeout(ctx, mod, v.ID, chat.TimeoutInput{Seconds: 5}))
	must[chat.Member](t)(en.svc.Unban(ctx, mod, v.ID, ""))
	patch(t, en, ch, chat.ChannelPatch{Shield: ptr(true)})
	patch(t, en, ch, chat.ChannelPatch{Shield: ptr(false)})
	en.clock.Advance(time.Hour)

	f := must[chat.Filter](t)(en.svc.CreateFilter(ctx, mod, chat.FilterInput{Channel: ch, Kind: chat.FilterBlockedTerm, Pattern: "badword", Action: chat.ActionBlock}))
	_, err := en.sendIn(v, ch, "a badword")
	wantKind(t, err, chat.KindBlocked)
	fs := must[chat.Filter](t)(en.svc.CreateFilter(ctx, mod, chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "strikeme", Action: chat.ActionStrike}))
	_, err = en.sendIn(v, ch, "strikeme")
	consequence(t, err, chat.ActionStrike, chat.PenaltyWarn)
	_, err = en.sendIn(v, ch, "strikeme again")
	consequence(t, err, chat.ActionStrike, chat.PenaltyTimeout)
	en.clock.Advance(time.Hour)
	fh := must[chat.Filter](t)(en.svc.CreateFilter(ctx, mod, chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "review*", Action: chat.ActionHold}))
	h1 := en.send(v, "review one").Held
	h2 := en.send(v, "review two").Held
	approved := must[chat.Message](t)(en.svc.ApproveHeld(ctx, mod, ch, h1.ID))
	must[struct{}](t)(struct{}{}, en.svc.DenyHeld(ctx, mod, ch, h2.ID))

	must[chat.Member](t)(en.svc.SetChannelRole(ctx, admin, ch, vip.ID, chat.RoleModerator))
	must[chat.Member](t)(en.svc.SetChannelRole(ctx, admin, ch, vip.ID, chat.RoleViewer))

	log := en.modlog(ch)
	want := []chat.ModAction{chat.ModDelete, chat.ModTimeout, chat.ModUnban, chat.ModBan, chat.ModUnban, chat.ModTimeout, chat.ModUnban,
		chat.ModShieldOn, chat.ModShieldOff, chat.ModFilterHit, chat.ModFilterHit, chat.ModFilterHit, chat.ModFilterHit, chat.ModFilterHit,
		chat.ModHeldApprove, chat.ModHeldDeny, chat.ModRoleSet, chat.ModRoleRemove}
	if got := actions(log); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("actions = %v\nwant      %v", got, want)
	}
	ids := map[string]bool{}
	for i, le := range log {
		if le.ID == "" || ids[le.ID] || le.Channel != ch || le.At.IsZero() {
			t.Fatalf("entry %d = %+v", i, le)
		}
		ids[le.ID] = true
		id, ok := chat.ParseModID(le.ID)
		if prev, _ := chat.ParseModID(log[max(i-1, 0)].ID); !ok || i > 0 && !id.Less(prev) {
			t.Fatalf("entry %d id %q after %q", i, le.ID, log[max(i-1, 0)].ID)
		}
	}
	at := func(i int) chat.ModEntry { return log[len(log)-1-i] } // oldest first
	if d := at(0); d.Actor.ID != mod.ID || d.Target == nil || d.Target.ID != v.ID || d.MessageID != m1.ID {
		t.Fatalf("delete = %+v", d)
	}
	if to := at(1); to.Actor.ID != mod.ID || to.Target.ID != v.ID || to.Reason != "calm down" || to.Until == nil {
		t.Fatalf("timeout = %+v", to)
	}
	if b := at(3); b.Reason != "spam" || b.Target.ID != v.ID {
		t.Fatalf("ban = %+v", b)
	}
	if s := at(7); s.Actor.ID != mod.ID || s.Target != nil {
		t.Fatalf("shield on = %+v", s)
	}
	if hit := at(9); hit.Actor.ID != chat.AutomodUser.ID || hit.Rule != f.ID || hit.FilterAction != chat.ActionBlock || hit.Target.ID != v.ID {
		t.Fatalf("block hit = %+v", hit)
	}
	if w, to := at(10), at(11); w.Rule != fs.ID || w.Penalty != chat.PenaltyWarn || to.Penalty != chat.PenaltyTimeout || to.Until == nil {
		t.Fatalf("strike hits = %+v, %+v", w, to)
	}
	if hold := at(12); hold.Rule != fh.ID || hold.FilterAction != chat.ActionHold || hold.HeldID != h1.ID || at(13).HeldID != h2.ID {
		t.Fatalf("hold hit = %+v", hold)
	}
	if a, d := at(14), at(15); a.HeldID != h1.ID || a.MessageID != approved.ID || a.Target.ID != v.ID || d.HeldID != h2.ID || d.Actor.ID != mod.ID {
		t.Fatalf("review = %+v, %+v", a, d)
	}
	if rs, rr := at(16), at(17); rs.Role != chat.RoleModerator || rs.Target.ID != vip.ID || rs.Actor.ID != admin.ID || rr.Role != chat.RoleModerator {
		t.Fatalf("roles = %+v, %+v", rs, rr)
	}
	// One page, default limit; other channels have their own log.
	if p := must[chat.ModLogPage](t)(en.svc.ModLog(ctx, mod, ch, 0, "")); len(p.Entries) != len(log) || p.Next != "" {
		t.Fatalf("default page: %d entries, next %q", len(p.Entries), p.Next)
	}
	if p := must[chat.ModLogPage](t)(en.svc.ModLog(ctx, mod, "elsewhere", 0, "")); len(p.Entries) != 0 {
		t.Fatalf("another channel's log = %+v", p)
	}
	for _, bad := range []struct {
		limit  int
		before string
	}{{-1, ""}, {chat.MaxModLogLimit + 1, ""}, {0, "x"}, {0, "12"}, {0, "1-x"}} {
		_, err := en.svc.ModLog(ctx, mod, ch, bad.limit, bad.before)
		wantKind(t, err, chat.KindInvalid)
	}
	// Moderators of the channel only: a moderator given there reads it.
	for _, u := range []chat.User{v, vip} {
		_, err := en.svc.ModLog(ctx, u, ch, 0, "")
		wantKind(t, err, chat.KindForbidden)
	}
	chanMod := en.newUser("chanmod", chat.RoleViewer)
	must[chat.Member](t)(en.svc.SetChannelRole(ctx, admin, "other", chanMod.ID, chat.RoleModerator))
	_, err = en.svc.ModLog(ctx, chanMod, ch, 0, "")
	wantKind(t, err, chat.KindForbidden)
	must[chat.ModLogPage](t)(en.svc.ModLog(ctx, chanMod, "other", 0, ""))

	// The window: entries older than it are not shown, and the next
	// write forgets them.
	en.clock.Advance(chat.ModLogWindow + time.Minute)
	if p := must[chat.ModLogPage](t)(en.svc.ModLog(ctx, mod, ch, 0, "")); len(p.Entries) != 0 {
		t.Fatalf("entries past the window: %+v", p.Entries)
	}
	must[chat.Member](t)(en.svc.Ban(ctx, mod, v.ID, chat.BanInput{Channel: ch}))
	if log := en.modlog(ch); len(log) != 1 || log[0].Action != chat.ModBan {
		t.Fatalf("log after the window = %+v", log)
	}
	// An entry dated before the last one (another replica's clock behind)
	// still goes after it.
	must[struct{}](t)(struct{}{}, en.store.AppendModLog(ctx, chat.ModEntry{Channel: ch, Action: chat.ModUnban, Actor: mod.Ref(),
		At: en.clock.Now().Add(-time.Minute)}))
	if log := en.modlog(ch); len(log) != 2 || log[0].Action != chat.ModUnban {
		t.Fatalf("log after a late entry = %+v", log)
	}
}

// testModLogBound: a channel keeps at most MaxModLogPerChannel entries,
// trimmed on write, the newest.
func testModLogBound(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	mod := en.users[chat.RoleModerator]
	const extra = 5
	n := chat.MaxModLogPerChannel + extra
	var wg sync.WaitGroup
	work := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				err := en.store.AppendModLog(en.ctx, chat.ModEntry{Channel: "raided", Action: chat.ModFilterHit, Actor: chat.AutomodUser,
					Rule: fmt.Sprint(i), At: en.clock.Now()})
				if err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	total := 0
	before := ""
	for {
		p := must[chat.ModLogPage](t)(en.svc.ModLog(en.ctx, mod, "raided", chat.MaxModLogLimit, before))
		total += len(p.Entries)
		if p.Next == "" {
			break
		}
		before = p.Next
	}
	if total != chat.MaxModLogPerChannel {
		t.Fatalf("%d entries kept of %d, want %d", total, n, chat.MaxModLogPerChannel)
	}
}

// testUserMessagesAndPurge: a user's recent messages in a channel, for
// moderators; a purge tombstones them, as live events, and is one entry.
func testUserMessagesAndPurge(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	mod, mod2, v, sub := en.users[chat.RoleModerator], en.newUser("mod_two", chat.RoleModerator), en.users[chat.RoleViewer], en.users[chat.RoleSubscriber]
	ctx, ch := en.ctx, "general"
	var mine []int64
	for i := range 5 {
		mine = append(mine, en.send(v, fmt.Sprintf("spam %d", i)).Message.ID)
		en.send(sub, fmt.Sprintf("fine %d", i))
	}
	must[chat.Message](t)(en.svc.DeleteMessage(ctx, mod, ch, mine[0]))
	if _, err := en.sendIn(v, "other", "elsewhere"); err != nil {
		t.Fatal(err)
	}
	ms := must[[]chat.Message](t)(en.svc.UserMessages(ctx, mod, ch, v.ID, 0))
	if len(ms) != 4 || ms[0].ID != mine[4] || ms[3].ID != mine[1] {
		t.Fatalf("user messages = %+v", ms)
	}
	if ms := must[[]chat.Message](t)(en.svc.UserMessages(ctx, mod, ch, v.ID, 2)); len(ms) != 2 || ms[0].ID != mine[4] {
		t.Fatalf("limit 2 = %+v", ms)
	}
	for _, l := range []int{-1, chat.MaxUserMessages + 1} {
		_, err := en.svc.UserMessages(ctx, mod, ch, v.ID, l)
		wantKind(t, err, chat.KindInvalid)
	}
	_, err := en.svc.UserMessages(ctx, sub, ch, v.ID, 0)
	wantKind(t, err, chat.KindForbidden)

	// Purge: moderators, on lower roles only, with a bounded reason.
	_, err = en.svc.Purge(ctx, sub, ch, v.ID, chat.PurgeInput{})
	wantKind(t, err, chat.KindForbidden)
	_, err = en.svc.Purge(ctx, mod, ch, mod2.ID, chat.PurgeInput{})
	wantKind(t, err, chat.KindForbidden)
	_, err = en.svc.Purge(ctx, mod, ch, v.ID, chat.PurgeInput{Reason: strings.Repeat("x", 501)})
	wantKind(t, err, chat.KindInvalid)
	_, err = en.svc.Purge(ctx, mod, ch, "nobody", chat.PurgeInput{})
	wantKind(t, err, chat.KindNotFound)
	before := len(en.events(ch)[chat.EventMessageDeleted])
	res := must[chat.PurgeResult](t)(en.svc.Purge(ctx, mod, ch, v.ID, chat.PurgeInput{Reason: "raid"}))
	if res.Deleted != 4 {
		t.Fatalf("purged %d, want 4", res.Deleted)
	}
	if evs := en.events(ch)[chat.EventMessageDeleted]; len(evs) != before+4 {
		t.Fatalf("%d message_deleted events, want %d", len(evs), before+4)
	}
	all := must[[]chat.Message](t)(en.svc.Messages(ctx, nil, ch, chat.Page{}))
	for _, m := range all {
		if m.User.ID == v.ID && !m.Deleted || m.User.ID == sub.ID && m.Deleted {
			t.Fatalf("after the purge: %+v", m)
		}
	}
	if ms := must[[]chat.Message](t)(en.svc.UserMessages(ctx, mod, ch, v.ID, 0)); len(ms) != 0 {
		t.Fatalf("user messages after the purge = %+v", ms)
	}
	if ms := must[[]chat.Message](t)(en.svc.Messages(ctx, nil, "other", chat.Page{})); len(ms) != 1 || ms[0].Deleted {
		t.Fatalf("another channel was purged: %+v", ms)
	}
	log := en.modlog(ch)
	if len(log) != 2 || log[0].Action != chat.ModPurge || log[0].Count != 4 || log[0].Reason != "raid" || log[0].Target.ID != v.ID || log[0].Actor.ID != mod.ID {
		t.Fatalf("log = %+v", log)
	}
	if res := must[chat.PurgeResult](t)(en.svc.Purge(ctx, mod, ch, v.ID, chat.PurgeInput{})); res.Deleted != 0 {
		t.Fatalf("second purge deleted %d", res.Deleted)
	}
}

// testModLogOnTwoReplicas: two replicas handling the same raid record
// one automatic shield; two moderators approving, denying or deleting the
// same thing at once record it once.
func testModLogOnTwoReplicas(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	svcs := []*chat.Service{en.svc, en.second()}
	mod := en.users[chat.RoleModerator]
	rs := raiders(en, "r", 53)
	late := rs[50:]
	rs = rs[:50]
	patch(t, en, "general", chat.ChannelPatch{AutoShield: ptr(true)})
	var wg sync.WaitGroup
	for i, u := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := svcs[i%2].Send(en.ctx, chat.Held(u), chat.SendInput{Message: "raid from " + u.Name}); err != nil {
				t.Errorf("raider %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	log := en.modlog("general")
	if n := count(log, chat.ModShieldOn); n != 1 {
		t.Fatalf("%d shield_on entries, want 1: %+v", n, log)
	}
	for _, le := range log {
		if le.Action == chat.ModShieldOn && (le.Actor.ID != chat.AutomodUser.ID || le.Rule != chat.RuleRaidWatch || le.Until == nil) {
			t.Fatalf("automatic shield entry = %+v", le)
		}
	}

	for _, u := range late { // held: shield mode reviews first messages
		en.send(u, "late "+u.Name)
	}
	hs := must[[]chat.HeldMessage](t)(en.svc.HeldMessages(en.ctx, mod, "general"))
	if len(hs) < 2 {
		t.Fatalf("%d held messages", len(hs))
	}
	race := func(fn func(s *chat.Service) error) {
		var wg sync.WaitGroup
		for _, s := range svcs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := fn(s); err != nil && chat.KindOf(err) != chat.KindNotFound && chat.KindOf(err) != chat.KindConflict {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	race(func(s *chat.Service) error { _, err := s.ApproveHeld(en.ctx, mod, "general", hs[0].ID); return err })
	race(func(s *chat.Service) error { return s.DenyHeld(en.ctx, mod, "general", hs[1].ID) })
	ms := must[[]chat.Message](t)(en.svc.Messages(en.ctx, nil, "general", chat.Page{}))
	if len(ms) == 0 {
		t.Fatal("no raider's message was stored")
	}
	m := ms[0]
	race(func(s *chat.Service) error { _, err := s.DeleteMessage(en.ctx, mod, "general", m.ID); return err })
	log = en.modlog("general")
	for _, a := range []chat.ModAction{chat.ModHeldApprove, chat.ModHeldDeny, chat.ModDelete} {
		if n := count(log, a); n != 1 {
			t.Fatalf("%d %s entries, want 1", n, a)
		}
	}
}
