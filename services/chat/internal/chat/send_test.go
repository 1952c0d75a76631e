package chat_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/redisstore"
)

// testHeldSenderReadAgain: a Held sender (a WebSocket session's user) is
// read again on every send, so what happened since it authenticated
// applies: a demotion (slow mode now holds), a ban, a deletion.
func testHeldSenderReadAgain(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	admin, mod := en.users[chat.RoleBroadcaster], en.users[chat.RoleModerator]
	held := en.newUser("held_vip", chat.RoleVIP)
	ten := 10
	must[chat.Channel](t)(en.svc.UpdateChannel(en.ctx, mod, "general", chat.ChannelPatch{SlowModeSeconds: &ten}))
	en.send(held, "one")
	en.send(held, "two") // a VIP skips slow mode
	must[chat.User](t)(en.svc.SetRole(en.ctx, admin, held.ID, chat.RoleViewer))
	en.send(held, "three") // as a viewer now: this one closes the gate
	_, err := en.svc.Send(en.ctx, chat.Held(held), chat.SendInput{Message: "four"})
	if f := wantKind(t, err, chat.KindSlowMode); f.Reason != "slow_mode" || f.RetryAfter != 10*time.Second {
		t.Fatalf("demoted held sender: %+v", f)
	}
	must[chat.Member](t)(en.svc.Ban(en.ctx, mod, held.ID, chat.BanInput{}))
	en.clock.Advance(time.Minute)
	_, err = en.svc.Send(en.ctx, chat.Held(held), chat.SendInput{Message: "banned"})
	wantKind(t, err, chat.KindForbidden)
	if err := en.svc.DeleteUser(en.ctx, admin, held.ID); err != nil {
		t.Fatal(err)
	}
	_, err = en.svc.Send(en.ctx, chat.Held(held), chat.SendInput{Message: "deleted"})
	wantKind(t, err, chat.KindUnauthorized)
	// The zero Sender is held too: nobody sends as a record of unknown age.
	_, err = en.svc.Send(en.ctx, chat.Sender{}, chat.SendInput{Message: "nobody"})
	wantKind(t, err, chat.KindUnauthorized)
}

// testAppendGates: AppendMessage with gates is Acquire and the append in
// one step: a closed gate stores nothing and says how long to wait.
func testAppendGates(t *testing.T, e engine) {
	store, _ := e.open(t, 1000)
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	gate := chat.Gate{Channel: "g", Key: "slow:u1", For: 10 * time.Second}
	m := must[chat.Message](t)(store.AppendMessage(ctx, chat.Message{Channel: "g", Text: "one", CreatedAt: now}, chat.Once{}, gate))
	if m.ID != 1 {
		t.Fatalf("first message %+v", m)
	}
	_, err := store.AppendMessage(ctx, chat.Message{Channel: "g", Text: "two", CreatedAt: now.Add(4 * time.Second)}, chat.Once{}, gate)
	if f := wantKind(t, err, chat.KindSlowMode); f.RetryAfter != 6*time.Second {
		t.Fatalf("closed gate: %+v", f)
	}
	// Another key of the same channel is its own gate; no gate, no wait.
	other := chat.Gate{Channel: "g", Key: "slow:u2", For: 10 * time.Second}
	must[chat.Message](t)(store.AppendMessage(ctx, chat.Message{Channel: "g", Text: "other", CreatedAt: now.Add(4 * time.Second)}, chat.Once{}, other))
	must[chat.Message](t)(store.AppendMessage(ctx, chat.Message{Channel: "g", Text: "ungated", CreatedAt: now.Add(4 * time.Second)}, chat.Once{}))
	// The gate closed by the append is the one Acquire sees.
	if wait := must[time.Duration](t)(store.Acquire(ctx, now.Add(5*time.Second), gate)); wait != 5*time.Second {
		t.Fatalf("acquire after the append: wait %v", wait)
	}
	m = must[chat.Message](t)(store.AppendMessage(ctx, chat.Message{Channel: "g", Text: "three", CreatedAt: now.Add(10 * time.Second)}, chat.Once{}, gate))
	ms := must[[]chat.Message](t)(store.Messages(ctx, "g", chat.Page{Limit: 10}))
	var texts []string
	for _, x := range ms {
		texts = append(texts, x.Text)
	}
	if got := strings.Join(texts, ","); got != "one,other,ungated,three" || m.ID != 4 {
		t.Fatalf("stored %s (last id %d): a refused message must store nothing", got, m.ID)
	}
	// Gates live in the message's channel (one hash slot on a Cluster).
	if _, err := store.AppendMessage(ctx, chat.Message{Channel: "g", Text: "x", CreatedAt: now}, chat.Once{}, chat.Gate{Channel: "h", Key: "k", For: time.Second}); err == nil {
		t.Fatal("a gate of another channel was accepted")
	}
}

