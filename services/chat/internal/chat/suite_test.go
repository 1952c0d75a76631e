package chat_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/libs/apiserver/testkit"
	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/memory"
	"github.com/apistack/platform/services/chat/internal/redisstore"
)

// newClock is the service clock: cooldowns, slow mode and timeouts are
// tested by stepping time, never by sleeping.
func newClock() *testkit.Clock { return testkit.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) }

// env is one test's world: a Service on a fresh store, a clock, and a user
// of every role.
type env struct {
	t     *testing.T
	svc   *chat.Service
	store chat.Store
	clock *testkit.Clock
	ctx   context.Context
	users map[chat.Role]chat.User
	// second opens another Service on the same state (Redis only; nil for memory).
	second func() *chat.Service
}

// engine opens stores for the suite.
type engine struct {
	name string
	// open returns a new empty store with the given history, plus a function
	// opening another store on the same state (nil when the engine cannot).
	open func(t *testing.T, history int) (chat.Store, func() chat.Store)
}

func memoryEngine() engine {
	return engine{name: "memory", open: func(t *testing.T, history int) (chat.Store, func() chat.Store) {
		return memory.New(history), nil
	}}
}

var prefixN atomic.Int64

func redisEngine(srv *redistest.Server) engine {
	return engine{name: "redis", open: func(t *testing.T, history int) (chat.Store, func() chat.Store) {
		// One server for the whole suite; a key prefix per test keeps tests apart.
		prefix := fmt.Sprintf("t%d:", prefixN.Add(1))
		open := func() chat.Store {
			opts, err := redis.ParseURL(srv.URL())
			if err != nil {
				t.Fatal(err)
			}
			rdb := redis.NewClient(opts)
			t.Cleanup(func() { _ = rdb.Close() })
			return redisstore.New(rdb, redisstore.Options{History: history, Prefix: prefix})
		}
		return open(), open
	}}
}

func newEnv(t *testing.T, e engine, history int, publicRead bool) *env {
	t.Helper()
	return newEnvLimits(t, e, history, publicRead, chat.Limits{})
}

func newEnvLimits(t *testing.T, e engine, history int, publicRead bool, limits chat.Limits) *env {
	t.Helper()
	return newEnvOptions(t, e, history, chat.Options{PublicRead: publicRead, Limits: limits})
}

// newEnvOptions is newEnv with the service options spelled out (Now is
// the env's clock).
func newEnvOptions(t *testing.T, e engine, history int, opts chat.Options) *env {
	t.Helper()
	store, again := e.open(t, history)
	c := newClock()
	en := &env{t: t, store: store, clock: c, ctx: context.Background(), users: map[chat.Role]chat.User{}}
	opts.Now = c.Now
	en.svc = chat.NewService(store, opts)
	if again != nil {
		en.second = func() *chat.Service { return chat.NewService(again(), opts) }
	}
	admin, err := en.svc.Bootstrap(en.ctx, "admin-token-0123456789")
	if err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	en.users[chat.RoleBroadcaster] = admin
	for _, r := range []chat.Role{chat.RoleModerator, chat.RoleVIP, chat.RoleSubscriber, chat.RoleViewer} {
		en.users[r] = en.newUser(string(r)+"_one", r)
	}
	return en
}

func (e *env) newUser(name string, role chat.Role) chat.User {
	e.t.Helper()
	u, _, err := e.svc.CreateUser(e.ctx, e.users[chat.RoleBroadcaster], chat.CreateUserInput{Name: name, Role: role})
	if err != nil {
		e.t.Fatalf("create user %s: %v", name, err)
	}
	return u
}

func (e *env) send(u chat.User, text string) chat.SendResult {
	e.t.Helper()
	res, err := e.svc.Send(e.ctx, chat.Held(u), chat.SendInput{Message: text})
	if err != nil {
		e.t.Fatalf("send %q as %s: %v", text, u.Name, err)
	}
	return res
}

func wantKind(t *testing.T, err error, k chat.Kind) *chat.Error {
	t.Helper()
	if chat.KindOf(err) != k {
		t.Fatalf("error = %v (kind %q), want kind %q", err, chat.KindOf(err), k)
	}
	e, _ := chat.AsError(err)
	return e
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// TestMemoryEngine runs the behaviour suite on the memory engine.
func TestMemoryEngine(t *testing.T) { runSuite(t, memoryEngine()) }

// TestRedisEngine runs the same suite on a real redis-server.
func TestRedisEngine(t *testing.T) {
	srv := redistest.Start(t)
	runSuite(t, redisEngine(srv))
	t.Run("TwoInstancesShareState", func(t *testing.T) { testTwoInstances(t, redisEngine(srv)) })
	t.Run("ConcurrentCreatesMakeOneCommand", func(t *testing.T) { testConcurrentCreates(t, redisEngine(srv)) })
	t.Run("StoppedRedisIsUnavailable", func(t *testing.T) { testUnavailable(t) })
	t.Run("RaidOnTwoReplicas", func(t *testing.T) { testRaidOnTwoReplicas(t, redisEngine(srv)) })
	t.Run("ModLogOnTwoReplicas", func(t *testing.T) { testModLogOnTwoReplicas(t, redisEngine(srv)) })
}

func runSuite(t *testing.T, e engine) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e engine)
	}{
		{"MessagesPageInOrder", testMessagesPaging},
		{"SendValidates", testSendValidation},
		{"PublicReadOff", testPublicReadOff},
		{"PermissionMatrix", testPermissionMatrix},
		{"TargetRules", testTargetRules},
		{"DeleteLeavesTombstone", testDelete},
		{"TimeoutAndBan", testModeration},
		{"SlowMode", testSlowMode},
		{"HeldSenderIsReadAgain", testHeldSenderReadAgain},
		{"AppendMessagePassesGates", testAppendGates},
		{"CommandReadWithTheSend", testCommandReadWithTheSend},
		{"SendLimit", testSendLimit},
		{"Filters", testFilters},
		{"Limits", testLimits},
		{"LimitsHoldUnderConcurrentCreates", testLimitsConcurrent},
		{"SendRefusesControlsAndInvisibleText", testSendRefusesControls},
		{"BotRepliesMeetTheMessageRules", testBotReplyRules},
		{"Commands", testCommands},
		{"CommandCooldownsAndLevels", testCommandCooldowns},
		{"Users", testUsers},
		{"PlatformUsers", testPlatformUsers},
		{"BootstrapIsIdempotent", testBootstrap},
		{"EventLog", testEventLog},
		{"HistoryWindow", testHistoryWindow},
		{"IdempotentSend", testIdempotentSend},
		{"OnceRecordRace", testOnceRecordRace},
		{"Epochs", testEpochs},
		{"EventsAloneAreTrimmed", testEventsAloneAreTrimmed},
		{"ChannelRoles", testChannelRoles},
		{"ChannelModeration", testChannelModeration},
		{"ChannelCommandsAndFilters", testChannelCommandsAndFilters},
		{"ChannelOwnersAreChannels", testChannelOwnersAreChannels},
		{"OpenChannels", testOpenChannels},
		{"ClosedChannels", testClosedChannels},
		{"ChannelFilterActions", testChannelFilterActions},
		{"FilterActions", testFilterActions},
		{"Hold", testHold},
		{"ChannelModes", testChannelModes},
		{"AutoShield", testAutoShield},
		{"AutoShieldBlocked", testAutoShieldBlocked},
		{"ModLog", testModLog},
		{"ModLogBound", testModLogBound},
		{"UserMessagesAndPurge", testUserMessagesAndPurge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, e) })
	}
}

