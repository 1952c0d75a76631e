package realtime_test

import (
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/apistack/platform/libs/apiserver/jwtauth"
	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/realtime"
)

var jwtSecret = []byte("realtime-secret-0123456789abcdef")

func platformToken(t *testing.T, sub string, exp time.Time) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": sub, "name": "p_" + sub, "exp": exp.Unix()}).SignedString(jwtSecret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func platformReplica(t *testing.T) *replica {
	v, err := jwtauth.New(jwtauth.Config{Secret: jwtSecret})
	if err != nil {
		t.Fatal(err)
	}
	return startReplica(t, replicaConfig{publicRead: true, identities: v}, testPrefix())
}

// TestPlatformTokenSocketClosesAtExp: a socket signed in with a JWT, in
// the handshake or by an auth frame, closes with 4002 at exp; a refresh
// frame with a fresh token for the same user keeps it open.
func TestPlatformTokenSocketClosesAtExp(t *testing.T) {
	r := platformReplica(t)
	soon := time.Now().Add(2 * time.Second)

	byHeader := dial(t, r.base, "channel=general", bearer(platformToken(t, "alice", soon)))
	if h := byHeader.hello(); h.User == nil || h.User.ID != chat.PlatformUserID("alice") {
		t.Fatalf("hello %+v", h)
	}
	byFrame := dial(t, r.base, "channel=general", nil)
	byFrame.hello()
	if a := byFrame.auth(platformToken(t, "bob", soon)); a.Type != "ack" || a.User == nil || a.User.Name != "p_bob" {
		t.Fatalf("auth %+v", a)
	}
	refreshed := dial(t, r.base, "channel=general", bearer(platformToken(t, "carol", soon)))
	refreshed.hello()
	a := refreshed.request(map[string]any{"type": "refresh", "token": platformToken(t, "carol", time.Now().Add(time.Hour))})
	if a.Type != "ack" || a.User == nil || a.User.ID != chat.PlatformUserID("carol") {
		t.Fatalf("refresh %+v", a)
	}
	for _, c := range []*client{byHeader, byFrame} {
		if code := c.waitClosed(); code != realtime.CloseTokenExpired {
			t.Fatalf("closed with %d; want %d", code, realtime.CloseTokenExpired)
		}
	}
	if time.Now().Before(soon.Truncate(time.Second)) {
		t.Fatal("closed before exp")
	}
	if p := refreshed.request(map[string]any{"type": "ping"}); p.Type != "pong" {
		t.Fatalf("the refreshed socket: %+v", p)
	}
}

// TestRefreshRefusals: a refresh for another user, an invalid or expired
// token, or on a socket without a platform token is an error frame, and
// the socket still closes at its own exp.
func TestRefreshRefusals(t *testing.T) {
	r := platformReplica(t)
	soon := time.Now().Add(3 * time.Second)
	c := dial(t, r.base, "channel=general", bearer(platformToken(t, "dave", soon)))
	c.hello()
	for _, tc := range []struct {
		token  string
		code   string
		status int
	}{
		{platformToken(t, "mallory", time.Now().Add(time.Hour)), string(chat.KindForbidden), 403},
		{platformToken(t, "dave", time.Now().Add(-time.Hour)), string(chat.KindUnauthorized), 401},
		{platformToken(t, "dave", time.Now().Add(time.Hour)) + "x", string(chat.KindUnauthorized), 401},
		{adminToken, "bad_request", 400},
	} {
		if e := c.request(map[string]any{"type": "refresh", "token": tc.token}); e.Type != "error" || e.Code != tc.code || e.Status != tc.status {
			t.Errorf("refresh: %+v; want error %s %d", e, tc.code, tc.status)
		}
	}
	if code := c.waitClosed(); code != realtime.CloseTokenExpired {
		t.Fatalf("closed with %d; want %d", code, realtime.CloseTokenExpired)
	}
	local := join(t, r.base, "general", adminToken)
	if e := local.request(map[string]any{"type": "refresh", "token": platformToken(t, "dave", time.Now().Add(time.Hour))}); e.Type != "error" || e.Code != "bad_request" {
		t.Errorf("refresh on a chat-token socket: %+v", e)
	}
}

// TestSecondAuthKeepsTheSocketsUser (issue 41): a second auth frame on an
// authenticated socket follows refresh's rule: another user's token is
// refused (403) and the socket stays its user's; the same user's passes.
func TestSecondAuthKeepsTheSocketsUser(t *testing.T) {
	r := platformReplica(t)
	c := dial(t, r.base, "channel=general", bearer(platformToken(t, "erin", time.Now().Add(time.Hour))))
	c.hello()
	if e := c.request(map[string]any{"type": "auth", "token": platformToken(t, "mallory", time.Now().Add(time.Hour))}); e.Type != "error" || e.Code != string(chat.KindForbidden) || e.Status != 403 {
		t.Fatalf("a second auth for another user: %+v; want a 403 error frame", e)
	}
	if e := c.request(map[string]any{"type": "auth", "token": adminToken}); e.Type != "error" || e.Status != 403 {
		t.Fatalf("a second auth with the admin's chat token: %+v; want a 403 error frame", e)
	}
	if a := c.request(map[string]any{"type": "auth", "token": platformToken(t, "erin", time.Now().Add(2*time.Hour))}); a.Type != "ack" || a.User == nil || a.User.ID != chat.PlatformUserID("erin") {
		t.Fatalf("a second auth for the same user: %+v; want ack", a)
	}
}