// TestHeldSendRoundTrips bounds the Redis round trips of a WebSocket send
// (a Held sender, read again): one pipeline for the user, the filters, the
// channel's settings and the send limit, then the append with the
// slow-mode gate. Before issue 12 it took five (user, limit, filters,
// settings, append) and six with slow mode on.
func TestHeldSendRoundTrips(t *testing.T) {
	srv := redistest.Start(t)
	opts, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	trips := &redistest.Trips{}
	rdb.AddHook(trips)
	store := redisstore.New(rdb, redisstore.Options{Prefix: "trips:"})
	svc := chat.NewService(store, chat.Options{SendLimit: chat.DefaultSendLimit})
	ctx := context.Background()
	admin := must[chat.User](t)(svc.Bootstrap(ctx, "admin-token-0123456789"))
	v, _, err := svc.CreateUser(ctx, admin, chat.CreateUserInput{Name: "viewer"})
	if err != nil {
		t.Fatal(err)
	}
	five := 5
	must[chat.Channel](t)(svc.UpdateChannel(ctx, admin, "slow", chat.ChannelPatch{SlowModeSeconds: &five}))
	// Scripts load on first use (EVALSHA, NOSCRIPT, EVAL): warm up.
	must[chat.SendResult](t)(svc.Send(ctx, chat.Held(admin), chat.SendInput{Channel: "slow", Message: "warm up"}))
	must[chat.SendResult](t)(svc.Send(ctx, chat.Held(v), chat.SendInput{Message: "warm up"}))
	// The admin's first send makes the viewer's open channel the
	// platform's (one claim, once): warm that up too.
	must[chat.SendResult](t)(svc.Send(ctx, chat.Held(admin), chat.SendInput{Message: "warm up"}))
	for _, c := range []struct{ channel, text string }{{"", "plain"}, {"slow", "in slow mode"}} {
		got := trips.During(func() {
			must[chat.SendResult](t)(svc.Send(ctx, chat.Held(v), chat.SendInput{Channel: c.channel, Message: c.text}))
		})
		t.Logf("%s: %d round trips: %s", c.text, len(got), strings.Join(got, ", "))
		if len(got) > 2 {
			t.Errorf("%s: %d round trips, want at most 2: %v", c.text, len(got), got)
		}
	}
	// A fresh sender (read by this request) is not read again.
	got := trips.During(func() {
		must[chat.SendResult](t)(svc.Send(ctx, chat.Fresh(admin), chat.SendInput{Message: "fresh"}))
	})
	// Two HGETALLs: the platform's filters and the channel's, no user.
	if len(got) != 2 || strings.Count(got[0], "hgetall") != 2 {
		t.Errorf("fresh sender: %v, want the filters then the append", got)
	}
	// Redis forgets its scripts (a restart, SCRIPT FLUSH): the pipeline's
	// EVALSHA answers NOSCRIPT and the script runs again on its own.
	zero := 0
	must[chat.Command](t)(svc.CreateCommand(ctx, admin, chat.CommandInput{Command: "hi", Response: "hi ${user}", CooldownSeconds: &zero}))
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	got = trips.During(func() {
		r := must[chat.SendResult](t)(svc.Send(ctx, chat.Held(v), chat.SendInput{Message: "!hi"}))
		if r.Reply == nil || r.Reply.Text != "hi viewer" {
			t.Errorf("after SCRIPT FLUSH: reply %+v", r.Reply)
		}
	})
	t.Logf("after SCRIPT FLUSH: %s", strings.Join(got, ", "))
	// A held sender gone since: refused in the same one round trip.
	if err := svc.DeleteUser(ctx, admin, v.ID); err != nil {
		t.Fatal(err)
	}
	got = trips.During(func() {
		_, err = svc.Send(ctx, chat.Held(v), chat.SendInput{Message: "gone"})
	})
	var ce *chat.Error
	if !errors.As(err, &ce) || ce.Kind != chat.KindUnauthorized || len(got) != 1 {
		t.Errorf("deleted held sender: %v after %v", err, got)
	}
}

