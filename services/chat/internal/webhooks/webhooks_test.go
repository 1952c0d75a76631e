package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/libs/apiserver/testkit"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/memory"
	"github.com/apistack/platform/services/chat/internal/redisstore"
	"github.com/apistack/platform/services/chat/internal/webhooks"
	"github.com/apistack/platform/services/chat/internal/webhooks/memq"
	"github.com/apistack/platform/services/chat/internal/webhooks/redisq"
	"github.com/apistack/platform/services/chat/internal/webhooks/webhookstest"
)

const adminToken = "webhooks-test-admin-token-0123"

// clock is a fake clock the tests move; deliveries' due times and the
// retry schedule follow it, HTTP timeouts do not.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// world is a chat service with webhooks on one engine.
type world struct {
	t      testing.TB
	clock  *clock
	svc    *chat.Service
	admin  chat.User
	source webhooks.Source
	store  webhooks.Store
	// newStore opens another handle on the same webhooks store (a second
	// replica on one Redis); nil for memory.
	newStore  func() (webhooks.Store, webhooks.Source, func())
	manager   *webhooks.Manager
	redisAddr string
}

func engines(t *testing.T, fn func(t *testing.T, w *world)) {
	for _, name := range []string{"memory", "redis"} {
		t.Run(name, func(t *testing.T) { fn(t, newWorld(t, name)) })
	}
}

func newWorld(t testing.TB, engine string) *world {
	t.Helper()
	w := &world{t: t, clock: &clock{t: time.Now().UTC().Truncate(time.Millisecond)}}
	var store chat.Store
	switch engine {
	case "memory":
		m := memory.New(1000)
		store, w.source = m, m
		w.store = memq.New(w.clock.Now)
	case "redis":
		srv := redistest.Start(t)
		w.redisAddr = srv.Addr()
		open := func() (webhooks.Store, webhooks.Source, func()) {
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
			rs := redisstore.New(rdb, redisstore.Options{History: 1000})
			return redisq.New(rdb, ""), rs, func() { _ = rdb.Close() }
		}
		var closeFn func()
		w.store, w.source, closeFn = open()
		t.Cleanup(closeFn)
		store = w.source.(chat.Store)
		w.newStore = open
	}
	w.svc = chat.NewService(store, chat.Options{Now: w.clock.Now, Logger: testkit.Logger(), PublicRead: true})
	admin, err := w.svc.Bootstrap(context.Background(), adminToken)
	if err != nil {
		t.Fatal(err)
	}
	w.admin = admin
	w.manager = webhooks.NewManager(w.store, w.svc, true)
	return w
}

// dispatch runs a dispatcher on store and source until the test ends or
// stop is called.
func (w *world) dispatch(store webhooks.Store, source webhooks.Source, owner string) (stop func()) {
	d := webhooks.New(webhooks.Options{Store: store, Source: source, Client: webhooks.NewClient(2*time.Second, true, webhooks.Concurrency),
		Log: testkit.Logger(), Now: w.clock.Now, Every: 20 * time.Millisecond, Owner: owner, LeaseFor: 300 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx)
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	w.t.Cleanup(stop)
	return stop
}

func (w *world) user(name string) chat.User {
	w.t.Helper()
	u, _, err := w.svc.CreateUser(context.Background(), w.admin, chat.CreateUserInput{Name: name, Role: chat.RoleViewer})
	if err != nil {
		w.t.Fatal(err)
	}
	return u
}

func (w *world) send(u chat.User, channel, text string) chat.SendResult {
	w.t.Helper()
	r, err := w.svc.Send(context.Background(), chat.Fresh(u), chat.SendInput{Channel: channel, Message: text})
	if err != nil {
		w.t.Fatalf("send %q: %v", text, err)
	}
	return r
}

func (w *world) register(url string, channel string, types ...webhooks.Type) webhooks.Endpoint {
	w.t.Helper()
	if len(types) == 0 {
		types = webhooks.Types
	}
	e, err := w.manager.Create(context.Background(), w.admin, webhooks.CreateInput{URL: url, Events: types, Channel: channel})
	if err != nil {
		w.t.Fatal(err)
	}
	return e
}

// eventually polls cond until it holds or 20 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type envelope struct {
	Type    string          `json:"type"`
	Channel string          `json:"channel"`
	Data    json.RawMessage `json:"data"`
}