func testMessagesPaging(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	v := en.users[chat.RoleViewer]
	for i := 1; i <= 7; i++ {
		m := en.send(v, fmt.Sprintf("m%d", i)).Message
		if m.ID != int64(i) || m.Channel != "general" || m.User.ID != v.ID || m.User.Role != chat.RoleViewer || m.Bot {
			t.Fatalf("message %d = %+v", i, m)
		}
	}
	texts := func(ms []chat.Message) string {
		var s []string
		for _, m := range ms {
			s = append(s, m.Text)
		}
		return strings.Join(s, ",")
	}
	list := func(p chat.Page) string {
		t.Helper()
		ms, err := en.svc.Messages(en.ctx, nil, "", p)
		if err != nil {
			t.Fatal(err)
		}
		return texts(ms)
	}
	cases := []struct {
		p    chat.Page
		want string
	}{
		{chat.Page{}, "m1,m2,m3,m4,m5,m6,m7"},
		{chat.Page{Limit: 3}, "m5,m6,m7"},
		{chat.Page{Limit: 3, Before: 5}, "m2,m3,m4"},
		{chat.Page{Limit: 3, After: 2}, "m3,m4,m5"},
		{chat.Page{Limit: 3, FromStart: true}, "m1,m2,m3"}, // after=0: the oldest page
		{chat.Page{Limit: 3, After: 0, FromStart: true, Before: 3}, "m1,m2"},
		{chat.Page{After: 3, Before: 6}, "m4,m5"},
		{chat.Page{After: 7}, ""},
		{chat.Page{Before: 1}, ""},
	}
	for _, c := range cases {
		if got := list(c.p); got != c.want {
			t.Errorf("page %+v = %q, want %q", c.p, got, c.want)
		}
	}
	// Channels are separate logs with their own ids.
	m := must[chat.SendResult](t)(en.svc.Send(en.ctx, chat.Held(v), chat.SendInput{Channel: "Games", Message: "hi"}))
	if m.Message.ID != 1 || m.Message.Channel != "games" {
		t.Fatalf("games message = %+v", m.Message)
	}
	for _, p := range []chat.Page{{Limit: 201}, {Limit: -1}, {Before: -1}, {After: -2}} {
		_, err := en.svc.Messages(en.ctx, nil, "", p)
		wantKind(t, err, chat.KindInvalid)
	}
	_, err := en.svc.Messages(en.ctx, nil, "bad channel!", chat.Page{})
	wantKind(t, err, chat.KindInvalid)
	// Timestamps round-trip exactly.
	got := must[[]chat.Message](t)(en.svc.Messages(en.ctx, nil, "games", chat.Page{}))
	if len(got) != 1 || !got[0].CreatedAt.Equal(m.Message.CreatedAt) || got[0] != m.Message {
		t.Fatalf("stored %+v, sent %+v", got, m.Message)
	}
}

func testSendValidation(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	v := en.users[chat.RoleViewer]
	for _, text := range []string{"", "   ", strings.Repeat("é", 501)} {
		_, err := en.svc.Send(en.ctx, chat.Held(v), chat.SendInput{Message: text})
		ferr := wantKind(t, err, chat.KindInvalid)
		if ferr.Fields[0].Field != "message" {
			t.Fatalf("field = %+v", ferr.Fields)
		}
	}
	en.send(v, strings.Repeat("é", 500))
	// A deleted user's token is no longer accepted even by a stale session.
	must[struct{}](t)(struct{}{}, en.svc.DeleteUser(en.ctx, en.users[chat.RoleBroadcaster], v.ID))
	_, err := en.svc.Send(en.ctx, chat.Held(v), chat.SendInput{Message: "hello"})
	wantKind(t, err, chat.KindUnauthorized)
}

func testPublicReadOff(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, false)
	_, err := en.svc.Messages(en.ctx, nil, "", chat.Page{})
	wantKind(t, err, chat.KindUnauthorized)
	_, err = en.svc.Commands(en.ctx, nil, "")
	wantKind(t, err, chat.KindUnauthorized)
	_, err = en.svc.Channel(en.ctx, nil, "general")
	wantKind(t, err, chat.KindUnauthorized)
	v := en.users[chat.RoleViewer]
	if _, err := en.svc.Messages(en.ctx, &v, "", chat.Page{}); err != nil {
		t.Fatal(err)
	}
}

// testPermissionMatrix runs every mutating operation as every role. The
// expected minimum roles are written out here, independently of
// chat.PermissionTable, so a change to the table shows up as a failing row.
func testPermissionMatrix(t *testing.T, e engine) {
	type op struct {
		name string
		min  chat.Role
		// run performs the operation as actor against fresh targets (a viewer).
		run func(en *env, actor chat.User) error
	}
	n := 0
	fresh := func(en *env) chat.User { n++; return en.newUser(fmt.Sprintf("target%d", n), chat.RoleViewer) }
	ops := []op{
		{"send", chat.RoleViewer, func(en *env, a chat.User) error {
			_, err := en.svc.Send(en.ctx, chat.Held(a), chat.SendInput{Message: "hi"})
			return err
		}},
		{"delete message", chat.RoleModerator, func(en *env, a chat.User) error {
			m := en.send(fresh(en), "bye").Message
			_, err := en.svc.DeleteMessage(en.ctx, a, "", m.ID)
			return err
		}},
		{"create command", chat.RoleModerator, func(en *env, a chat.User) error {
			n++
			_, err := en.svc.CreateCommand(en.ctx, a, chat.CommandInput{Command: fmt.Sprintf("c%d", n), Response: "x"})
			return err
		}},
		{"update command", chat.RoleModerator, func(en *env, a chat.User) error {
			r := "y"
			_, err := en.svc.UpdateCommand(en.ctx, a, "", "fixed", chat.CommandPatch{Response: &r})
			return err
		}},
		{"delete command", chat.RoleModerator, func(en *env, a chat.User) error {
			n++
			name := fmt.Sprintf("d%d", n)
			must[chat.Command](t)(en.svc.CreateCommand(en.ctx, en.users[chat.RoleBroadcaster], chat.CommandInput{Command: name, Response: "x"}))
			return en.svc.DeleteCommand(en.ctx, a, "", name)
		}},
		{"list filters", chat.RoleModerator, func(en *env, a chat.User) error {
			_, err := en.svc.Filters(en.ctx, a, "")
			return err
		}},
		{"create filter", chat.RoleModerator, func(en *env, a chat.User) error {
			_, err := en.svc.CreateFilter(en.ctx, a, chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "zzzq"})
			return err
		}},
		{"delete filter", chat.RoleModerator, func(en *env, a chat.User) error {
			f := must[chat.Filter](t)(en.svc.CreateFilter(en.ctx, en.users[chat.RoleBroadcaster], chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "zzzr"}))
			return en.svc.DeleteFilter(en.ctx, a, "", f.ID)
		}},
		{"update channel", chat.RoleModerator, func(en *env, a chat.User) error {
			z := 0
			_, err := en.svc.UpdateChannel(en.ctx, a, "general", chat.ChannelPatch{SlowModeSeconds: &z})
			return err
		}},
		{"timeout", chat.RoleModerator, func(en *env, a chat.User) error {
			_, err := en.svc.Timeout(en.ctx, a, fresh(en).ID, chat.TimeoutInput{Seconds: 60})
			return err
		}},
		{"ban", chat.RoleModerator, func(en *env, a chat.User) error {
			_, err := en.svc.Ban(en.ctx, a, fresh(en).ID, chat.BanInput{})
			return err
		}},
		{"unban", chat.RoleModerator, func(en *env, a chat.User) error {
			u := fresh(en)
			must[chat.Member](t)(en.svc.Ban(en.ctx, en.users[chat.RoleBroadcaster], u.ID, chat.BanInput{}))
			_, err := en.svc.Unban(en.ctx, a, u.ID, "")
			return err
		}},
		{"list users", chat.RoleModerator, func(en *env, a chat.User) error {
			_, err := en.svc.Users(en.ctx, a)
			return err
		}},
		{"read another user", chat.RoleModerator, func(en *env, a chat.User) error {
			_, err := en.svc.User(en.ctx, a, fresh(en).ID)
			return err
		}},
		{"create user", chat.RoleBroadcaster, func(en *env, a chat.User) error {
			n++
			_, _, err := en.svc.CreateUser(en.ctx, a, chat.CreateUserInput{Name: fmt.Sprintf("new%d", n)})
			return err
		}},
		{"change role", chat.RoleBroadcaster, func(en *env, a chat.User) error {
			_, err := en.svc.SetRole(en.ctx, a, fresh(en).ID, chat.RoleSubscriber)
			return err
		}},
		{"delete user", chat.RoleBroadcaster, func(en *env, a chat.User) error {
			return en.svc.DeleteUser(en.ctx, a, fresh(en).ID)
		}},
	}
	en := newEnv(t, e, 1000, true)
	must[chat.Command](t)(en.svc.CreateCommand(en.ctx, en.users[chat.RoleBroadcaster], chat.CommandInput{Command: "fixed", Response: "x"}))
	for _, o := range ops {
		for _, r := range chat.Roles {
			t.Run(o.name+"/"+string(r), func(t *testing.T) {
				err := o.run(en, en.users[r])
				if r.AtLeast(o.min) {
					if err != nil {
						t.Fatalf("%s as %s: %v, want allowed", o.name, r, err)
					}
				} else {
					wantKind(t, err, chat.KindForbidden)
				}
			})
		}
	}
}

