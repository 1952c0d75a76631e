package realtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/realtime"
)

func from(ip string) http.Header { return http.Header{"X-Forwarded-For": {ip}} }

// refusal makes a WebSocket handshake from ip over plain HTTP and returns
// the status and the error body's reason.
func refusal(t *testing.T, base, query, ip string) (int, string) {
	t.Helper()
	return refusalVia(t, http.DefaultClient, base, query, from(ip))
}

// refusalVia is refusal through hc (from a source address of its own),
// with header (X-Forwarded-For, Authorization).
func refusalVia(t *testing.T, hc *http.Client, base, query string, header http.Header) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+realtime.WSPath+"?"+query, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		StatusCode int    `json:"statusCode"`
		Message    string `json:"message"`
		Reason     string `json:"reason"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != http.StatusSwitchingProtocols && (body.StatusCode != resp.StatusCode || body.Message == "" || resp.Header.Get("Retry-After") == "") {
		t.Fatalf("refusal %d without the error body or Retry-After: %+v %v", resp.StatusCode, body, resp.Header)
	}
	return resp.StatusCode, body.Reason
}

// TestOneAddressMeetsItsLimitsAndSlowsNobody: one address opening sockets
// on many channels is refused (429) past its distinct-channel bound and
// past its socket bound, the replica refuses (503) past its own bound,
// and meanwhile a busy channel on the same replica (and Redis) loses
// nothing: every send is stored and every message reaches its subscriber
// in order. Before the limits and the shared feed, 99 such sockets
// starved the Redis pool: sends failed and delivery stalled for seconds.
func TestOneAddressMeetsItsLimitsAndSlowsNobody(t *testing.T) {
	rs := redisServer(t)
	limits := realtime.Limits{MaxSockets: 40, MaxSocketsPerIP: 30, MaxChannelsPerIP: 10}
	r := startReplica(t, replicaConfig{redisURL: rs.URL(), publicRead: true, env: map[string]string{"TRUSTED_PROXIES": "127.0.0.1"},
		opts: realtime.Options{Limits: &limits}}, testPrefix())
	ctx := context.Background()

	victim := dial(t, r.base, "channel=busy", from("10.0.0.1"))
	victim.hello()
	sent := make(chan error, 1)
	const total = 200
	go func() {
		for i := 1; i <= total; i++ {
			if _, err := r.svc.Send(ctx, chat.Held(r.admin), chat.SendInput{Channel: "busy", Message: fmt.Sprint("m", i)}); err != nil {
				sent <- fmt.Errorf("send %d: %w", i, err)
				return
			}
		}
		sent <- nil
	}()

	// The attacker: sockets on ever more channels.
	attacker := "10.0.0.66"
	for i := 0; i < limits.MaxChannelsPerIP; i++ {
		dial(t, r.base, fmt.Sprintf("channel=flood%d", i), from(attacker)).hello()
	}
	if status, reason := refusal(t, r.base, "channel=one-too-many", attacker); status != http.StatusTooManyRequests || reason != "too_many_channels_per_ip" {
		t.Fatalf("channel past the bound: %d %q, want 429 too_many_channels_per_ip", status, reason)
	}
	// More sockets on channels it already has are fine, up to its bound.
	for i := limits.MaxChannelsPerIP; i < limits.MaxSocketsPerIP; i++ {
		dial(t, r.base, fmt.Sprintf("channel=flood%d", i%limits.MaxChannelsPerIP), from(attacker)).hello()
	}
	if status, reason := refusal(t, r.base, "channel=flood0", attacker); status != http.StatusTooManyRequests || reason != "too_many_sockets_per_ip" {
		t.Fatalf("socket past the bound: %d %q, want 429 too_many_sockets_per_ip", status, reason)
	}
	// Other addresses still get in, until the replica is full.
	for i := 0; i < limits.MaxSockets-limits.MaxSocketsPerIP-1; i++ {
		dial(t, r.base, "channel=busy", from(fmt.Sprintf("10.1.0.%d", i+1))).hello()
	}
	if status, reason := refusal(t, r.base, "channel=busy", "10.2.0.1"); status != http.StatusServiceUnavailable || reason != "too_many_sockets" {
		t.Fatalf("socket past the replica's bound: %d %q, want 503 too_many_sockets", status, reason)
	}

	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	for i, m := range victim.messages(total) {
		if m.Text != fmt.Sprint("m", i+1) {
			t.Fatalf("busy channel: message %d is %q", i+1, m.Text)
		}
	}
	if !strings.Contains(realtime.Protocol, "429") {
		t.Fatal("the protocol text does not document the limits")
	}
}

func TestLimitsFromEnv(t *testing.T) {
	env := map[string]string{"CHAT_WS_MAX_SOCKETS": "5", "CHAT_WS_MAX_CHANNELS_PER_IP": "0"}
	l, err := realtime.LimitsFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	want := realtime.DefaultLimits
	want.MaxSockets, want.MaxChannelsPerIP = 5, 0
	if l != want {
		t.Fatalf("limits %+v, want %+v", l, want)
	}
	env["CHAT_WS_MAX_SOCKETS_PER_IP"] = "-1"
	if _, err := realtime.LimitsFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "CHAT_WS_MAX_SOCKETS_PER_IP") {
		t.Fatalf("bad value: %v", err)
	}
}

// TestIPv6SocketLimitsCountThePrefix: the per-address socket limits count
// an IPv6 client by its prefix (RATE_LIMIT_IPV6_PREFIX, /64 by default), as
// the rate limiter does, so one subscriber's /64 is one client and not 2^64
// of them, each with its own 100 sockets (issue 13, finding 10).
func TestIPv6SocketLimitsCountThePrefix(t *testing.T) {
	limits := realtime.Limits{MaxSockets: 100, MaxSocketsPerIP: 2, MaxChannelsPerIP: 10}
	for _, c := range []struct {
		name   string
		prefix string // RATE_LIMIT_IPV6_PREFIX
		third  int    // the status of a third socket from the first /64
	}{
		{"/64 by default", "", http.StatusTooManyRequests},
		{"per address with 128", "128", http.StatusSwitchingProtocols},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := startReplica(t, replicaConfig{publicRead: true, opts: realtime.Options{Limits: &limits},
				env: map[string]string{"TRUSTED_PROXIES": "127.0.0.1", "RATE_LIMIT_IPV6_PREFIX": c.prefix}}, testPrefix())
			dial(t, r.base, "channel=a", from("2001:db8:1:2::1")).hello()
			dial(t, r.base, "channel=a", from("2001:db8:1:2::2")).hello()
			status, reason := refusal(t, r.base, "channel=a", "2001:db8:1:2:ffff::3")
			if status != c.third || status == http.StatusTooManyRequests && reason != "too_many_sockets_per_ip" {
				t.Fatalf("a third socket from 2001:db8:1:2::/64: %d %q, want %d", status, reason, c.third)
			}
			// Another /64 is another client.
			dial(t, r.base, "channel=a", from("2001:db8:1:3::1")).hello()
		})
	}
}

// loopback is an HTTP client whose connections come from addr, one of
// 127.0.0.0/8 (Linux answers on all of them): a real client address,
// with no proxy header.
func loopback(t *testing.T, addr string) *http.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(addr)}}
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// dialFrom dials a socket from the loopback address addr.
func dialFrom(t *testing.T, base, query, addr string, header http.Header) *client {
	t.Helper()
	c, resp, err := tryDialWith(t, base, query, &websocket.DialOptions{HTTPClient: loopback(t, addr), HTTPHeader: header})
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial from %s: %v (status %d)", addr, err, status)
	}
	return c
}

// TestAnonymousSocketsCannotLockOutUsers: anonymous sockets from many
// addresses fill their share of the replica (503
// too_many_anonymous_sockets past it) and no more, so the broadcaster and a
// viewer with a token still get in; an auth frame moves a socket out of the
// anonymous share, which lets another anonymous reader in; only the
// replica's own maximum refuses users. Before the reserve, anonymous
// sockets took every place and the broadcaster got 503 too_many_sockets.
func TestAnonymousSocketsCannotLockOutUsers(t *testing.T) {
	// 16 sockets, 25% of them kept for users: anonymous ones may hold 12.
	limits := realtime.Limits{MaxSockets: 16, UserReservePercent: 25, MaxSocketsPerIP: 3}
	r := startReplica(t, replicaConfig{publicRead: true, opts: realtime.Options{Limits: &limits}}, testPrefix())
	_, viewerTok := r.user(chat.RoleViewer, "viewer1")
	_, laterTok := r.user(chat.RoleViewer, "viewer2")

	// The many addresses of the attack, each at its own per-address bound.
	var anonymous []*client
	for i := 0; i < 12; i++ {
		c := dialFrom(t, r.base, "channel=general", fmt.Sprintf("127.0.1.%d", i/3+1), nil)
		c.hello()
		anonymous = append(anonymous, c)
	}
	// A new address, anonymous: the anonymous share is full.
	stranger := loopback(t, "127.0.2.1")
	if status, reason := refusalVia(t, stranger, r.base, "channel=general", nil); status != http.StatusServiceUnavailable || reason != "too_many_anonymous_sockets" {
		t.Fatalf("anonymous socket past the share: %d %q, want 503 too_many_anonymous_sockets", status, reason)
	}
	// From that same address, with a token: in (14 sockets), in a header or,
	// as a browser can, offered as a subprotocol.
	dialFrom(t, r.base, "channel=general", "127.0.2.1", bearer(adminToken)).hello()
	byProtocol, _, err := tryDialWith(t, r.base, "channel=general", &websocket.DialOptions{HTTPClient: stranger,
		Subprotocols: []string{realtime.ChatProtocol, realtime.TokenProtocol + viewerTok}})
	if err != nil {
		t.Fatalf("token offered as a subprotocol: %v", err)
	}
	if hello := byProtocol.hello(); hello.User == nil || hello.User.Name != "viewer1" || byProtocol.ws.Subprotocol() != realtime.ChatProtocol {
		t.Fatalf("token offered as a subprotocol: hello for %+v, subprotocol %q", hello.User, byProtocol.ws.Subprotocol())
	}
	if _, resp, err := tryDialWith(t, r.base, "channel=general", &websocket.DialOptions{HTTPClient: stranger,
		Subprotocols: []string{realtime.ChatProtocol, realtime.TokenProtocol + "unknown"}}); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unknown token offered as a subprotocol: %v, want 401", err)
	}
	// An anonymous reader that authenticates leaves the anonymous share...
	if ack := anonymous[0].auth(laterTok); ack.Type != "ack" {
		t.Fatalf("auth frame: %+v", ack)
	}
	// ...so one more anonymous reader fits (15), and no more.
	dialFrom(t, r.base, "channel=general", "127.0.2.2", nil).hello()
	if status, reason := refusalVia(t, stranger, r.base, "channel=general", nil); status != http.StatusServiceUnavailable || reason != "too_many_anonymous_sockets" {
		t.Fatalf("anonymous socket past the share again: %d %q, want 503 too_many_anonymous_sockets", status, reason)
	}
	// The last place goes to a user (16); then the replica is full for everyone.
	dialFrom(t, r.base, "channel=general", "127.0.2.1", bearer(adminToken)).hello()
	if status, reason := refusalVia(t, stranger, r.base, "channel=general", bearer(adminToken)); status != http.StatusServiceUnavailable || reason != "too_many_sockets" {
		t.Fatalf("socket past the replica's maximum: %d %q, want 503 too_many_sockets", status, reason)
	}
	if n := metric(t, r.base, `chat_ws_refused_total{limit="anonymous_sockets"}`); n != 2 {
		t.Fatalf(`chat_ws_refused_total{limit="anonymous_sockets"} = %v, want 2`, n)
	}
	// A socket that ends gives its place back.
	_ = anonymous[1].ws.Close(websocket.StatusNormalClosure, "")
	waitAdmitted(t, r.base, "127.0.2.3", nil)
}

// waitAdmitted dials from addr until a socket opens: the server frees a
// closed socket's place once its goroutine has ended.
func waitAdmitted(t *testing.T, base, addr string, header http.Header) *client {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		c, resp, err := tryDialWith(t, base, "channel=general", &websocket.DialOptions{HTTPClient: loopback(t, addr), HTTPHeader: header})
		if err == nil {
			c.hello()
			return c
		}
		if resp == nil || time.Now().After(deadline) {
			t.Fatalf("no socket from %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOneTokenCannotFillTheReplica: with CHAT_PUBLIC_READ=false, one
// viewer's token opens at most CHAT_WS_MAX_SOCKETS_PER_USER sockets,
// whether it comes in the handshake (429 too_many_sockets_per_user) or in
// the auth frame reading needs (an error frame with that reason, then
// 4029); other users and the broadcaster still get in, and a socket the
// viewer closes makes room for another. Before, one token filled the
// replica.
func TestOneTokenCannotFillTheReplica(t *testing.T) {
	limits := realtime.Limits{MaxSockets: 20, MaxSocketsPerUser: 3}
	r := startReplica(t, replicaConfig{publicRead: false, opts: realtime.Options{Limits: &limits}}, testPrefix())
	_, tok := r.user(chat.RoleViewer, "hog")
	_, otherTok := r.user(chat.RoleModerator, "other")

	var mine []*client
	for i := 0; i < limits.MaxSocketsPerUser; i++ {
		c := join(t, r.base, "general", tok)
		mine = append(mine, c)
	}
	if status, reason := refusalVia(t, http.DefaultClient, r.base, "channel=general", bearer(tok)); status != http.StatusTooManyRequests || reason != "too_many_sockets_per_user" {
		t.Fatalf("the user's socket past its limit: %d %q, want 429 too_many_sockets_per_user", status, reason)
	}
	// The auth frame a browser sends counts the same.
	late := dial(t, r.base, "channel=general", nil)
	if e := late.auth(tok); e.Type != "error" || e.Status != http.StatusTooManyRequests || e.Reason != "too_many_sockets_per_user" || e.Code != "rate_limited" {
		t.Fatalf("auth frame past the user's limit: %+v", e)
	}
	if code := late.waitClosed(); code != realtime.CloseTooManySockets {
		t.Fatalf("close code %d, want %d", code, realtime.CloseTooManySockets)
	}
	// Others are not affected; the broadcaster has no per-user bound.
	dial(t, r.base, "channel=general", bearer(otherTok)).hello()
	for i := 0; i < limits.MaxSocketsPerUser+2; i++ {
		dial(t, r.base, "channel=general", bearer(adminToken)).hello()
	}
	if n := metric(t, r.base, `chat_ws_refused_total{limit="user_sockets"}`); n != 2 {
		t.Fatalf(`chat_ws_refused_total{limit="user_sockets"} = %v, want 2`, n)
	}
	// Closing one of its sockets gives the user a place again, by frame too.
	_ = mine[0].ws.Close(websocket.StatusNormalClosure, "")
	deadline := time.Now().Add(wait)
	for {
		c := dial(t, r.base, "channel=general", nil)
		e := c.auth(tok)
		if e.Type == "ack" {
			c.hello()
			break
		}
		if e.Reason != "too_many_sockets_per_user" || time.Now().After(deadline) {
			t.Fatalf("auth after a socket closed: %+v", e)
		}
		c.waitClosed()
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAuthFrameOverTheUserLimitKeepsTheSocketAnonymous: where reading is
// public, an auth frame naming a user with all its sockets is refused with
// an error frame and the socket goes on reading, anonymously.
func TestAuthFrameOverTheUserLimitKeepsTheSocketAnonymous(t *testing.T) {
	limits := realtime.Limits{MaxSockets: 20, MaxSocketsPerUser: 1}
	r := startReplica(t, replicaConfig{publicRead: true, opts: realtime.Options{Limits: &limits}}, testPrefix())
	u, tok := r.user(chat.RoleViewer, "twice")
	first := join(t, r.base, "general", tok)
	c := dial(t, r.base, "channel=general", nil)
	c.hello()
	if e := c.auth(tok); e.Type != "error" || e.Status != http.StatusTooManyRequests || e.Reason != "too_many_sockets_per_user" {
		t.Fatalf("auth frame past the user's limit: %+v", e)
	}
	if e := c.send("hi"); e.Type != "error" || e.Status != http.StatusUnauthorized {
		t.Fatalf("send on the socket still anonymous: %+v", e)
	}
	if _, err := r.svc.Send(context.Background(), chat.Held(u), chat.SendInput{Channel: "general", Message: "still reading"}); err != nil {
		t.Fatal(err)
	}
	if m := c.messages(1)[0]; m.Text != "still reading" {
		t.Fatalf("message %q", m.Text)
	}
	// Once the first socket is gone, the auth frame moves this one to the
	// user; once this one is gone too, the user's place is free again.
	_ = first.ws.Close(websocket.StatusNormalClosure, "")
	deadline := time.Now().Add(wait)
	for e := c.auth(tok); e.Type != "ack"; e = c.auth(tok) {
		if e.Reason != "too_many_sockets_per_user" || time.Now().After(deadline) {
			t.Fatalf("auth frame after the first socket closed: %+v", e)
		}
		time.Sleep(250 * time.Millisecond) // under the connection's frame limit
	}
	_ = c.ws.Close(websocket.StatusNormalClosure, "")
	waitAdmitted(t, r.base, "127.0.0.1", bearer(tok))
}

// TestAddressesOfOneNetworkAreLimitedTogether: sockets from many addresses
// of one IPv4 /24 (real loopback sources) or one IPv6 /48 (through a
// trusted proxy, each address its own /64) share one bound
// (CHAT_WS_MAX_SOCKETS_PER_NET: 429 too_many_sockets_per_net), another
// network does not; the prefix lengths are tunable. Before, an IPv6 /56
// was 256 clients, each with its own 100 sockets.
func TestAddressesOfOneNetworkAreLimitedTogether(t *testing.T) {
	for _, c := range []struct {
		name      string
		limits    realtime.Limits
		proxied   bool     // addresses come in X-Forwarded-For from 127.0.0.1
		addrs     []string // 2 sockets each (MaxSocketsPerIP), 5 in all: the net's bound
		sameNet   string   // a new address of that network: refused
		other     string   // an address that the row's prefix puts in another network
		otherSame bool     // other is in the first network after all (a shorter prefix)
	}{
		{name: "IPv4 /24", addrs: []string{"127.0.1.1", "127.0.1.2", "127.0.1.3"}, sameNet: "127.0.1.200", other: "127.0.2.1"},
		{name: "IPv4 /16", limits: realtime.Limits{IPv4NetPrefix: 16},
			addrs: []string{"127.0.1.1", "127.0.1.2", "127.0.1.3"}, sameNet: "127.0.1.200", other: "127.0.2.1", otherSame: true},
		{name: "IPv6 /48", proxied: true, addrs: []string{"2001:db8:1:1::1", "2001:db8:1:2::1", "2001:db8:1:ff00::1"},
			sameNet: "2001:db8:1:ffff::9", other: "2001:db8:2::1"},
		{name: "IPv6 /56", proxied: true, limits: realtime.Limits{IPv6NetPrefix: 56},
			addrs: []string{"2001:db8:1:1::1", "2001:db8:1:2::1", "2001:db8:1:ff::1"}, sameNet: "2001:db8:1:aa::9", other: "2001:db8:1:100::1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			limits := c.limits
			limits.MaxSockets, limits.MaxSocketsPerIP, limits.MaxSocketsPerNet = 100, 2, 5
			cfg := replicaConfig{publicRead: true, opts: realtime.Options{Limits: &limits}}
			if c.proxied {
				cfg.env = map[string]string{"TRUSTED_PROXIES": "127.0.0.1"}
			}
			r := startReplica(t, cfg, testPrefix())
			open := func(addr string) {
				if c.proxied {
					dial(t, r.base, "channel=a", from(addr)).hello()
				} else {
					dialFrom(t, r.base, "channel=a", addr, nil).hello()
				}
			}
			try := func(addr string) (int, string) {
				if c.proxied {
					return refusal(t, r.base, "channel=a", addr)
				}
				return refusalVia(t, loopback(t, addr), r.base, "channel=a", nil)
			}
			for i := 0; i < 5; i++ {
				open(c.addrs[i/2])
			}
			if status, reason := try(c.addrs[2]); status != http.StatusTooManyRequests || reason != "too_many_sockets_per_net" {
				t.Fatalf("a 6th socket from the network: %d %q, want 429 too_many_sockets_per_net", status, reason)
			}
			if status, reason := try(c.sameNet); status != http.StatusTooManyRequests || reason != "too_many_sockets_per_net" {
				t.Fatalf("a new address %s of the network: %d %q, want 429 too_many_sockets_per_net", c.sameNet, status, reason)
			}
			status, reason := try(c.other)
			if c.otherSame && (status != http.StatusTooManyRequests || reason != "too_many_sockets_per_net") {
				t.Fatalf("%s, in the same network by this prefix: %d %q, want 429 too_many_sockets_per_net", c.other, status, reason)
			}
			if !c.otherSame && status != http.StatusSwitchingProtocols {
				t.Fatalf("%s, another network: %d %q, want 101", c.other, status, reason)
			}
		})
	}
}
