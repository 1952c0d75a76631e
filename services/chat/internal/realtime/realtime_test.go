package realtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/realtime"
)

// twoReplicas starts two chat processes' worth of server, Service and Hub
// sharing one store configuration (with Redis: one server, one key prefix).
func twoReplicas(t *testing.T, cfg replicaConfig) (*replica, *replica) {
	t.Helper()
	prefix := testPrefix()
	a := startReplica(t, cfg, prefix)
	b := startReplica(t, cfg, prefix)
	return a, b
}

// onEngines runs test on the Redis engine, a and b two replicas sharing
// one server, and on the memory engine, a and b the same replica: what
// must hold across replicas must hold within one.
func onEngines(t *testing.T, test func(t *testing.T, a, b *replica)) {
	t.Run("redis", func(t *testing.T) {
		rs := redisServer(t)
		a, b := twoReplicas(t, replicaConfig{redisURL: rs.URL()})
		test(t, a, b)
	})
	t.Run("memory", func(t *testing.T) {
		r := startReplica(t, replicaConfig{}, testPrefix())
		test(t, r, r)
	})
}

// join opens a socket on channel as the user of token and reads its hello.
func join(t *testing.T, base, channel, token string) *client {
	t.Helper()
	c := dial(t, base, "channel="+channel, bearer(token))
	c.hello()
	return c
}

func bearer(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }

func TestHelloWithoutSinceIsNotRecoveredAndStartsAtHead(t *testing.T) {
	r := startReplica(t, replicaConfig{publicRead: true}, testPrefix())
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		if _, err := r.svc.Send(ctx, chat.Held(r.admin), chat.SendInput{Message: fmt.Sprint("m", i)}); err != nil {
			t.Fatal(err)
		}
	}
	c := dial(t, r.base, "channel=general", nil)
	h := c.hello()
	if h.Recovered || !h.LastID.At(chat.Cursor{ID: 3}) || h.Channel != "general" {
		t.Fatalf("hello = %+v", h)
	}
	c.waitPresence(1)
	if _, err := r.svc.Send(ctx, chat.Held(r.admin), chat.SendInput{Message: "m4"}); err != nil {
		t.Fatal(err)
	}
	ms := c.messages(1)
	if ms[0].ID != 4 || ms[0].Text != "m4" {
		t.Fatalf("live message %+v", ms[0])
	}
}