func testTargetRules(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	b, mod := en.users[chat.RoleBroadcaster], en.users[chat.RoleModerator]
	mod2 := en.newUser("mod_two", chat.RoleModerator)
	vip := en.users[chat.RoleVIP]

	// Nobody moderates the broadcaster.
	_, err := en.svc.Timeout(en.ctx, mod, b.ID, chat.TimeoutInput{Seconds: 10})
	wantKind(t, err, chat.KindForbidden)
	_, err = en.svc.Ban(en.ctx, b, b.ID, chat.BanInput{})
	wantKind(t, err, chat.KindForbidden)
	_, err = en.svc.SetRole(en.ctx, b, b.ID, chat.RoleViewer)
	wantKind(t, err, chat.KindForbidden)
	bm := en.send(b, "from the top").Message
	_, err = en.svc.DeleteMessage(en.ctx, mod, "", bm.ID)
	wantKind(t, err, chat.KindForbidden)

	// A moderator cannot act on another moderator.
	_, err = en.svc.Timeout(en.ctx, mod, mod2.ID, chat.TimeoutInput{Seconds: 10})
	wantKind(t, err, chat.KindForbidden)
	_, err = en.svc.Ban(en.ctx, mod, mod2.ID, chat.BanInput{})
	wantKind(t, err, chat.KindForbidden)
	m2 := en.send(mod2, "mod line").Message
	_, err = en.svc.DeleteMessage(en.ctx, mod, "", m2.ID)
	wantKind(t, err, chat.KindForbidden)

	// But the broadcaster can, a moderator can on a vip, and on their own lines.
	must[chat.Message](t)(en.svc.DeleteMessage(en.ctx, b, "", m2.ID))
	must[chat.Member](t)(en.svc.Timeout(en.ctx, mod, vip.ID, chat.TimeoutInput{Seconds: 10}))
	own := en.send(mod, "mine").Message
	must[chat.Message](t)(en.svc.DeleteMessage(en.ctx, mod, "", own.ID))

	// The broadcaster role is not granted through the API.
	_, err = en.svc.SetRole(en.ctx, b, mod.ID, chat.RoleBroadcaster)
	wantKind(t, err, chat.KindForbidden)
	_, _, err = en.svc.CreateUser(en.ctx, b, chat.CreateUserInput{Name: "boss2", Role: chat.RoleBroadcaster})
	wantKind(t, err, chat.KindForbidden)
	u := must[chat.User](t)(en.svc.SetRole(en.ctx, b, mod2.ID, chat.RoleVIP))
	if u.Role != chat.RoleVIP {
		t.Fatalf("role = %s", u.Role)
	}
	_, err = en.svc.SetRole(en.ctx, b, "nobody", chat.RoleVIP)
	wantKind(t, err, chat.KindNotFound)
}

func testDelete(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	v, mod := en.users[chat.RoleViewer], en.users[chat.RoleModerator]
	en.send(v, "one")
	m := en.send(v, "two").Message
	en.send(v, "three")
	ts := must[chat.Message](t)(en.svc.DeleteMessage(en.ctx, mod, "general", m.ID))
	if !ts.Deleted || ts.Text != "" || ts.DeletedAt == nil || ts.ID != m.ID || ts.User.ID != v.ID {
		t.Fatalf("tombstone = %+v", ts)
	}
	ms := must[[]chat.Message](t)(en.svc.Messages(en.ctx, nil, "", chat.Page{}))
	if len(ms) != 3 || !ms[1].Deleted || ms[1].Text != "" || ms[0].Deleted || ms[2].Text != "three" {
		t.Fatalf("messages = %+v", ms)
	}
	// Deleting again is harmless; unknown ids are not found.
	must[chat.Message](t)(en.svc.DeleteMessage(en.ctx, mod, "general", m.ID))
	_, err := en.svc.DeleteMessage(en.ctx, mod, "general", 99)
	wantKind(t, err, chat.KindNotFound)
	_, err = en.svc.DeleteMessage(en.ctx, mod, "other", 1)
	wantKind(t, err, chat.KindNotFound)
}

func testModeration(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	mod, v := en.users[chat.RoleModerator], en.users[chat.RoleViewer]
	for _, s := range []int{0, -1, 1209601} {
		_, err := en.svc.Timeout(en.ctx, mod, v.ID, chat.TimeoutInput{Seconds: s})
		wantKind(t, err, chat.KindInvalid)
	}
	_, err := en.svc.Timeout(en.ctx, mod, v.ID, chat.TimeoutInput{Seconds: 60, Reason: strings.Repeat("x", 501)})
	wantKind(t, err, chat.KindInvalid)
	_, err = en.svc.Timeout(en.ctx, mod, "nobody", chat.TimeoutInput{Seconds: 60})
	wantKind(t, err, chat.KindNotFound)

	u := must[chat.Member](t)(en.svc.Timeout(en.ctx, mod, v.ID, chat.TimeoutInput{Seconds: 600, Reason: "spam"})).User
	until := en.clock.Now().Add(600 * time.Second)
	if u.TimedOutUntil == nil || !u.TimedOutUntil.Equal(until) || u.ModReason != "spam" {
		t.Fatalf("timed out user = %+v", u)
	}
	_, err = en.svc.Send(en.ctx, chat.Held(v), chat.SendInput{Message: "let me talk"})
	ferr := wantKind(t, err, chat.KindForbidden)
	if !ferr.Until.Equal(until) || ferr.Reason != "timed_out" || !strings.Contains(ferr.Message, until.Format(time.RFC3339)) {
		t.Fatalf("timeout error = %+v", ferr)
	}
	en.clock.Advance(600 * time.Second)
	en.send(v, "back")

	must[chat.Member](t)(en.svc.Ban(en.ctx, mod, v.ID, chat.BanInput{Reason: "again"}))
	_, err = en.svc.Send(en.ctx, chat.Held(v), chat.SendInput{Message: "hello?"})
	ferr = wantKind(t, err, chat.KindForbidden)
	if ferr.Reason != "banned" || !ferr.Until.IsZero() {
		t.Fatalf("ban error = %+v", ferr)
	}
	_, err = en.svc.Timeout(en.ctx, mod, v.ID, chat.TimeoutInput{Seconds: 5})
	wantKind(t, err, chat.KindConflict)
	_, err = en.svc.Ban(en.ctx, mod, v.ID, chat.BanInput{})
	wantKind(t, err, chat.KindConflict)
	u = must[chat.Member](t)(en.svc.Unban(en.ctx, mod, v.ID, "")).User
	if u.Banned || u.TimedOutUntil != nil {
		t.Fatalf("unbanned = %+v", u)
	}
	en.send(v, "free")
	// Unban also lifts a timeout.
	must[chat.Member](t)(en.svc.Timeout(en.ctx, mod, v.ID, chat.TimeoutInput{Seconds: 60}))
	must[chat.Member](t)(en.svc.Unban(en.ctx, mod, v.ID, ""))
	en.send(v, "free again")
}

func testSlowMode(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	mod, v, vip := en.users[chat.RoleModerator], en.users[chat.RoleViewer], en.users[chat.RoleVIP]
	for _, s := range []int{-1, 121} {
		_, err := en.svc.UpdateChannel(en.ctx, mod, "general", chat.ChannelPatch{SlowModeSeconds: &s})
		wantKind(t, err, chat.KindInvalid)
	}
	ten := 10
	c := must[chat.Channel](t)(en.svc.UpdateChannel(en.ctx, mod, "General", chat.ChannelPatch{SlowModeSeconds: &ten}))
	if c.Name != "general" || c.SlowModeSeconds != 10 {
		t.Fatalf("channel = %+v", c)
	}
	if got := must[chat.Channel](t)(en.svc.Channel(en.ctx, nil, "general")); got != c {
		t.Fatalf("read back %+v", got)
	}
	en.send(v, "first")
	en.clock.Advance(4 * time.Second)
	_, err := en.svc.Send(en.ctx, chat.Held(v), chat.SendInput{Message: "second"})
	ferr := wantKind(t, err, chat.KindSlowMode)
	if ferr.RetryAfter != 6*time.Second {
		t.Fatalf("retry after = %v", ferr.RetryAfter)
	}
	// Slow mode is per user and per channel; VIPs and up are exempt.
	en.send(en.users[chat.RoleSubscriber], "me too")
	must[chat.SendResult](t)(en.svc.Send(en.ctx, chat.Held(v), chat.SendInput{Channel: "other", Message: "elsewhere"}))
	en.send(vip, "a")
	en.send(vip, "b")
	en.clock.Advance(6 * time.Second)
	en.send(v, "second")
	// Other channels keep their defaults.
	if c := must[chat.Channel](t)(en.svc.Channel(en.ctx, nil, "other")); c.SlowModeSeconds != 0 {
		t.Fatalf("other = %+v", c)
	}
}

