package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/apistack/platform/libs/apiserver/jwtauth"
	"github.com/apistack/platform/services/chat/client"
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

func TestRESTSendHistoryUsersAndModeration(t *testing.T) {
	s := startServer(t, serverConfig{})
	ctx := ctxFor(t)
	admin := client.New(s.base, adminToken)
	u, err := admin.CreateUser(ctx, "ann", "viewer")
	if err != nil || u.Token == "" || u.ID == "" || u.Role != "viewer" {
		t.Fatalf("CreateUser: %+v, %v", u, err)
	}
	ann := client.New(s.base, u.Token)
	me, err := ann.Me(ctx, "")
	if err != nil || me.ID != u.ID {
		t.Fatalf("Me: %+v, %v", me, err)
	}

	// A send repeated with its key stores once.
	first, err := ann.Send(ctx, client.SendRequest{Channel: "room", Message: "hello", IdempotencyKey: "k-1"})
	if err != nil || first.Status != http.StatusCreated || first.Message.ID == 0 || first.Message.Text != "hello" || first.Replayed {
		t.Fatalf("Send: %+v, %v", first, err)
	}
	again, err := ann.Send(ctx, client.SendRequest{Channel: "room", Message: "hello", IdempotencyKey: "k-1"})
	if err != nil || !again.Replayed || again.Message.ID != first.Message.ID {
		t.Fatalf("repeated Send: %+v, %v", again, err)
	}
	for i := range 4 {
		if _, err := ann.SendRetry(ctx, client.SendRequest{Channel: "room", Message: fmt.Sprint("m", i)}, client.Backoff{}); err != nil {
			t.Fatal(err)
		}
	}

	// Paging: the latest two, then the older ones, then everything.
	p, err := ann.Messages(ctx, "room", client.Page{Limit: 2})
	if err != nil || len(p.Messages) != 2 || p.Messages[1].Text != "m3" {
		t.Fatalf("latest page: %+v, %v", p, err)
	}
	older, err := ann.Messages(ctx, "room", client.Page{Limit: 10, Before: p.Messages[0].ID})
	if err != nil || len(older.Messages) != 3 || older.Messages[0].Text != "hello" {
		t.Fatalf("older page: %+v, %v", older, err)
	}
	all, err := ann.AllMessages(ctx, "room", 100)
	if err != nil || len(all) != 5 {
		t.Fatalf("AllMessages: %d, %v", len(all), err)
	}

	// Bad input is the service's error body, typed.
	_, err = ann.Send(ctx, client.SendRequest{Channel: "room", Message: "   "})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusBadRequest || ce.Title != "Bad Request" || ce.Message == "" {
		t.Fatalf("blank send: %v", err)
	}

	// Roles and moderation.
	if a, err := admin.SetChannelRole(ctx, "room", u.ID, "vip"); err != nil || a.Channel == nil || a.Channel.GivenRole != "vip" {
		t.Fatalf("SetChannelRole: %+v, %v", a, err)
	}
	if err := admin.RemoveChannelRole(ctx, "room", u.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Timeout(ctx, u.ID, client.Sanction{Channel: "room", Duration: time.Minute, Reason: "calm down"}); err != nil {
		t.Fatal(err)
	}
	_, err = ann.Send(ctx, client.SendRequest{Channel: "room", Message: "still here"})
	if !errors.As(err, &ce) || ce.Status != http.StatusForbidden || ce.Reason != "timed_out" || ce.Until == nil {
		t.Fatalf("send while timed out: %v", err)
	}
	if _, err := admin.Unban(ctx, u.ID, "room"); err != nil {
		t.Fatal(err)
	}
	if _, err := ann.Send(ctx, client.SendRequest{Channel: "room", Message: "back"}); err != nil {
		t.Fatalf("send after unban: %v", err)
	}
	if _, err := admin.Ban(ctx, u.ID, client.Sanction{Reason: "spam"}); err != nil {
		t.Fatal(err)
	}
	if got, err := admin.User(ctx, u.ID); err != nil || !got.Banned {
		t.Fatalf("User after Ban: %+v, %v", got, err)
	}
	if client.StatusOf(errors.New("x")) != 0 {
		t.Error("StatusOf of a plain error")
	}
}

// collector gathers what a subscription's OnEvent sees.
type collector struct {
	mu     sync.Mutex
	hellos []client.Event
	msgs   []client.Message
	seen   chan struct{}
}

func newCollector() *collector { return &collector{seen: make(chan struct{}, 1024)} }

func (c *collector) on(ev client.Event) {
	c.mu.Lock()
	switch ev.Type {
	case client.TypeHello:
		c.hellos = append(c.hellos, ev)
	case client.TypeMessage:
		c.msgs = append(c.msgs, *ev.Message)
	}
	c.mu.Unlock()
	select {
	case c.seen <- struct{}{}:
	default:
	}
}

// until waits for cond over what was collected.
func (c *collector) until(t *testing.T, what string, cond func(hellos []client.Event, msgs []client.Message) bool) {
	t.Helper()
	deadline := time.After(wait)
	for {
		c.mu.Lock()
		ok := cond(c.hellos, c.msgs)
		c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-c.seen:
		case <-deadline:
			c.mu.Lock()
			defer c.mu.Unlock()
			t.Fatalf("%s: not within %s (hellos %+v, %d messages)", what, wait, c.hellos, len(c.msgs))
		}
	}
}