// testCommandReadWithTheSend: the command of a message that looks like an
// invocation is read with the send's other reads, but the bot answers the
// message as stored: a trigger a mask filter changed runs nothing.
func testCommandReadWithTheSend(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	mod, v := en.users[chat.RoleModerator], en.users[chat.RoleViewer]
	zero := 0
	for _, name := range []string{"hello", "scam"} {
		must[chat.Command](t)(en.svc.CreateCommand(en.ctx, mod, chat.CommandInput{Command: name, Response: "re ${user}", CooldownSeconds: &zero}))
	}
	must[chat.Filter](t)(en.svc.CreateFilter(en.ctx, mod, chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "scam", Action: chat.ActionMask}))
	if r := en.send(v, "!HELLO there"); r.Reply == nil || r.Reply.Text != "re "+v.Name {
		t.Fatalf("!hello: %+v", r)
	}
	if r := en.send(v, "!scam now"); r.Reply != nil || r.Message.Text != "!**** now" {
		t.Fatalf("a masked trigger answered: %+v / %+v", r.Message, r.Reply)
	}
	if r := en.send(v, "!nothing"); r.Reply != nil {
		t.Fatalf("an unknown command answered: %+v", r.Reply)
	}
}

// appendKeys records the keys of each message append (the script whose
// first keys are the channel's seq and log) made through a client.
type appendKeys struct {
	mu   sync.Mutex
	last []string
}

func (a *appendKeys) DialHook(next redis.DialHook) redis.DialHook { return next }

func (a *appendKeys) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if (cmd.Name() == "evalsha" || cmd.Name() == "eval") && len(args) > 4 {
			n, _ := args[2].(int)
			first, _ := args[3].(string)
			second, _ := args[4].(string)
			if strings.HasSuffix(first, ":seq") && strings.HasSuffix(second, ":log") && len(args) >= 3+n {
				keys := make([]string, n)
				for i := range keys {
					keys[i], _ = args[3+i].(string)
				}
				a.mu.Lock()
				a.last = keys
				a.mu.Unlock()
			}
		}
		return next(ctx, cmd)
	}
}

func (a *appendKeys) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// suffixes returns the last append's keys without their channel prefix.
func (a *appendKeys) suffixes() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, len(a.last))
	for i, k := range a.last {
		out[i] = k[strings.LastIndex(k, "}:")+2:]
	}
	return strings.Join(out, " ")
}

// TestSendAppendKeys: a message's append names only the keys it writes.
// The chatters' set only for a sender not yet seen there (or not read),
// the raid watch's keys only when it counts the sender: a channel without
// moderation settings pays nothing for them, and the count still works.
func TestSendAppendKeys(t *testing.T) {
	srv := redistest.Start(t)
	opts, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	keys := &appendKeys{}
	rdb.AddHook(keys)
	svc := chat.NewService(redisstore.New(rdb, redisstore.Options{Prefix: "keys:"}), chat.Options{})
	ctx := context.Background()
	admin := must[chat.User](t)(svc.Bootstrap(ctx, "admin-token-0123456789"))
	newViewer := func(name string) chat.User {
		u, _, err := svc.CreateUser(ctx, admin, chat.CreateUserInput{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	v := newViewer("viewer")
	send := func(u chat.User, channel, text, want string) {
		t.Helper()
		must[chat.SendResult](t)(svc.Send(ctx, chat.Fresh(u), chat.SendInput{Channel: channel, Message: text}))
		if got := keys.suffixes(); got != want {
			t.Errorf("%s in %q: append keys %q, want %q", u.Name, channel, got, want)
		}
	}
	send(v, "", "first", "seq log trim deleted seen")
	send(v, "", "again", "seq log trim deleted") // seen already: nothing to add
	// The broadcaster skips the modes, so whether it was seen is not read.
	send(admin, "", "from the top", "seq log trim deleted seen")

	on, two := true, 2
	must[chat.Channel](t)(svc.UpdateChannel(ctx, admin, "watched", chat.ChannelPatch{AutoShield: &on, AutoShieldFirstChatters: &two}))
	send(v, "watched", "new here", "seq log trim deleted seen raid shield shieldoff modlog")
	send(v, "watched", "still here", "seq log trim deleted")
	// The second first-time chatter trips the shield: the count is kept.
	w := newViewer("second")
	send(w, "watched", "me too", "seq log trim deleted seen raid shield shieldoff modlog")
	c := must[chat.Channel](t)(svc.Channel(ctx, &admin, "watched"))
	if !c.ShieldOn(time.Now()) {
		t.Errorf("two first-time chatters with a threshold of 2: no shield (%+v)", c)
	}
}