// testSendLimit: the per-user limit (CHAT_SEND_LIMIT) lets Max messages
// through at once, then refuses with slow_mode/send_limit and the wait;
// refused messages count nothing; each user counts alone, the broadcaster
// never; replicas on one Redis count together.
func testSendLimit(t *testing.T, e engine) {
	en := newEnvOptions(t, e, 1000, chat.Options{PublicRead: true, SendLimit: chat.SendLimit{Max: 3, Window: time.Minute}})
	v, mod := en.users[chat.RoleViewer], en.users[chat.RoleModerator]
	for i := range 3 {
		en.send(v, fmt.Sprint("m", i))
	}
	for range 2 { // a refused message counts nothing: the wait does not grow
		_, err := en.svc.Send(en.ctx, chat.Held(v), chat.SendInput{Message: "too many"})
		ferr := wantKind(t, err, chat.KindSlowMode)
		if ferr.Reason != chat.ReasonSendLimit || ferr.RetryAfter <= 0 || ferr.RetryAfter > 20*time.Second {
			t.Fatalf("over the limit: %+v", ferr)
		}
		if !strings.Contains(ferr.Message, "at most 3 per 1m0s") {
			t.Fatalf("message %q", ferr.Message)
		}
	}
	// Each user has a limit of its own, moderators included...
	for range 3 {
		en.send(mod, "mod")
	}
	_, err := en.svc.Send(en.ctx, chat.Held(mod), chat.SendInput{Message: "mod"})
	wantKind(t, err, chat.KindSlowMode)
	// ...but the broadcaster has none.
	for range 5 {
		en.send(en.users[chat.RoleBroadcaster], "broadcast")
	}
	if en.second != nil {
		// Redis counts on its own clock: another replica sees the same count.
		_, err := en.second().Send(en.ctx, chat.Held(v), chat.SendInput{Message: "elsewhere"})
		if f := wantKind(t, err, chat.KindSlowMode); f.Reason != chat.ReasonSendLimit {
			t.Fatalf("second replica: %+v", f)
		}
		return
	}
	// One message comes back every Window/Max.
	en.clock.Advance(20 * time.Second)
	en.send(v, "after the wait")
	_, err = en.svc.Send(en.ctx, chat.Held(v), chat.SendInput{Message: "again"})
	wantKind(t, err, chat.KindSlowMode)
}

// countFails is a store whose send counter cannot be reached.
type countFails struct{ chat.Store }

func (c countFails) ReadForSend(ctx context.Context, r chat.SendReads) chat.SendState {
	st := c.Store.ReadForSend(ctx, r)
	if r.CountUser != "" {
		st.SendWait, st.CountErr = 0, chat.Unavailable("count send", errors.New("counter down"))
	}
	return st
}

// TestSendLimitFailsOpen: when the counter cannot be reached the message
// goes through (and is stored): the limit must not become an outage.
func TestSendLimitFailsOpen(t *testing.T) {
	store := countFails{memory.New(100)}
	svc := chat.NewService(store, chat.Options{SendLimit: chat.SendLimit{Max: 1, Window: time.Hour}, Logger: testkit.Logger()})
	admin := must[chat.User](t)(svc.Bootstrap(context.Background(), "admin-token-0123456789"))
	v, _, err := svc.CreateUser(context.Background(), admin, chat.CreateUserInput{Name: "viewer"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := svc.Send(context.Background(), chat.Held(v), chat.SendInput{Message: fmt.Sprint("m", i)}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
}

func testFilters(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	mod, v, vip, sub := en.users[chat.RoleModerator], en.users[chat.RoleViewer], en.users[chat.RoleVIP], en.users[chat.RoleSubscriber]
	add := func(in chat.FilterInput) chat.Filter {
		t.Helper()
		return must[chat.Filter](t)(en.svc.CreateFilter(en.ctx, mod, in))
	}
	term := add(chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "badword"})
	add(chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "scam*"})
	add(chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "*spoiler", Action: chat.ActionMask})
	add(chat.FilterInput{Kind: chat.FilterLinks})
	add(chat.FilterInput{Kind: chat.FilterRegex, Pattern: `free\s+v-?bucks`})
	add(chat.FilterInput{Kind: chat.FilterCaps, Action: chat.ActionMask})
	if term.MinRole != chat.RoleModerator || term.Action != chat.ActionBlock || term.ID == "" {
		t.Fatalf("defaults = %+v", term)
	}

	blocked := []struct{ text, kind string }{
		{"this is a badword", "blocked_term"},
		{"BADWORD!", "blocked_term"},
		{"ｂａｄｗｏｒｄ", "blocked_term"},                // full-width
		{"bädwörd", "blocked_term"},                // accents
		{"bad\u200bword", "blocked_term"},          // zero-width space
		{"b\u00adadw\u200dord", "blocked_term"},    // soft hyphen, zero-width joiner
		{"bad\u0301word", "blocked_term"},          // combining accent
		{"ＢａＤｗＯｒＤ\ufeff", "blocked_term"},          // mixed case full-width + BOM
		{"totally a scammer here", "blocked_term"}, // prefix wildcard
		{"visit https://evil.example/x", "links"},
		{"go to www.evil.test now", "links"},
		{"see EXAMPLE.COM", "links"},
		{"ｅｘａｍｐｌｅ．ｃｏｍ", "links"},
		{"get FREE   V-Bucks", "regex"},
	}
	for _, b := range blocked {
		_, err := en.svc.Send(en.ctx, chat.Held(v), chat.SendInput{Message: b.text})
		ferr := wantKind(t, err, chat.KindBlocked)
		if ferr.Reason != b.kind {
			t.Errorf("%q blocked by %s, want %s", b.text, ferr.Reason, b.kind)
		}
	}
	allowed := []string{"a good word", "badwords are fine as a different word", "myscam", "class", "example dot com"}
	for _, a := range allowed {
		if got := en.send(v, a).Message.Text; got != a {
			t.Errorf("%q stored as %q", a, got)
		}
	}
	masks := []struct{ in, out string }{
		{"no spoiler please", "no ******* please"},
		{"huge moviespoiler!", "huge ************!"},
		{"THIS IS SO LOUD RIGHT NOW", "this is so loud right now"},
		{"OK FINE", "OK FINE"}, // under the minimum length
	}
	for _, m := range masks {
		if got := en.send(v, m.in).Message.Text; got != m.out {
			t.Errorf("%q stored as %q, want %q", m.in, got, m.out)
		}
	}
	// The masked text is what is stored.
	ms := must[[]chat.Message](t)(en.svc.Messages(en.ctx, nil, "", chat.Page{Limit: 1}))
	if ms[0].Text != "OK FINE" {
		t.Fatalf("last stored %q", ms[0].Text)
	}
	// VIPs may post links; moderators bypass the rest; subscribers do not.
	en.send(vip, "https://ok.example/clip")
	en.send(mod, "badword in a quote")
	_, err := en.svc.Send(en.ctx, chat.Held(sub), chat.SendInput{Message: "https://ok.example/clip"})
	wantKind(t, err, chat.KindBlocked)

	// Validation.
	for _, in := range []chat.FilterInput{
		{Kind: "nope", Pattern: "x"},
		{Kind: chat.FilterBlockedTerm, Pattern: ""},
		{Kind: chat.FilterBlockedTerm, Pattern: "a*b"},
		{Kind: chat.FilterBlockedTerm, Pattern: "***"},
		{Kind: chat.FilterBlockedTerm, Pattern: "x", Action: "explode"},
		{Kind: chat.FilterBlockedTerm, Pattern: "x", MinRole: "god"},
		{Kind: chat.FilterRegex, Pattern: "("},
		{Kind: chat.FilterRegex, Pattern: "a*"},
		{Kind: chat.FilterRegex, Pattern: "((a{50}){50}){50}"},
		{Kind: chat.FilterRegex, Pattern: strings.Repeat("a", 300)},
		{Kind: chat.FilterCaps, Threshold: 101},
	} {
		_, err := en.svc.CreateFilter(en.ctx, mod, in)
		wantKind(t, err, chat.KindInvalid)
	}
	fs := must[[]chat.Filter](t)(en.svc.Filters(en.ctx, mod, ""))
	if len(fs) != 6 || fs[0].ID != term.ID {
		t.Fatalf("filters = %+v", fs)
	}
	must[struct{}](t)(struct{}{}, en.svc.DeleteFilter(en.ctx, mod, "", term.ID))
	en.send(v, "badword")
	wantKind(t, en.svc.DeleteFilter(en.ctx, mod, "", term.ID), chat.KindNotFound)
}

