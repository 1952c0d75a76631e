package realtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/realtime"
)

func from(ip string) http.Header { return http.Header{"X-Forwarded-For": {ip}} }

// refusal makes a WebSocket handshake from ip over plain HTTP and returns
// the status and the error body's reason.
func refusal(t *testing.T, base, query, ip string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+realtime.WSPath+"?"+query, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	req.Header.Set("X-Forwarded-For", ip)
	resp, err := http.DefaultClient.Do(req)
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