func TestSendOverSocketGoesThroughTheServiceRules(t *testing.T) {
	r := startReplica(t, replicaConfig{publicRead: true}, testPrefix())
	_, viewerToken := r.user(chat.RoleViewer, "viewer1")
	ctx := context.Background()
	if _, err := r.svc.CreateCommand(ctx, r.admin, chat.CommandInput{Command: "!hi", Response: "hello ${user}"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.CreateFilter(ctx, r.admin, chat.FilterInput{Kind: "blocked_term", Pattern: "badword", Action: "block"}); err != nil {
		t.Fatal(err)
	}
	anon := dial(t, r.base, "", nil)
	anon.hello()
	if e := anon.send("hello"); e.Type != "error" || e.Code != "unauthorized" || e.Status != 401 {
		t.Fatalf("anonymous send = %+v", e)
	}

	c := dial(t, r.base, "channel=general", nil)
	c.hello()
	if e := c.auth("chat_nope"); e.Type != "error" || e.Code != "unauthorized" {
		t.Fatalf("bad token = %+v", e)
	}
	if e := c.auth(viewerToken); e.Type != "ack" || e.User == nil || e.User.Name != "viewer1" {
		t.Fatalf("auth = %+v", e)
	}
	ack := c.send("  first  ")
	if ack.Type != "ack" || ack.msg(t).Text != "first" || ack.msg(t).ID != 1 {
		t.Fatalf("ack = %+v %s", ack, ack.Raw)
	}
	if e := c.send(strings.Repeat("x", 501)); e.Code != "invalid" || e.Status != 400 {
		t.Fatalf("too long = %+v", e)
	}
	if e := c.send("this has BADWORD in it"); e.Code != "blocked" || e.Status != 422 {
		t.Fatalf("blocked = %+v", e)
	}
	ack = c.send("!hi")
	if ack.Type != "ack" || ack.Reply == nil || !ack.Reply.Bot || ack.Reply.Text != "hello viewer1" {
		t.Fatalf("command ack = %+v", ack)
	}
	// Subscribers see exactly what was stored, the bot reply marked.
	ms := c.messages(3)
	if ms[0].Text != "first" || ms[1].Text != "!hi" || !ms[2].Bot || ms[2].Text != "hello viewer1" {
		t.Fatalf("delivered %+v", ms)
	}
	// Slow mode answers 429 with the wait.
	if _, err := r.svc.UpdateChannel(ctx, r.admin, "general", chat.ChannelPatch{SlowModeSeconds: ptr(60)}); err != nil {
		t.Fatal(err)
	}
	c.send("one")
	if e := c.send("two"); e.Code != "slow_mode" || e.Status != 429 || e.ID == nil {
		t.Fatalf("slow mode = %+v", e)
	}
	// A ban closes the banned user's socket (4004); the ban event reaches
	// the channel's other subscribers, and the ban holds for a new socket.
	vu, _ := r.svc.Users(ctx, r.admin)
	var viewer chat.User
	for _, u := range vu {
		if u.Name == "viewer1" {
			viewer = u
		}
	}
	watcher := dial(t, r.base, "channel=general", nil)
	watcher.hello()
	if _, err := r.svc.Ban(ctx, r.admin, viewer.ID, chat.BanInput{Reason: "spam"}); err != nil {
		t.Fatal(err)
	}
	if code := c.waitClosed(); code != realtime.CloseUserBanned {
		t.Fatalf("banned user's socket closed with %d, want %d", code, realtime.CloseUserBanned)
	}
	ban := watcher.next()
	if ban.Type != string(chat.EventUserBanned) || ban.Moderation == nil || ban.Moderation.User.ID != viewer.ID {
		t.Fatalf("ban event = %+v", ban)
	}
	c = dial(t, r.base, "channel=general", bearer(viewerToken))
	c.hello()
	if e := c.send("still here?"); e.Code != "forbidden" || e.Status != 403 {
		t.Fatalf("banned = %+v", e)
	}
	if e := c.request(map[string]any{"type": "ping"}); e.Type != "pong" {
		t.Fatalf("ping = %+v", e)
	}
	if e := c.request(map[string]any{"type": "dance"}); e.Code != "bad_request" {
		t.Fatalf("unknown type = %+v", e)
	}
}

func ptr[T any](v T) *T { return &v }

func TestAuthorizationHeaderAuthenticates(t *testing.T) {
	r := startReplica(t, replicaConfig{publicRead: true}, testPrefix())
	c := dial(t, r.base, "channel=general", bearer(adminToken))
	if h := c.hello(); h.User == nil || h.User.Role != chat.RoleBroadcaster {
		t.Fatalf("hello user = %+v", h.User)
	}
	if e := c.send("via header"); e.Type != "ack" {
		t.Fatalf("send = %+v", e)
	}
	_, resp, err := tryDial(t, r.base, "channel=general", bearer("chat_unknown"))
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != "Bearer" {
		t.Fatalf("unknown token: err %v resp %v, want 401 as over REST", err, resp)
	}
	// A malformed header gets the library's answer for authenticated routes.
	for _, h := range []string{"Token abc", "Bearer  " + adminToken, "Bearer a b", adminToken} {
		_, resp, err := tryDial(t, r.base, "channel=general", http.Header{"Authorization": {h}})
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != "Bearer" {
			t.Fatalf("%q: err %v resp %v, want 401", h, err, resp)
		}
		var body struct{ Message string }
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Message != "Invalid authorization header format. Expected: Bearer <token>" {
			t.Fatalf("%q: body %+v (%v)", h, body, err)
		}
	}
}

// hello names the user with the role it has in the channel: a viewer made a moderator of
// one channel is a moderator in that channel's hello and a viewer in another's.
func TestHelloShowsTheChannelRole(t *testing.T) {
	r := startReplica(t, replicaConfig{publicRead: true}, testPrefix())
	viewer, token := r.user(chat.RoleViewer, "chanmod")
	if _, err := r.svc.SetChannelRole(context.Background(), r.admin, "general", viewer.ID, chat.RoleModerator); err != nil {
		t.Fatal(err)
	}
	if h := dial(t, r.base, "channel=general", bearer(token)).hello(); h.User == nil || h.User.Role != chat.RoleModerator {
		t.Fatalf("hello in the channel it moderates: user %+v, want role moderator", h.User)
	}
	if h := dial(t, r.base, "channel=elsewhere", bearer(token)).hello(); h.User == nil || h.User.Role != chat.RoleViewer {
		t.Fatalf("hello in another channel: user %+v, want role viewer", h.User)
	}
}

func TestPrivateReadingNeedsAnAuthFrame(t *testing.T) {
	r := startReplica(t, replicaConfig{publicRead: false, opts: realtime.Options{AuthTimeout: 500 * time.Millisecond}}, testPrefix())
	silent := dial(t, r.base, "channel=general", nil)
	if code := silent.waitClosed(); code != realtime.CloseUnauthorized {
		t.Fatalf("close code %d, want 4001", code)
	}
	c := dial(t, r.base, "channel=general", nil)
	if e := c.auth(adminToken); e.Type != "ack" {
		t.Fatalf("auth = %+v", e)
	}
	if h := c.hello(); h.User == nil {
		t.Fatalf("hello without user: %+v", h)
	}
}

func TestHandshakeChecks(t *testing.T) {
	r := startReplica(t, replicaConfig{publicRead: true, cors: "https://chat.example"}, testPrefix())
	for _, tc := range []struct {
		name   string
		query  string
		origin string
		status int
	}{
		{"foreign origin", "channel=general", "https://evil.example", http.StatusForbidden},
		{"bad channel", "channel=No Spaces!", "", http.StatusBadRequest},
		{"bad since", "since=abc", "", http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.origin != "" {
				h.Set("Origin", tc.origin)
			}
			_, resp, err := tryDial(t, r.base, tc.query, h)
			if err == nil || resp == nil || resp.StatusCode != tc.status {
				t.Fatalf("err %v, resp %v; want status %d", err, resp, tc.status)
			}
		})
	}
	// Listed and same origins pass.
	dial(t, r.base, "", http.Header{"Origin": {"https://chat.example"}}).hello()
	dial(t, r.base, "", http.Header{"Origin": {r.base}}).hello()
	// A plain GET is told to upgrade.
	resp, err := http.Get(r.base + realtime.WSPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired {
		t.Fatalf("plain GET: %d", resp.StatusCode)
	}
}

func TestOversizedAndBinaryFramesClose(t *testing.T) {
	r := startReplica(t, replicaConfig{publicRead: true}, testPrefix())
	c := dial(t, r.base, "", nil)
	c.hello()
	big := `{"type":"send","message":"` + strings.Repeat("x", 5000) + `"}`
	_ = c.ws.Write(context.Background(), websocket.MessageText, []byte(big))
	if code := c.waitClosed(); code != websocket.StatusMessageTooBig {
		t.Fatalf("close code %d, want 1009", code)
	}
	b := dial(t, r.base, "", nil)
	b.hello()
	_ = b.ws.Write(context.Background(), websocket.MessageBinary, []byte("hi"))
	if code := b.waitClosed(); code != websocket.StatusUnsupportedData {
		t.Fatalf("close code %d, want 1003", code)
	}
}

func TestPerConnectionSendLimit(t *testing.T) {
	r := startReplica(t, replicaConfig{publicRead: true, opts: realtime.Options{SendRate: 0.001, SendBurst: 2}}, testPrefix())
	c := dial(t, r.base, "", bearer(adminToken))
	c.hello()
	c.send("a")
	c.send("b")
	if e := c.send("c"); e.Code != "rate_limited" || e.Status != 429 {
		t.Fatalf("third send = %+v", e)
	}
}

func TestShutdownClosesWithGoingAway(t *testing.T) {
	r := startReplica(t, replicaConfig{publicRead: true}, testPrefix())
	c := dial(t, r.base, "", nil)
	c.hello()
	r.stop()
	if code := c.waitClosed(); code != websocket.StatusGoingAway {
		t.Fatalf("close code %d, want 1001", code)
	}
}

// testRecoveryAfterClientDrop: a client that drops and comes back with
// since=<last cursor> gets exactly what it missed, then live events.
func testRecoveryAfterClientDrop(t *testing.T, a, b *replica) {
	ctx := context.Background()
	c := dial(t, a.base, "channel=room1", nil)
	c.hello()
	for i := 1; i <= 5; i++ {
		if _, err := a.svc.Send(ctx, chat.Held(a.admin), chat.SendInput{Channel: "room1", Message: fmt.Sprint("m", i)}); err != nil {
			t.Fatal(err)
		}
	}
	got := c.messages(5)
	last := got[4].ID
	c.ws.CloseNow()
	for i := 6; i <= 12; i++ {
		if _, err := b.svc.Send(ctx, chat.Held(b.admin), chat.SendInput{Channel: "room1", Message: fmt.Sprint("m", i)}); err != nil {
			t.Fatal(err)
		}
	}
	// Deleting message 3 adds an event after 12 that the client must also get.
	if _, err := b.svc.DeleteMessage(ctx, b.admin, "room1", 3); err != nil {
		t.Fatal(err)
	}
	c2 := dial(t, b.base, fmt.Sprintf("channel=room1&since=%d", last), nil)
	h := c2.hello()
	if !h.Recovered {
		t.Fatalf("hello %+v, want recovered", h)
	}
	// Live sends race with the replay on purpose.
	go func() {
		for i := 13; i <= 20; i++ {
			_, _ = a.svc.Send(ctx, chat.Held(a.admin), chat.SendInput{Channel: "room1", Message: fmt.Sprint("m", i)})
		}
	}()
	var ids []int64
	deleted := false
	for len(ids) < 15 || !deleted {
		e := c2.next()
		switch e.Type {
		case "message":
			ids = append(ids, e.msg(t).ID)
		case "message_deleted":
			if e.msg(t).ID != 3 || !e.Cursor.At(chat.Cursor{ID: 12, Seq: 1}) {
				t.Fatalf("deletion %+v", e)
			}
			deleted = true
		}
	}
	for i, id := range ids {
		if id != int64(6+i) {
			t.Fatalf("recovered ids %v: want 6..20 in order, once", ids)
		}
	}
	select {
	case e := <-c2.events:
		t.Fatalf("extra event %+v", e)
	case <-time.After(300 * time.Millisecond):
	}
}

func TestMemoryRecoveryAfterClientDrop(t *testing.T) {
	r := startReplica(t, replicaConfig{publicRead: true}, testPrefix())
	testRecoveryAfterClientDrop(t, r, r)
}

func TestRedisRecoveryAfterClientDropAcrossReplicas(t *testing.T) {
	rs := redisServer(t)
	a, b := twoReplicas(t, replicaConfig{redisURL: rs.URL(), publicRead: true})
	testRecoveryAfterClientDrop(t, a, b)
}

func TestRecoveryFromOutsideTheWindowSaysReload(t *testing.T) {
	for _, name := range []string{"memory", "redis"} {
		t.Run(name, func(t *testing.T) {
			cfg := replicaConfig{publicRead: true, history: 5}
			if name == "redis" {
				cfg.redisURL = redisServer(t).URL()
			}
			r := startReplica(t, cfg, testPrefix())
			for i := 1; i <= 12; i++ {
				if _, err := r.svc.Send(context.Background(), chat.Held(r.admin), chat.SendInput{Message: fmt.Sprint("m", i)}); err != nil {
					t.Fatal(err)
				}
			}
			c := dial(t, r.base, "since=2", nil)
			h := c.hello()
			if h.Recovered || !h.LastID.At(chat.Cursor{ID: 12}) {
				t.Fatalf("hello %+v: want recovered false at 12", h)
			}
			// A cursor beyond the log's end (the store was reset) too.
			c = dial(t, r.base, "since=99", nil)
			if h := c.hello(); h.Recovered {
				t.Fatalf("hello %+v for a cursor past the end", h)
			}
			c = dial(t, r.base, "since=10", nil)
			if h := c.hello(); !h.Recovered {
				t.Fatalf("hello %+v inside the window", h)
			}
			if ms := c.messages(2); ms[0].ID != 11 || ms[1].ID != 12 {
				t.Fatalf("replayed %+v", ms)
			}
		})
	}
}

// TestCrossReplicaDeliveryInChannelOrder: senders on both replicas at once;
// every subscriber on either replica sees every message once, in the order
// the store gave them ids.
func TestCrossReplicaDeliveryInChannelOrder(t *testing.T) {
	testCrossReplicaOrder(t, redisServer(t).URL())
}

func testCrossReplicaOrder(t *testing.T, redisURL string) {
	a, b := twoReplicas(t, replicaConfig{redisURL: redisURL, publicRead: true, opts: realtime.Options{SendRate: 1000, SendBurst: 1000}})
	var subs []*client
	for i := 0; i < 6; i++ {
		r := a
		if i%2 == 1 {
			r = b
		}
		c := dial(t, r.base, "channel=xr", nil)
		c.hello()
		subs = append(subs, c)
	}
	const perSender = 60
	var wg sync.WaitGroup
	for _, r := range []*replica{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := join(t, r.base, "xr", adminToken)
			for i := 0; i < perSender; i++ {
				if e := s.send(fmt.Sprintf("%s-%d", r.hub.ReplicaID(), i)); e.Type != "ack" {
					t.Errorf("send: %+v", e)
					return
				}
			}
		}()
	}
	wg.Wait()
	for n, c := range subs {
		ms := c.messages(2 * perSender)
		for i, m := range ms {
			if m.ID != int64(i+1) {
				t.Fatalf("subscriber %d: message %d has id %d; want ids 1..%d in order", n, i, m.ID, 2*perSender)
			}
		}
	}
	// Presence counts every subscriber and sender over both replicas.
	subs[0].waitPresence(8)
	subs[1].waitPresence(8)
}

// TestRecoveryAfterReplicaRestart: a replica stops (clients get 1001),
// messages go on through the other, the replica comes back and the
// client recovers all it missed.
func TestRecoveryAfterReplicaRestart(t *testing.T) {
	rs := redisServer(t)
	prefix := testPrefix()
	cfg := replicaConfig{redisURL: rs.URL(), publicRead: true}
	a := startReplica(t, cfg, prefix)
	b := startReplica(t, cfg, prefix)
	ctx := context.Background()
	c := dial(t, a.base, "channel=rr", nil)
	c.hello()
	for i := 1; i <= 3; i++ {
		if _, err := b.svc.Send(ctx, chat.Held(b.admin), chat.SendInput{Channel: "rr", Message: fmt.Sprint("m", i)}); err != nil {
			t.Fatal(err)
		}
	}
	ms := c.messages(3)
	a.stop()
	if code := c.waitClosed(); code != websocket.StatusGoingAway {
		t.Fatalf("close %d, want 1001", code)
	}
	for i := 4; i <= 9; i++ {
		if _, err := b.svc.Send(ctx, chat.Held(b.admin), chat.SendInput{Channel: "rr", Message: fmt.Sprint("m", i)}); err != nil {
			t.Fatal(err)
		}
	}
	a2 := startReplica(t, cfg, prefix)
	c2 := dial(t, a2.base, fmt.Sprintf("channel=rr&since=%d", ms[2].ID), nil)
	if h := c2.hello(); !h.Recovered {
		t.Fatalf("hello %+v", h)
	}
	got := c2.messages(6)
	for i, m := range got {
		if m.ID != int64(4+i) {
			t.Fatalf("recovered %+v", got)
		}
	}
}

// TestRedisRestartMidStream stops Redis while messages flow: sends fail
// with 503 error frames, subscribers stay connected, and once Redis is
// back every acknowledged message reaches every subscriber, in order, once.
func TestRedisRestartMidStream(t *testing.T) {
	rs := redisServer(t, "--appendonly", "yes", "--appendfsync", "always")
	a, b := twoReplicas(t, replicaConfig{redisURL: rs.URL(), publicRead: true,
		opts: realtime.Options{SendRate: 1000, SendBurst: 1000, SendTimeout: 3 * time.Second}})
	var subs []*client
	for i := 0; i < 4; i++ {
		r := []*replica{a, b}[i%2]
		c := dial(t, r.base, "channel=outage", nil)
		c.hello()
		subs = append(subs, c)
	}
	sender := join(t, a.base, "outage", adminToken)
	var acked []int64
	unavailable := 0
	send := func(i int) {
		e := sender.send(fmt.Sprint("m", i))
		switch {
		case e.Type == "ack":
			acked = append(acked, e.msg(t).ID)
		case e.Code == "unavailable" && e.Status == 503:
			unavailable++
		default:
			t.Fatalf("send %d: %+v", i, e)
		}
	}
	i := 0
	for ; i < 10; i++ {
		send(i)
	}
	rs.Stop()
	for j := 0; j < 3; j++ {
		i++
		send(i)
	}
	rs.Start()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := rs.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	for n := 0; n < 10; {
		i++
		before := len(acked)
		send(i)
		if len(acked) > before {
			n++
		}
	}
	if unavailable == 0 {
		t.Fatal("no send failed while Redis was down")
	}
	// A send that timed out after Redis stored it is delivered without an
	// ack; anything acknowledged must be there, in order, once.
	lastAcked := acked[len(acked)-1]
	for n, c := range subs {
		var ms []chat.Message
		for len(ms) == 0 || ms[len(ms)-1].ID < lastAcked {
			ms = append(ms, c.messages(1)...)
		}
		seen := map[int64]bool{}
		for k, m := range ms {
			if k > 0 && m.ID <= ms[k-1].ID {
				t.Fatalf("subscriber %d: ids out of order or repeated: %v", n, ids(ms))
			}
			seen[m.ID] = true
		}
		for _, id := range acked {
			if !seen[id] {
				t.Fatalf("subscriber %d never got acknowledged message %d: saw %v", n, id, ids(ms))
			}
		}
		select {
		case <-c.closed:
			t.Fatalf("subscriber %d was disconnected: %v", n, c.err)
		default:
		}
	}
}

func ids(ms []chat.Message) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// TestDocsDescribeTheProtocol: /docs (the OpenAPI document) carries the
// endpoint, its parameters and the protocol text.
func TestDocsDescribeTheProtocol(t *testing.T) {
	r := startReplica(t, replicaConfig{publicRead: true}, testPrefix())
	resp, err := http.Get(r.base + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Paths map[string]map[string]struct {
			Description string                     `json:"description"`
			Responses   map[string]json.RawMessage `json:"responses"`
			Parameters  []struct {
				Name string `json:"name"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	op, ok := doc.Paths[realtime.WSPath]["get"]
	if !ok {
		t.Fatalf("no GET %s in the OpenAPI document", realtime.WSPath)
	}
	if op.Description != realtime.Protocol {
		t.Fatal("the endpoint's description is not the protocol")
	}
	if _, ok := op.Responses["101"]; !ok {
		t.Fatalf("responses %v lack 101", op.Responses)
	}
	if len(op.Parameters) != 2 {
		t.Fatalf("parameters %+v", op.Parameters)
	}
	// Live delivery is the protocol only; the page is package web's.
	page, err := http.Get(r.base + "/")
	if err != nil {
		t.Fatal(err)
	}
	page.Body.Close()
	if page.StatusCode != http.StatusNotFound {
		t.Fatalf("GET / = %d from live delivery alone, want 404 (web.Mount serves the page)", page.StatusCode)
	}
}

// TestReaderThatLosesItsPlaceResyncsSubscribers: the store is reset under
// a live channel (its position now lies beyond the log); subscribers are
// closed with 4010 and a reconnect with since says recovered:false.
func TestReaderThatLosesItsPlaceResyncsSubscribers(t *testing.T) {
	rs := redisServer(t)
	r := startReplica(t, replicaConfig{redisURL: rs.URL(), publicRead: true}, testPrefix())
	c := dial(t, r.base, "channel=reset", nil)
	c.hello()
	for i := 1; i <= 3; i++ {
		if _, err := r.svc.Send(context.Background(), chat.Held(r.admin), chat.SendInput{Channel: "reset", Message: fmt.Sprint("m", i)}); err != nil {
			t.Fatal(err)
		}
	}
	c.messages(3)
	o, err := redis.ParseURL(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(o)
	defer rdb.Close()
	if err := rdb.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	// The replica learns of the reset from the channel's next event: its
	// notice does not follow the last event delivered, and the log, read
	// from there, ends before it.
	if _, err := r.svc.Bootstrap(context.Background(), adminToken); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.Send(context.Background(), chat.Held(r.admin), chat.SendInput{Channel: "reset", Message: "after the reset"}); err != nil {
		t.Fatal(err)
	}
	if code := c.waitClosed(); code != realtime.CloseResync {
		t.Fatalf("close code %d, want 4010", code)
	}
	c2 := dial(t, r.base, "channel=reset&since=3", nil)
	if h := c2.hello(); h.Recovered {
		t.Fatalf("hello %+v after a reset, want recovered false", h)
	}
}