func testCommands(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	mod, v := en.users[chat.RoleModerator], en.users[chat.RoleViewer]
	c := must[chat.Command](t)(en.svc.CreateCommand(en.ctx, mod, chat.CommandInput{
		Command: "Hello", Response: "Hi ${touser}, from ${user} in ${channel}: ${args} (#${count}) ${unknown}", Aliases: []string{"HI", "!hey", "hello"},
	}))
	if c.Name != "!hello" || c.CooldownSeconds != 5 || !c.Enabled || c.UserLevel != chat.RoleViewer || strings.Join(c.Aliases, ",") != "!hi,!hey" {
		t.Fatalf("created %+v", c)
	}
	for _, dup := range []chat.CommandInput{
		{Command: "!HELLO", Response: "x"},
		{Command: "hi", Response: "x"},
		{Command: "other", Response: "x", Aliases: []string{"hey"}},
	} {
		_, err := en.svc.CreateCommand(en.ctx, mod, dup)
		wantKind(t, err, chat.KindConflict)
	}
	for _, bad := range []chat.CommandInput{
		{Command: "", Response: "x"},
		{Command: "two words", Response: "x"},
		{Command: "ok", Response: ""},
		{Command: "ok", Response: strings.Repeat("x", 501)},
		{Command: "ok", Response: "x", CooldownSeconds: ptr(-1)},
		{Command: "ok", Response: "x", UserLevel: "king"},
		{Command: "ok", Response: "x", Aliases: []string{"bad alias"}},
	} {
		_, err := en.svc.CreateCommand(en.ctx, mod, bad)
		wantKind(t, err, chat.KindInvalid)
	}

	res := en.send(v, "!hello @friend and more")
	if res.Reply == nil || !res.Reply.Bot || res.Reply.ID != res.Message.ID+1 {
		t.Fatalf("reply = %+v", res.Reply)
	}
	want := "Hi friend, from viewer_one in general: @friend and more (#1) ${unknown}"
	if res.Reply.Text != want {
		t.Fatalf("reply %q, want %q", res.Reply.Text, want)
	}
	en.clock.Advance(5 * time.Second)
	res = en.send(v, "!HI")
	if res.Reply == nil || res.Reply.Text != "Hi viewer_one, from viewer_one in general:  (#2) ${unknown}" {
		t.Fatalf("alias reply = %+v", res.Reply)
	}
	// The reply is stored and listed like any message.
	ms := must[[]chat.Message](t)(en.svc.Messages(en.ctx, nil, "", chat.Page{Limit: 1}))
	if ms[0] != *res.Reply {
		t.Fatalf("stored reply %+v", ms[0])
	}
	// Not a command: no reply.
	if r := en.send(v, "hello !hello").Reply; r != nil {
		t.Fatalf("unexpected reply %+v", r)
	}
	if r := en.send(v, "!nosuch").Reply; r != nil {
		t.Fatalf("unexpected reply %+v", r)
	}

	// Read, update, delete.
	got := must[chat.Command](t)(en.svc.Command(en.ctx, nil, "", "hey"))
	if got.Name != "!hello" || got.Count != 2 {
		t.Fatalf("got %+v", got)
	}
	list := must[[]chat.Command](t)(en.svc.Commands(en.ctx, nil, ""))
	if len(list) != 1 || list[0].Count != 2 {
		t.Fatalf("list %+v", list)
	}
	resp, aliases := "Yo ${user}", []string{"yo"}
	upd := must[chat.Command](t)(en.svc.UpdateCommand(en.ctx, mod, "", "!hi", chat.CommandPatch{Response: &resp, Aliases: &aliases}))
	if upd.Response != resp || strings.Join(upd.Aliases, ",") != "!yo" || upd.Count != 2 {
		t.Fatalf("updated %+v", upd)
	}
	_, err := en.svc.Command(en.ctx, nil, "", "hi")
	wantKind(t, err, chat.KindNotFound)
	// The freed alias can be taken; a taken one cannot be added.
	must[chat.Command](t)(en.svc.CreateCommand(en.ctx, mod, chat.CommandInput{Command: "hi", Response: "x"}))
	taken := []string{"hi"}
	_, err = en.svc.UpdateCommand(en.ctx, mod, "", "hello", chat.CommandPatch{Aliases: &taken})
	wantKind(t, err, chat.KindConflict)
	en.clock.Advance(5 * time.Second)
	if r := en.send(v, "!yo").Reply; r == nil || r.Text != "Yo viewer_one" {
		t.Fatalf("updated reply %+v", r)
	}
	must[struct{}](t)(struct{}{}, en.svc.DeleteCommand(en.ctx, mod, "", "yo"))
	wantKind(t, en.svc.DeleteCommand(en.ctx, mod, "", "hello"), chat.KindNotFound)
	_, err = en.svc.UpdateCommand(en.ctx, mod, "", "hello", chat.CommandPatch{Response: &resp})
	wantKind(t, err, chat.KindNotFound)
	en.clock.Advance(5 * time.Second)
	if r := en.send(v, "!hello").Reply; r != nil {
		t.Fatalf("deleted command replied %+v", r)
	}
	// A recreated command counts from zero.
	must[chat.Command](t)(en.svc.CreateCommand(en.ctx, mod, chat.CommandInput{Command: "hello", Response: "#${count}"}))
	if r := en.send(v, "!hello").Reply; r == nil || r.Text != "#1" {
		t.Fatalf("recreated reply %+v", r)
	}
}

func ptr[T any](v T) *T { return &v }

func testCommandCooldowns(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	mod, v, sub := en.users[chat.RoleModerator], en.users[chat.RoleViewer], en.users[chat.RoleSubscriber]
	v2 := en.newUser("viewer_two", chat.RoleViewer)
	must[chat.Command](t)(en.svc.CreateCommand(en.ctx, mod, chat.CommandInput{Command: "cd", Response: "ok", CooldownSeconds: ptr(10), UserCooldownSeconds: ptr(30)}))
	must[chat.Command](t)(en.svc.CreateCommand(en.ctx, mod, chat.CommandInput{Command: "subs", Response: "subs only", UserLevel: chat.RoleSubscriber}))
	must[chat.Command](t)(en.svc.CreateCommand(en.ctx, mod, chat.CommandInput{Command: "off", Response: "x", Enabled: ptr(false)}))
	replied := func(u chat.User, text string) bool { t.Helper(); return en.send(u, text).Reply != nil }

	steps := []struct {
		advance time.Duration
		user    chat.User
		text    string
		want    bool
	}{
		{0, v, "!cd", true},
		{time.Second, v2, "!cd", false},     // command cooldown (10 s) holds for everyone
		{9 * time.Second, v2, "!cd", true},  // 10 s later
		{10 * time.Second, v, "!cd", false}, // 20 s after v's use: v's own 30 s cooldown holds
		{10 * time.Second, v, "!cd", true},  // 30 s after
		{0, mod, "!cd", true},               // moderators skip cooldowns
		{0, v, "!subs", false},              // below the user level
		{0, sub, "!subs", true},
		{0, mod, "!off", false}, // disabled
	}
	for i, s := range steps {
		en.clock.Advance(s.advance)
		if got := replied(s.user, s.text); got != s.want {
			t.Fatalf("step %d: %s %q replied=%v, want %v", i, s.user.Name, s.text, got, s.want)
		}
	}
	// A failed cooldown check did not eat the per-user gate: v2 used it at
	// step 2 only.
	c := must[chat.Command](t)(en.svc.Command(en.ctx, nil, "", "cd"))
	if c.Count != 4 {
		t.Fatalf("count = %d, want 4", c.Count)
	}
}