// sendN sends texts prefix0..prefixN-1 and returns them.
func sendN(t *testing.T, ctx context.Context, c *client.Client, channel, prefix string, n int) []string {
	t.Helper()
	var texts []string
	for i := range n {
		text := fmt.Sprint(prefix, i)
		if _, err := c.Send(ctx, client.SendRequest{Channel: channel, Message: text, IdempotencyKey: client.NewIdempotencyKey()}); err != nil {
			t.Fatalf("send %s: %v", text, err)
		}
		texts = append(texts, text)
	}
	return texts
}

// checkOnce asserts msgs holds exactly want, in order.
func checkOnce(t *testing.T, msgs []client.Message, want []string) {
	t.Helper()
	if len(msgs) != len(want) {
		t.Fatalf("got %d messages, want %d: %+v", len(msgs), len(want), msgs)
	}
	for i, m := range msgs {
		if m.Text != want[i] {
			t.Fatalf("message %d is %q, want %q (every one once, in order)", i, m.Text, want[i])
		}
		if i > 0 && m.ID <= msgs[i-1].ID {
			t.Fatalf("ids out of order: %d after %d", m.ID, msgs[i-1].ID)
		}
	}
}

// TestSubscriptionRecoversAfterTheSocketDrops: memory engine, the
// connection cut under the client (no close frame); Redis, the replica
// holding the socket shut down (1001) and the client resuming on the
// other. Messages sent while it was away arrive by recovery, once each,
// in order.
func TestSubscriptionRecoversAfterTheSocketDrops(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		s := startServer(t, serverConfig{})
		rl := startRelay(t, s.srv.Addr())
		testRecovery(t, s.base, []string{rl.base()}, rl.cut)
	})
	t.Run("redis", func(t *testing.T) {
		rs := redisServer(t)
		prefix := testPrefix()
		a := startServer(t, serverConfig{redisURL: rs.URL(), prefix: prefix})
		b := startServer(t, serverConfig{redisURL: rs.URL(), prefix: prefix})
		testRecovery(t, b.base, []string{a.base, b.base}, a.stop)
	})
}

func testRecovery(t *testing.T, sendBase string, bases []string, drop func()) {
	ctx := ctxFor(t)
	sender := client.New(sendBase, adminToken)
	col := newCollector()
	var drops sync.Map
	reader := client.New(bases[0], "")
	// The first retry waits at least 0.5 s: long enough for the sends below
	// to land while no socket is open, so they come by recovery.
	sub := reader.Subscribe(ctx, "room", client.SubscribeOptions{Bases: bases, OnEvent: col.on,
		Backoff: client.Backoff{Min: time.Second, Max: 2 * time.Second},
		OnDrop:  func(err error) { drops.Store(err.Error(), true) }})
	defer sub.Close()
	col.until(t, "first hello", func(h []client.Event, _ []client.Message) bool { return len(h) == 1 })
	want := sendN(t, ctx, sender, "room", "live", 3)
	col.until(t, "live messages", func(_ []client.Event, m []client.Message) bool { return len(m) == 3 })
	before := sub.Cursor()
	if before.MessageID() != 3 {
		t.Fatalf("cursor after 3 messages: %q", before)
	}

	drop()
	want = append(want, sendN(t, ctx, sender, "room", "away", 5)...)
	col.until(t, "recovery", func(h []client.Event, m []client.Message) bool { return len(h) >= 2 && len(m) >= 8 })
	col.mu.Lock()
	hello := col.hellos[1]
	msgs := append([]client.Message(nil), col.msgs...)
	col.mu.Unlock()
	if !hello.Recovered {
		t.Fatalf("second hello %+v: want recovered", hello)
	}
	checkOnce(t, msgs, want)
	if sub.Connects() != 2 {
		t.Errorf("%d connections, want 2", sub.Connects())
	}
	if sub.Cursor().MessageID() != 8 {
		t.Errorf("cursor %q after 8 messages", sub.Cursor())
	}
	n := 0
	drops.Range(func(any, any) bool { n++; return true })
	if n == 0 {
		t.Error("OnDrop was not told of the drop")
	}
	// Still live after the recovery.
	want = append(want, sendN(t, ctx, sender, "room", "after", 2)...)
	col.until(t, "live after recovery", func(_ []client.Event, m []client.Message) bool { return len(m) >= 10 })
	col.mu.Lock()
	checkOnce(t, col.msgs, want)
	col.mu.Unlock()
}