func decode(t *testing.T, r webhookstest.Request) envelope {
	t.Helper()
	var e envelope
	if err := json.Unmarshal(r.Body, &e); err != nil {
		t.Fatalf("body %q: %v", r.Body, err)
	}
	return e
}

// distinctIDs counts the distinct webhook-ids among reqs.
func distinctIDs(reqs []webhookstest.Request) map[string]bool {
	ids := map[string]bool{}
	for _, r := range reqs {
		ids[r.ID] = true
	}
	return ids
}

// TestEveryEventTypeIsDeliveredSigned makes one event of each type in a
// channel and checks that a platform-wide webhook gets each, with its
// payload, and that every signature verifies with the Python
// implementation.
func TestEveryEventTypeIsDeliveredSigned(t *testing.T) {
	engines(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		rcv := webhookstest.NewReceiver(t)
		ep := w.register(rcv.URL, "")
		if len(ep.Secret) < 10 || ep.Secret[:6] != "whsec_" {
			t.Fatalf("secret %q is not whsec_", ep.Secret)
		}
		w.dispatch(w.store, w.source, "a")
		alice, bob := w.user("alice"), w.user("bob")
		m := w.send(alice, "general", "hello")
		if _, err := w.svc.DeleteMessage(ctx, w.admin, "general", m.Message.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := w.svc.Timeout(ctx, w.admin, bob.ID, chat.TimeoutInput{Seconds: 60, Reason: "calm", Channel: "general"}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.svc.Ban(ctx, w.admin, bob.ID, chat.BanInput{Reason: "spam", Channel: "general"}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.svc.Unban(ctx, w.admin, bob.ID, "general"); err != nil {
			t.Fatal(err)
		}
		on, off := true, false
		if _, err := w.svc.UpdateChannel(ctx, w.admin, "general", chat.ChannelPatch{Shield: &on}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.svc.UpdateChannel(ctx, w.admin, "general", chat.ChannelPatch{Shield: &off, FirstMessageReview: &on}); err != nil {
			t.Fatal(err)
		}
		carol, dave := w.user("carol"), w.user("dave")
		h1 := w.send(carol, "general", "first from carol")
		h2 := w.send(dave, "general", "first from dave")
		if h1.Held == nil || h2.Held == nil {
			t.Fatalf("first messages not held: %+v %+v", h1, h2)
		}
		if _, err := w.svc.ApproveHeld(ctx, w.admin, "general", h1.Held.ID); err != nil {
			t.Fatal(err)
		}
		if err := w.svc.DenyHeld(ctx, w.admin, "general", h2.Held.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := w.svc.SetChannelRole(ctx, w.admin, "general", alice.ID, chat.RoleModerator); err != nil {
			t.Fatal(err)
		}
		eventually(t, "every event type", func() bool {
			seen := map[string]bool{}
			for _, r := range rcv.Requests() {
				seen[decode(t, r).Type] = true
			}
			for _, ty := range webhooks.Types {
				if !seen[string(ty)] {
					return false
				}
			}
			return true
		})
		reqs := rcv.Requests()
		webhookstest.Verify(t, ep.Secret, reqs)
		for _, r := range reqs {
			e := decode(t, r)
			if e.Channel != "general" {
				t.Errorf("%s: channel %q", e.Type, e.Channel)
			}
			switch e.Type {
			case "message.created":
				var d webhooks.MessageData
				_ = json.Unmarshal(e.Data, &d)
				if d.User.ID == "" || d.ID == 0 {
					t.Errorf("message.created data %s", e.Data)
				}
			case "user.banned":
				var d webhooks.ModerationData
				_ = json.Unmarshal(e.Data, &d)
				if d.Target == nil || d.Target.ID != bob.ID || d.Reason != "spam" {
					t.Errorf("user.banned data %s", e.Data)
				}
			case "role.changed":
				var d webhooks.ModerationData
				_ = json.Unmarshal(e.Data, &d)
				if d.Role != string(chat.RoleModerator) || d.Target == nil || d.Target.ID != alice.ID {
					t.Errorf("role.changed data %s", e.Data)
				}
			case "held.created":
				var d webhooks.ModerationData
				_ = json.Unmarshal(e.Data, &d)
				if d.HeldID == 0 {
					t.Errorf("held.created without held_id: %s", e.Data)
				}
			}
		}
	})
}

// TestWebhookGetsOnlyItsChannelAndTypes: a channel's webhook gets that
// channel's events of its types, and nothing from before it was made.
func TestWebhookGetsOnlyItsChannelAndTypes(t *testing.T) {
	engines(t, func(t *testing.T, w *world) {
		alice := w.user("alice")
		w.send(alice, "general", "before the webhook")
		w.clock.Add(time.Second)
		rcv := webhookstest.NewReceiver(t)
		ep := w.register(rcv.URL, "music", webhooks.MessageCreated)
		w.dispatch(w.store, w.source, "a")
		w.send(alice, "general", "elsewhere")
		w.send(alice, "music", "one")
		w.send(alice, "music", "two")
		eventually(t, "two messages", func() bool { return len(distinctIDs(rcv.Requests())) >= 2 })
		time.Sleep(200 * time.Millisecond) // a stray delivery would arrive by now
		reqs := rcv.Requests()
		webhookstest.Verify(t, ep.Secret, reqs)
		var texts []string
		for _, r := range reqs {
			e := decode(t, r)
			var d webhooks.MessageData
			_ = json.Unmarshal(e.Data, &d)
			if e.Type != "message.created" || e.Channel != "music" {
				t.Errorf("got %s in %s", e.Type, e.Channel)
			}
			texts = append(texts, d.Text)
		}
		slices.Sort(texts) // up to Concurrency deliveries are in flight together: no order is promised
		if !slices.Equal(texts, []string{"one", "two"}) {
			t.Errorf("texts %q, want one, two", texts)
		}
	})
}

// TestReceiverDownGetsEverythingAfter: a receiver that fails for a while
// (ten minutes on the fake clock) gets every event once it is back, each
// under its first webhook-id; the deliveries show the failed attempts and
// one can be retried by hand.
func TestReceiverDownGetsEverythingAfter(t *testing.T) {
	engines(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		rcv := webhookstest.NewReceiver(t)
		var mu sync.Mutex
		failed := map[string]int{}
		rcv.Answer(func(r webhookstest.Request) (int, string) {
			mu.Lock()
			failed[r.ID]++
			mu.Unlock()
			return http.StatusServiceUnavailable, ""
		})
		ep := w.register(rcv.URL, "general", webhooks.MessageCreated)
		w.dispatch(w.store, w.source, "a")
		alice := w.user("alice")
		const n = 20
		for i := range n {
			w.send(alice, "general", "m"+string(rune('a'+i)))
		}
		eventually(t, "a failed first attempt of each", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(failed) == n
		})
		// Ten minutes down: the retries due in that time fail too.
		for range 10 {
			w.clock.Add(time.Minute)
			time.Sleep(60 * time.Millisecond)
		}
		ds, err := w.manager.Deliveries(ctx, w.admin, ep.ID, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != n {
			t.Fatalf("%d deliveries listed, want %d", len(ds), n)
		}
		for _, d := range ds {
			if d.Status != webhooks.StatusPending || d.AttemptCount < 2 || len(d.Attempts) == 0 || d.Attempts[0].Status != 503 {
				t.Fatalf("delivery after ten minutes down: %+v", d)
			}
		}
		rcv.Answer(func(webhookstest.Request) (int, string) { return http.StatusNoContent, "" })
		w.clock.Add(2 * time.Hour) // past every wait the schedule has so far
		eventually(t, "every event after the receiver is back", func() bool { return len(distinctIDs(rcv.Requests())) == n })
		got := distinctIDs(rcv.Requests())
		mu.Lock()
		for id := range failed {
			if !got[id] {
				t.Errorf("event %s failed and was never delivered", id)
			}
		}
		mu.Unlock()
		webhookstest.Verify(t, ep.Secret, rcv.Requests())
		eventually(t, "deliveries recorded delivered", func() bool {
			ds, err := w.manager.Deliveries(ctx, w.admin, ep.ID, 100)
			if err != nil {
				return false
			}
			for _, d := range ds {
				if d.Status != webhooks.StatusDelivered {
					return false
				}
			}
			return len(ds) == n
		})
		// A retry by hand sends a delivered event again, same id.
		ds, _ = w.manager.Deliveries(ctx, w.admin, ep.ID, 1)
		before := len(rcv.Requests())
		if _, err := w.manager.Retry(ctx, w.admin, ep.ID, ds[0].ID); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the retried delivery", func() bool { return len(rcv.Requests()) == before+1 })
		if last := rcv.Requests()[before]; last.ID != ds[0].ID {
			t.Errorf("retried id %s, want %s", last.ID, ds[0].ID)
		}
		if _, err := w.manager.Retry(ctx, w.admin, ep.ID, "msg_unknown"); !errors.Is(err, chat.ErrNotFound) {
			t.Errorf("retry of an unknown delivery: %v", err)
		}
	})
}

// TestFailingEndpointIsDisabledAndLogged: an endpoint that fails every
// attempt for DisableAfter is disabled, and the channel's moderation log
// says so.
func TestFailingEndpointIsDisabledAndLogged(t *testing.T) {
	engines(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		rcv := webhookstest.NewReceiver(t)
		rcv.Answer(func(webhookstest.Request) (int, string) { return http.StatusInternalServerError, "" })
		ep := w.register(rcv.URL, "general", webhooks.MessageCreated)
		w.dispatch(w.store, w.source, "a")
		alice := w.user("alice")
		w.send(alice, "general", "never received")
		eventually(t, "a first failure", func() bool {
			e, err := w.store.Endpoint(ctx, ep.ID)
			return err == nil && e.FailingSince != nil
		})
		// Step through the schedule: each retry fails, until the endpoint
		// has failed for DisableAfter.
		eventually(t, "the endpoint disabled", func() bool {
			w.clock.Add(2 * time.Hour)
			time.Sleep(30 * time.Millisecond)
			w.send(alice, "general", "more")
			e, err := w.store.Endpoint(ctx, ep.ID)
			return err == nil && e.DisabledAt != nil
		})
		page, err := w.svc.ModLog(ctx, w.admin, "general", 50, "")
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range page.Entries {
			if e.Action == webhooks.ModWebhookDisabled && e.Rule == "webhook:"+ep.ID {
				found = true
			}
		}
		if !found {
			t.Fatalf("no webhook_disabled entry in the moderation log: %+v", page.Entries)
		}
	})
}

// TestReplicaKilledMidDeliveryDeliversEverything: two replicas on one
// redis-server share the queue; one is killed (its context and its
// connection cut, so it records nothing more) while deliveries are in
// flight; every event still arrives at least once.
func TestReplicaKilledMidDeliveryDeliversEverything(t *testing.T) {
	w := newWorld(t, "redis")
	rcv := webhookstest.NewReceiver(t)
	rcv.Answer(func(webhookstest.Request) (int, string) {
		time.Sleep(5 * time.Millisecond) // deliveries stay in flight a while
		return http.StatusOK, ""
	})
	ep := w.register(rcv.URL, "general", webhooks.MessageCreated)
	storeA, srcA, closeA := w.newStore()
	storeB, srcB, closeB := w.newStore()
	t.Cleanup(closeB)
	stopA := w.dispatch(storeA, srcA, "replica-a")
	w.dispatch(storeB, srcB, "replica-b")
	alice := w.user("alice")
	const n = 300
	var want []int64
	for i := range n {
		want = append(want, w.send(alice, "general", "message "+string(rune('A'+i%26))+string(rune('a'+i/26))).Message.ID)
	}
	eventually(t, "some deliveries", func() bool { return len(rcv.Requests()) > 20 })
	closeA() // the connection goes first: A writes nothing more
	stopA()
	// A's claims run out (ClaimFor on the fake clock) and B takes them.
	w.clock.Add(webhooks.ClaimFor + time.Second)
	eventually(t, "every event", func() bool {
		got := map[int64]bool{}
		for _, r := range rcv.Requests() {
			var e struct {
				Data webhooks.MessageData `json:"data"`
			}
			_ = json.Unmarshal(r.Body, &e)
			got[e.Data.ID] = true
		}
		for _, id := range want {
			if !got[id] {
				return false
			}
		}
		return true
	})
	webhookstest.Verify(t, ep.Secret, rcv.Requests())
	t.Logf("%d events, %d requests (duplicates: %d)", n, len(rcv.Requests()), len(rcv.Requests())-len(distinctIDs(rcv.Requests())))
}

// TestRefusedDestinations: without CHAT_WEBHOOK_ALLOW_PRIVATE the client
// refuses inward addresses at dial time, after resolution (a name that
// resolves to loopback too), and registration refuses literal ones; with
// it, loopback is reached.
func TestRefusedDestinations(t *testing.T) {
	for _, c := range []struct {
		addr   string
		public bool
	}{
		{"127.0.0.1", false}, {"10.1.2.3", false}, {"172.16.0.1", false}, {"192.168.1.1", false},
		{"169.254.169.254", false}, {"0.0.0.0", false}, {"100.64.0.1", false}, {"224.0.0.1", false},
		{"::1", false}, {"fe80::1", false}, {"fc00::1", false}, {"fd12:3456::1", false}, {"::ffff:127.0.0.1", false},
		{"::ffff:10.0.0.1", false}, {"::ffff:169.254.169.254", false}, {"::", false}, {"64:ff9b::7f00:1", false},
		{"8.8.8.8", true}, {"1.1.1.1", true}, {"2606:4700:4700::1111", true}, {"::ffff:8.8.8.8", true},
	} {
		if got := webhooks.Public(netip.MustParseAddr(c.addr)); got != c.public {
			t.Errorf("Public(%s) = %v, want %v", c.addr, got, c.public)
		}
	}
	rcv := webhookstest.NewReceiver(t)
	_, port, _ := net.SplitHostPort(rcv.Listener.Addr().String())
	for _, url := range []string{rcv.URL, "http://localhost:" + port + "/", "http://[::ffff:127.0.0.1]:" + port + "/"} {
		res, err := webhooks.NewClient(time.Second, false, 1).Post(url, "application/json", nil)
		if err == nil {
			res.Body.Close()
			t.Errorf("POST %s: reached, want refused", url)
		} else if !webhooks.Refused(err) {
			t.Errorf("POST %s: %v, want a refused destination", url, err)
		}
	}
	res, err := webhooks.NewClient(time.Second, true, 1).Post(rcv.URL, "application/json", nil)
	if err != nil {
		t.Fatalf("with private allowed: %v", err)
	}
	res.Body.Close()
	reached := len(rcv.Requests())

	// Registration: a literal inward address is refused (400) unless allowed.
	w := newWorld(t, "memory")
	strict := webhooks.NewManager(w.store, w.svc, false)
	for _, url := range []string{"http://127.0.0.1/x", "http://[::1]/", "http://169.254.169.254/latest", "http://localhost:8080/", "ftp://example.com/", "http://user:pw@example.com/"} {
		_, err := strict.Create(context.Background(), w.admin, webhooks.CreateInput{URL: url, Events: []webhooks.Type{webhooks.MessageCreated}})
		if chat.KindOf(err) != chat.KindInvalid {
			t.Errorf("register %s: %v, want invalid", url, err)
		}
	}
	if _, err := strict.Create(context.Background(), w.admin, webhooks.CreateInput{URL: "https://hooks.example.com/chat", Events: []webhooks.Type{webhooks.MessageCreated}}); err != nil {
		t.Errorf("a public name: %v", err)
	}

	// A delivery to loopback without the flag fails with the refusal.
	w2 := newWorld(t, "memory")
	ep := w2.register(rcv.URL, "general", webhooks.MessageCreated)
	d := webhooks.New(webhooks.Options{Store: w2.store, Source: w2.source, Client: webhooks.NewClient(time.Second, false, 1), Now: w2.clock.Now, Every: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Run(ctx)
	w2.send(w2.user("alice"), "general", "inward")
	eventually(t, "a refused attempt", func() bool {
		ds, _ := w2.manager.Deliveries(context.Background(), w2.admin, ep.ID, 10)
		return len(ds) == 1 && len(ds[0].Attempts) == 1
	})
	ds, _ := w2.manager.Deliveries(context.Background(), w2.admin, ep.ID, 10)
	if a := ds[0].Attempts[0]; a.Status != 0 || !containsRefusal(a.Error) {
		t.Errorf("attempt %+v, want a refused destination", a)
	}
	if n := len(rcv.Requests()) - reached; n != 0 {
		t.Errorf("the receiver got %d refused requests", n)
	}
}

func containsRefusal(s string) bool {
	return strings.Contains(s, webhooks.ErrRefusedDestination.Error())
}