func testUsers(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	b := en.users[chat.RoleBroadcaster]
	u, token, err := en.svc.CreateUser(en.ctx, b, chat.CreateUserInput{Name: "Alice_1"})
	if err != nil || u.Role != chat.RoleViewer || !strings.HasPrefix(token, "chat_") || len(token) < 40 {
		t.Fatalf("create = %+v %q %v", u, token, err)
	}
	if u.TokenHash == token || u.TokenHash != chat.HashToken(token) {
		t.Fatal("token must be stored hashed")
	}
	me := must[chat.User](t)(en.svc.Authenticate(en.ctx, token))
	if me.ID != u.ID || me.Name != "Alice_1" {
		t.Fatalf("me = %+v", me)
	}
	if got := must[chat.User](t)(en.svc.User(en.ctx, me, me.ID)); got.ID != u.ID {
		t.Fatalf("self = %+v", got)
	}
	_, err = en.svc.User(en.ctx, me, b.ID)
	wantKind(t, err, chat.KindForbidden)
	for _, tok := range []string{"", "chat_nope", token + "x"} {
		_, err := en.svc.Authenticate(en.ctx, tok)
		wantKind(t, err, chat.KindUnauthorized)
	}
	_, _, err = en.svc.CreateUser(en.ctx, b, chat.CreateUserInput{Name: "alice_1"})
	wantKind(t, err, chat.KindConflict)
	for _, name := range []string{"", "a", "has space", strings.Repeat("x", 26), "bot", "émile"} {
		_, _, err := en.svc.CreateUser(en.ctx, b, chat.CreateUserInput{Name: name})
		wantKind(t, err, chat.KindInvalid)
	}
	_, _, err = en.svc.CreateUser(en.ctx, b, chat.CreateUserInput{Name: "zed", Role: "king"})
	wantKind(t, err, chat.KindInvalid)

	all := must[[]chat.User](t)(en.svc.Users(en.ctx, en.users[chat.RoleModerator]))
	if len(all) != 6 {
		t.Fatalf("users = %d", len(all))
	}
	up := must[chat.User](t)(en.svc.SetRole(en.ctx, b, u.ID, chat.RoleModerator))
	if up.Role != chat.RoleModerator {
		t.Fatalf("role %s", up.Role)
	}
	if me := must[chat.User](t)(en.svc.Authenticate(en.ctx, token)); me.Role != chat.RoleModerator {
		t.Fatalf("role after change %s", me.Role)
	}
	must[struct{}](t)(struct{}{}, en.svc.DeleteUser(en.ctx, b, u.ID))
	_, err = en.svc.Authenticate(en.ctx, token)
	wantKind(t, err, chat.KindUnauthorized)
	wantKind(t, en.svc.DeleteUser(en.ctx, b, u.ID), chat.KindNotFound)
	// The name is free again.
	en.newUser("alice_1", chat.RoleViewer)
}

func testBootstrap(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	first := en.users[chat.RoleBroadcaster]
	again := must[chat.User](t)(en.svc.Bootstrap(en.ctx, "admin-token-0123456789"))
	if again.ID != first.ID {
		t.Fatalf("second bootstrap made %s, want %s", again.ID, first.ID)
	}
	me := must[chat.User](t)(en.svc.Authenticate(en.ctx, "admin-token-0123456789"))
	if me.Role != chat.RoleBroadcaster {
		t.Fatalf("admin role %s", me.Role)
	}
	// Concurrent start-up of several replicas yields one user.
	var wg sync.WaitGroup
	ids := make([]string, 4)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u, err := en.svc.Bootstrap(en.ctx, "another-admin-token-xyz")
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = u.ID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("ids %v", ids)
		}
	}
	_, err := en.svc.Bootstrap(en.ctx, "short")
	wantKind(t, err, chat.KindInvalid)
}

func testEventLog(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	mod, v := en.users[chat.RoleModerator], en.users[chat.RoleViewer]
	log := en.svc.Events()
	head := must[chat.Cursor](t)(log.Head(en.ctx, "general"))
	if head != (chat.Cursor{}) {
		t.Fatalf("empty head %v", head)
	}
	m1 := en.send(v, "one").Message
	en.send(v, "two")
	must[chat.Message](t)(en.svc.DeleteMessage(en.ctx, mod, "general", m1.ID))
	must[chat.Member](t)(en.svc.Timeout(en.ctx, mod, v.ID, chat.TimeoutInput{Seconds: 30, Reason: "calm"}))
	must[chat.Member](t)(en.svc.Ban(en.ctx, mod, en.users[chat.RoleSubscriber].ID, chat.BanInput{Channel: "general"}))
	en.send(mod, "three")

	evs := must[[]chat.Event](t)(log.ReadEvents(en.ctx, "general", chat.Cursor{}, 100))
	var got []string
	for _, ev := range evs {
		pos := ev.Cursor
		pos.Epoch = 0 // epochs: testEpochs
		got = append(got, string(ev.Type)+"@"+pos.String())
		if ev.Channel != "general" {
			t.Fatalf("channel %q", ev.Channel)
		}
	}
	want := "message@1 message@2 message_deleted@2-1 user_timed_out@2-2 user_banned@2-3 message@3"
	if strings.Join(got, " ") != want {
		t.Fatalf("events %v, want %s", got, want)
	}
	if d := evs[2].Message; d == nil || d.ID != 1 || !d.Deleted {
		t.Fatalf("deletion event %+v", d)
	}
	if m := evs[3].Moderation; m == nil || m.User.ID != v.ID || m.By.ID != mod.ID || m.Reason != "calm" || m.Until == nil {
		t.Fatalf("timeout event %+v", m)
	}
	if m := evs[5].Message; m == nil || m.ID != 3 || m.Text != "three" || m.Channel != "general" {
		t.Fatalf("message event %+v", m)
	}
	// Resume from any cursor: no gap, no duplicate.
	rest := must[[]chat.Event](t)(log.ReadEvents(en.ctx, "general", evs[2].Cursor, 2))
	if len(rest) != 2 || rest[0].Cursor != evs[3].Cursor || rest[1].Cursor != evs[4].Cursor {
		t.Fatalf("resume %+v", rest)
	}
	if h := must[chat.Cursor](t)(log.Head(en.ctx, "general")); h != evs[5].Cursor {
		t.Fatalf("head %v", h)
	}
	// Nothing new: an empty read, at once; the next message is there for
	// the next read.
	if evs := must[[]chat.Event](t)(log.ReadEvents(en.ctx, "general", evs[5].Cursor, 10)); len(evs) != 0 {
		t.Fatalf("extra %+v", evs)
	}
	en.send(mod, "four")
	if evs := must[[]chat.Event](t)(log.ReadEvents(en.ctx, "general", chat.Cursor{ID: 3}, 10)); len(evs) != 1 || evs[0].Message.Text != "four" {
		t.Fatalf("after the next send: %+v", evs)
	}
	// A cursor beyond the end (a reset store) is not recoverable.
	_, err := log.ReadEvents(en.ctx, "general", chat.Cursor{ID: 99}, 10)
	wantKind(t, err, chat.KindHistoryGone)
	if ok := must[bool](t)(log.Recoverable(en.ctx, "general", chat.Cursor{ID: 99})); ok {
		t.Fatal("future cursor recoverable")
	}
}

func testHistoryWindow(t *testing.T, e engine) {
	en := newEnv(t, e, 3, true)
	mod, v := en.users[chat.RoleModerator], en.users[chat.RoleViewer]
	log := en.svc.Events()
	en.send(v, "1")
	en.send(v, "2")
	must[chat.Message](t)(en.svc.DeleteMessage(en.ctx, mod, "general", 2)) // event 2-1
	for i := 3; i <= 5; i++ {
		en.send(v, fmt.Sprint(i))
	}
	// Messages 3..5 are kept; so is the deletion that followed message 2.
	ms := must[[]chat.Message](t)(en.svc.Messages(en.ctx, nil, "", chat.Page{}))
	if len(ms) != 3 || ms[0].ID != 3 {
		t.Fatalf("window %+v", ms)
	}
	must[[]chat.Message](t)(en.svc.Messages(en.ctx, nil, "", chat.Page{After: 1, Limit: 2}))
	if ms := must[[]chat.Message](t)(en.svc.Messages(en.ctx, nil, "", chat.Page{After: 1, Limit: 2})); len(ms) != 2 || ms[0].ID != 3 {
		t.Fatalf("after trimmed cursor %+v", ms)
	}
	for _, c := range []struct {
		cur  chat.Cursor
		want bool
	}{{chat.Cursor{ID: 1}, false}, {chat.Cursor{ID: 2}, true}, {chat.Cursor{ID: 2, Seq: 1}, true}, {chat.Cursor{ID: 5}, true}} {
		if got := must[bool](t)(log.Recoverable(en.ctx, "general", c.cur)); got != c.want {
			t.Errorf("recoverable(%v) = %v", c.cur, got)
		}
	}
	_, err := log.ReadEvents(en.ctx, "general", chat.Cursor{ID: 1}, 10)
	wantKind(t, err, chat.KindHistoryGone)
	evs := must[[]chat.Event](t)(log.ReadEvents(en.ctx, "general", chat.Cursor{ID: 2}, 10))
	if len(evs) != 4 || evs[0].Type != chat.EventMessageDeleted {
		t.Fatalf("recovery %+v", evs)
	}
	_, err = en.svc.DeleteMessage(en.ctx, mod, "general", 1)
	wantKind(t, err, chat.KindNotFound)
}