// TestSubscriptionSendsOverTheSocket: sends are acked with the stored
// message; a repeated key answers replayed; a refusal is a typed error.
func TestSubscriptionSendsOverTheSocket(t *testing.T) {
	s := startServer(t, serverConfig{})
	ctx := ctxFor(t)
	col := newCollector()
	sub := client.New(s.base, adminToken).Subscribe(ctx, "room", client.SubscribeOptions{OnEvent: col.on})
	defer sub.Close()
	col.until(t, "hello", func(h []client.Event, _ []client.Message) bool { return len(h) == 1 })
	if col.hellos[0].User == nil || col.hellos[0].User.ID == "" {
		t.Fatalf("hello without the user: %+v", col.hellos[0])
	}
	ack, err := sub.Send(ctx, "over the socket", "sock-1")
	if err != nil || ack.Type != client.TypeAck || ack.Message == nil || ack.Message.Text != "over the socket" || ack.Replayed {
		t.Fatalf("Send: %+v, %v", ack, err)
	}
	again, err := sub.Send(ctx, "over the socket", "sock-1")
	if err != nil || !again.Replayed || again.Message.ID != ack.Message.ID {
		t.Fatalf("repeated Send: %+v, %v", again, err)
	}
	_, err = sub.Send(ctx, "", "")
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusBadRequest {
		t.Fatalf("empty send: %v", err)
	}
	if err := sub.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	col.until(t, "own message, once", func(_ []client.Event, m []client.Message) bool { return len(m) == 1 })
}

var jwtSecret = []byte("client-test-secret-0123456789abcdef")

// TestSubscriptionRenewsPlatformTokens: a platform token living 4 s is
// renewed on the open socket by a refresh frame before its exp, so the
// socket outlives it (no 4002, no second connection).
func TestSubscriptionRenewsPlatformTokens(t *testing.T) {
	v, err := jwtauth.New(jwtauth.Config{Secret: jwtSecret})
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, serverConfig{identities: v})
	ctx := ctxFor(t)
	var issued sync.Map
	n := 0
	var mu sync.Mutex
	source := func(context.Context) (string, error) {
		mu.Lock()
		n++
		mu.Unlock()
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "viewer-1", "name": "viewer1",
			"exp": time.Now().Add(4 * time.Second).Unix()}).SignedString(jwtSecret)
		issued.Store(tok, true)
		return tok, err
	}
	col := newCollector()
	var dropped []error
	sub := client.New(s.base, "").Subscribe(ctx, "room", client.SubscribeOptions{OnEvent: col.on, TokenSource: source,
		RefreshBefore: 2 * time.Second, OnDrop: func(err error) { mu.Lock(); dropped = append(dropped, err); mu.Unlock() }})
	defer sub.Close()
	col.until(t, "hello", func(h []client.Event, _ []client.Message) bool { return len(h) == 1 })
	if col.hellos[0].User == nil || col.hellos[0].User.Name != "viewer1" {
		t.Fatalf("hello %+v: want the token's user", col.hellos[0])
	}
	time.Sleep(7 * time.Second) // past the first token's exp
	if _, err := sub.Send(ctx, "still signed in", ""); err != nil {
		t.Fatalf("send after the first token's exp: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if sub.Connects() != 1 || len(dropped) != 0 {
		t.Fatalf("%d connections, drops %v: the refresh did not keep the socket", sub.Connects(), dropped)
	}
	if n < 2 {
		t.Fatalf("token source called %d times, want a renewal", n)
	}
}

// TestSubscriptionStopsWhenReconnectingCannotHelp: a token the server does
// not know ends the subscription (401) instead of retrying forever.
func TestSubscriptionStopsWhenReconnectingCannotHelp(t *testing.T) {
	s := startServer(t, serverConfig{})
	ctx := ctxFor(t)
	sub := client.New(s.base, "no-such-token-0123456789").Subscribe(ctx, "room", client.SubscribeOptions{})
	select {
	case <-sub.Done():
	case <-time.After(wait):
		t.Fatal("subscription with a refused token still running")
	}
	if client.StatusOf(sub.Err()) != http.StatusUnauthorized {
		t.Fatalf("Err = %v, want a 401", sub.Err())
	}
}