func testTwoInstances(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	other := en.second()
	mod, v := en.users[chat.RoleModerator], en.users[chat.RoleViewer]
	must[chat.Command](t)(en.svc.CreateCommand(en.ctx, mod, chat.CommandInput{Command: "shared", Response: "n=${count}"}))
	// The second instance sees the command, the users and the messages.
	c := must[chat.Command](t)(other.Command(en.ctx, nil, "", "shared"))
	if c.Name != "!shared" {
		t.Fatalf("other sees %+v", c)
	}
	us := must[[]chat.User](t)(other.Users(en.ctx, mod))
	if len(us) != 5 {
		t.Fatalf("other sees %d users", len(us))
	}
	m := en.send(v, "from one").Message
	r := must[chat.SendResult](t)(other.Send(en.ctx, chat.Held(v), chat.SendInput{Message: "!shared"}))
	if r.Message.ID != m.ID+1 || r.Reply == nil || r.Reply.Text != "n=1" {
		t.Fatalf("other send %+v", r)
	}
	ms := must[[]chat.Message](t)(en.svc.Messages(en.ctx, nil, "", chat.Page{}))
	if len(ms) != 3 || ms[1].Text != "!shared" {
		t.Fatalf("messages %+v", ms)
	}
	// Cooldowns are shared too: the first instance may not answer now.
	if r := en.send(v, "!shared").Reply; r != nil {
		t.Fatalf("cooldown ignored across instances: %+v", r)
	}
	// A token issued by one authenticates on the other.
	u, token, err := en.svc.CreateUser(en.ctx, en.users[chat.RoleBroadcaster], chat.CreateUserInput{Name: "roamer"})
	if err != nil {
		t.Fatal(err)
	}
	if got := must[chat.User](t)(other.Authenticate(en.ctx, token)); got.ID != u.ID {
		t.Fatalf("other auth %+v", got)
	}
	// A ban on one instance stops sends on the other.
	must[chat.Member](t)(other.Ban(en.ctx, mod, u.ID, chat.BanInput{}))
	_, err = en.svc.Send(en.ctx, chat.Held(u), chat.SendInput{Message: "hi"})
	wantKind(t, err, chat.KindForbidden)
}

func testConcurrentCreates(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	mod := en.users[chat.RoleModerator]
	svcs := []*chat.Service{en.svc, en.second(), en.second(), en.second()}
	var ok, conflict atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := svcs[i%len(svcs)].CreateCommand(en.ctx, mod, chat.CommandInput{Command: "race", Response: fmt.Sprint(i), Aliases: []string{fmt.Sprintf("r%d", i)}})
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, chat.ErrConflict):
				conflict.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || conflict.Load() != 15 {
		t.Fatalf("created %d, conflicts %d", ok.Load(), conflict.Load())
	}
	cs := must[[]chat.Command](t)(en.svc.Commands(en.ctx, nil, ""))
	if len(cs) != 1 {
		t.Fatalf("commands %+v", cs)
	}
	// No stray alias claims from the losers.
	for i := 0; i < 16; i++ {
		_, err := en.svc.Command(en.ctx, nil, "", fmt.Sprintf("r%d", i))
		if err == nil && "!r"+fmt.Sprint(i) != cs[0].Aliases[0] {
			t.Fatalf("stray alias r%d", i)
		}
	}
	// Concurrent uses lose no count.
	must[chat.Command](t)(en.svc.UpdateCommand(en.ctx, mod, "", "race", chat.CommandPatch{CooldownSeconds: ptr(0)}))
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := svcs[i%len(svcs)].Send(en.ctx, chat.Held(mod), chat.SendInput{Message: "!race"}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if c := must[chat.Command](t)(en.svc.Command(en.ctx, nil, "", "race")); c.Count != 20 {
		t.Fatalf("count %d, want 20", c.Count)
	}
}

func testUnavailable(t *testing.T) {
	srv := redistest.Start(t)
	en := newEnv(t, redisEngine(srv), 1000, true)
	v := en.users[chat.RoleViewer]
	en.send(v, "before")
	srv.Stop()
	ctx, cancel := context.WithTimeout(en.ctx, 10*time.Second)
	defer cancel()
	_, err := en.svc.Send(ctx, chat.Held(v), chat.SendInput{Message: "during"})
	wantKind(t, err, chat.KindUnavailable)
	_, err = en.svc.Messages(ctx, nil, "", chat.Page{})
	wantKind(t, err, chat.KindUnavailable)
	wantKind(t, en.svc.Ready(ctx), chat.KindUnavailable)
	srv.Start()
	if err := srv.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	// The server restarted empty (no persistence); the service works again.
	if _, err := en.svc.Bootstrap(ctx, "admin-token-0123456789"); err != nil {
		t.Fatal(err)
	}
}

// wantLimit checks a quota error: a conflict naming the limit and its variable.
func wantLimit(t *testing.T, err error, max int, variable string) {
	t.Helper()
	e := wantKind(t, err, chat.KindConflict)
	if e.Reason != chat.ReasonLimit || e.Limit != max || !strings.Contains(e.Message, variable) || !strings.Contains(e.Message, fmt.Sprint(max)) {
		t.Fatalf("limit error = %+v, want limit %d naming %s", e, max, variable)
	}
}

func testLimits(t *testing.T, e engine) {
	en := newEnvLimits(t, e, 1000, true, chat.Limits{Filters: 3, RegexFilters: 1, Commands: 2, Channels: 2})
	mod, v := en.users[chat.RoleModerator], en.users[chat.RoleViewer]
	if got := en.svc.Limits(); got != (chat.Limits{Filters: 3, RegexFilters: 1, Commands: 2, Channels: 2, ChannelRoles: chat.DefaultMaxChannelRoles}) {
		t.Fatalf("limits %+v", got)
	}

	// Filters: one regex, three in all.
	re := must[chat.Filter](t)(en.svc.CreateFilter(en.ctx, mod, chat.FilterInput{Kind: chat.FilterRegex, Pattern: "x+y"}))
	_, err := en.svc.CreateFilter(en.ctx, mod, chat.FilterInput{Kind: chat.FilterRegex, Pattern: "z+y"})
	wantLimit(t, err, 1, "CHAT_MAX_REGEX_FILTERS")
	must[chat.Filter](t)(en.svc.CreateFilter(en.ctx, mod, chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "one"}))
	must[chat.Filter](t)(en.svc.CreateFilter(en.ctx, mod, chat.FilterInput{Kind: chat.FilterLinks}))
	_, err = en.svc.CreateFilter(en.ctx, mod, chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "four"})
	wantLimit(t, err, 3, "CHAT_MAX_FILTERS")
	if fs := must[[]chat.Filter](t)(en.svc.Filters(en.ctx, mod, "")); len(fs) != 3 {
		t.Fatalf("%d filters stored past the limit", len(fs))
	}
	// Deleting one makes room again.
	must[struct{}](t)(struct{}{}, en.svc.DeleteFilter(en.ctx, mod, "", re.ID))
	must[chat.Filter](t)(en.svc.CreateFilter(en.ctx, mod, chat.FilterInput{Kind: chat.FilterRegex, Pattern: "z+y"}))

	// Commands: a taken name is still a plain conflict, a new one past the limit a quota.
	for _, name := range []string{"one", "two"} {
		must[chat.Command](t)(en.svc.CreateCommand(en.ctx, mod, chat.CommandInput{Command: name, Response: "hi"}))
	}
	_, err = en.svc.CreateCommand(en.ctx, mod, chat.CommandInput{Command: "one", Response: "hi"})
	if ce := wantKind(t, err, chat.KindConflict); ce.Reason == chat.ReasonLimit {
		t.Fatalf("a taken name reported as the limit: %+v", ce)
	}
	_, err = en.svc.CreateCommand(en.ctx, mod, chat.CommandInput{Command: "three", Response: "hi"})
	wantLimit(t, err, 2, "CHAT_MAX_COMMANDS")
	must[struct{}](t)(struct{}{}, en.svc.DeleteCommand(en.ctx, mod, "", "two"))
	must[chat.Command](t)(en.svc.CreateCommand(en.ctx, mod, chat.CommandInput{Command: "three", Response: "hi"}))

	// Channels: two exist once the platform acts there; a third cannot be
	// written by a send, a settings change or a moderation announcement,
	// and nothing is stored in it. The first two keep working. (Viewers'
	// open channels are a pool of their own: testOpenChannels.)
	slow := 5
	must[chat.SendResult](t)(en.svc.Send(en.ctx, chat.Held(mod), chat.SendInput{Message: "in general"}))
	must[chat.SendResult](t)(en.svc.Send(en.ctx, chat.Held(mod), chat.SendInput{Channel: "two", Message: "in two"}))
	_, err = en.svc.Send(en.ctx, chat.Held(mod), chat.SendInput{Channel: "three", Message: "in three"})
	wantLimit(t, err, 2, "CHAT_MAX_CHANNELS")
	_, err = en.svc.UpdateChannel(en.ctx, mod, "three", chat.ChannelPatch{SlowModeSeconds: &slow})
	wantLimit(t, err, 2, "CHAT_MAX_CHANNELS")
	_, err = en.svc.Timeout(en.ctx, mod, v.ID, chat.TimeoutInput{Seconds: 5, Channel: "three"})
	wantLimit(t, err, 2, "CHAT_MAX_CHANNELS")
	if ms := must[[]chat.Message](t)(en.svc.Messages(en.ctx, nil, "three", chat.Page{})); len(ms) != 0 {
		t.Fatalf("messages stored in a channel past the limit: %+v", ms)
	}
	if h := must[chat.Cursor](t)(en.store.Head(en.ctx, "three")); h != (chat.Cursor{}) {
		t.Fatalf("events stored in a channel past the limit: head %v", h)
	}
	must[chat.SendResult](t)(en.svc.Send(en.ctx, chat.Held(v), chat.SendInput{Channel: "two", Message: "still fine"}))
	must[chat.Channel](t)(en.svc.UpdateChannel(en.ctx, mod, "general", chat.ChannelPatch{SlowModeSeconds: &slow}))
	// A second instance (another replica) sees the same count.
	if en.second != nil {
		_, err = en.second().Send(en.ctx, chat.Held(mod), chat.SendInput{Channel: "four", Message: "x"})
		wantLimit(t, err, 2, "CHAT_MAX_CHANNELS")
	}
}

// testLimitsConcurrent creates filters, commands and channels from many
// goroutines (and, on Redis, two instances): exactly the limit succeeds,
// because the engines count and insert in one step.
func testLimitsConcurrent(t *testing.T, e engine) {
	const max, tries = 4, 24
	en := newEnvLimits(t, e, 1000, true, chat.Limits{Filters: max, RegexFilters: max, Commands: max, Channels: max})
	svcs := []*chat.Service{en.svc}
	if en.second != nil {
		svcs = append(svcs, en.second(), en.second())
	}
	mod := en.users[chat.RoleModerator]
	run := func(what string, do func(svc *chat.Service, i int) error) {
		t.Helper()
		var ok, limited atomic.Int64
		var wg sync.WaitGroup
		for i := 0; i < tries; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := do(svcs[i%len(svcs)], i)
				switch {
				case err == nil:
					ok.Add(1)
				case chat.KindOf(err) == chat.KindConflict:
					limited.Add(1)
				default:
					t.Errorf("%s %d: %v", what, i, err)
				}
			}()
		}
		wg.Wait()
		if ok.Load() != max || limited.Load() != tries-max {
			t.Fatalf("%s: %d created, %d refused; want %d and %d", what, ok.Load(), limited.Load(), max, tries-max)
		}
	}
	run("filters", func(svc *chat.Service, i int) error {
		_, err := svc.CreateFilter(en.ctx, mod, chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: fmt.Sprintf("w%d", i)})
		return err
	})
	run("commands", func(svc *chat.Service, i int) error {
		_, err := svc.CreateCommand(en.ctx, mod, chat.CommandInput{Command: fmt.Sprintf("c%d", i), Response: "hi"})
		return err
	})
	run("channels", func(svc *chat.Service, i int) error {
		_, err := svc.Send(en.ctx, chat.Held(mod), chat.SendInput{Channel: fmt.Sprintf("ch%d", i), Message: "hi"})
		return err
	})
}

// testBotReplyRules: a bot reply is held to the text rules a message
// meets. A response whose reply to a plain "!trigger" would break them is
// refused when the command is created or updated; a reply that the
// arguments make invisible is not stored, and is logged.
func testBotReplyRules(t *testing.T, e engine) {
	var logs testkit.Buffer
	en := newEnvOptions(t, e, 1000, chat.Options{PublicRead: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	mod, v := en.users[chat.RoleModerator], en.users[chat.RoleViewer]
	zw := strings.Repeat("\u200b", 493)
	for _, resp := range []string{"${args}", zw + "${args}", " ${args} \u2800"} {
		_, err := en.svc.CreateCommand(en.ctx, mod, chat.CommandInput{Command: "echo", Response: resp})
		if ferr := wantKind(t, err, chat.KindInvalid); ferr.Fields[0].Field != "response" {
			t.Fatalf("%q: field = %+v", resp, ferr.Fields)
		}
	}
	must[chat.Command](t)(en.svc.CreateCommand(en.ctx, mod, chat.CommandInput{Command: "so", Response: "${touser}", CooldownSeconds: ptr(0)}))
	bad := zw + "${args}"
	_, err := en.svc.UpdateCommand(en.ctx, mod, "", "so", chat.CommandPatch{Response: &bad})
	if ferr := wantKind(t, err, chat.KindInvalid); ferr.Fields[0].Field != "response" {
		t.Fatalf("update: field = %+v", ferr.Fields)
	}
	if c := must[chat.Command](t)(en.svc.Command(en.ctx, nil, "", "so")); c.Response != "${touser}" {
		t.Fatalf("a refused update changed the response to %q", c.Response)
	}

	// "!so" echoes its argument: 495 zero-width spaces make a reply with
	// nothing to see. The sender's message is stored; the reply is not.
	res := en.send(v, "!so "+strings.Repeat("\u200b", 495))
	if res.Reply != nil {
		t.Fatalf("an invisible reply of %d characters was stored", len([]rune(res.Reply.Text)))
	}
	ms := must[[]chat.Message](t)(en.svc.Messages(en.ctx, nil, "", chat.Page{}))
	if len(ms) != 1 || ms[0].ID != res.Message.ID {
		t.Fatalf("stored %+v, want the sender's message alone", ms)
	}
	if !strings.Contains(logs.String(), "its reply is not stored") {
		t.Fatalf("the refused reply was not logged: %q", logs.String())
	}
	// A visible argument makes a reply like any other.
	if r := en.send(v, "!so @friend").Reply; r == nil || r.Text != "friend" {
		t.Fatalf("reply %+v, want friend", r)
	}
}

func testSendRefusesControls(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	v := en.users[chat.RoleViewer]
	for _, text := range []string{"nul\x00", "bell\a", "esc\x1b[2J", "del\x7f", "rlo\u202etxt.exe", "\u200b\u200b", "\u3164", "\u2800\uffa0", "\u0301"} {
		_, err := en.svc.Send(en.ctx, chat.Held(v), chat.SendInput{Message: text})
		ferr := wantKind(t, err, chat.KindInvalid)
		if ferr.Fields[0].Field != "message" {
			t.Fatalf("%q: field = %+v", text, ferr.Fields)
		}
	}
	if ms := must[[]chat.Message](t)(en.svc.Messages(en.ctx, nil, "", chat.Page{})); len(ms) != 0 {
		t.Fatalf("refused messages were stored: %+v", ms)
	}
	if got := en.send(v, "two\nlines").Message.Text; got != "two\nlines" {
		t.Fatalf("newline: %q", got)
	}
	// A bot response is refused the same characters: the bot would echo them.
	mod := en.users[chat.RoleModerator]
	for _, resp := range []string{"hi\x1b[2J", "\u200b", "rlo\u202e"} {
		_, err := en.svc.CreateCommand(en.ctx, mod, chat.CommandInput{Command: "x", Response: resp})
		if ferr := wantKind(t, err, chat.KindInvalid); ferr.Fields[0].Field != "response" {
			t.Fatalf("%q: field = %+v", resp, ferr.Fields)
		}
	}
	// So is the reason of a timeout or ban, which every reader of the
	// channel is sent; nothing is changed.
	for _, reason := range []string{"esc\x1b[2J", "rlo\u202etxt.exe", "nul\x00"} {
		_, err := en.svc.Timeout(en.ctx, mod, v.ID, chat.TimeoutInput{Seconds: 60, Reason: reason})
		if ferr := wantKind(t, err, chat.KindInvalid); ferr.Fields[0].Field != "reason" {
			t.Fatalf("timeout reason %q: field = %+v", reason, ferr.Fields)
		}
		_, err = en.svc.Ban(en.ctx, mod, v.ID, chat.BanInput{Reason: reason})
		if ferr := wantKind(t, err, chat.KindInvalid); ferr.Fields[0].Field != "reason" {
			t.Fatalf("ban reason %q: field = %+v", reason, ferr.Fields)
		}
	}
	if got := en.send(v, "still allowed").Message.Text; got != "still allowed" {
		t.Fatalf("after refused timeouts and bans: %q", got)
	}
}
