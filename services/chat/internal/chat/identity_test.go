package chat_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/apistack/platform/libs/apiserver/jwtauth"
	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/jwtidentity"
)

var platformSecret = []byte("platform-secret-0123456789abcdef")

// platformToken signs an HS256 token for sub; name "" leaves the claim out.
func platformToken(t *testing.T, sub, name string, exp time.Time) string {
	t.Helper()
	c := jwt.MapClaims{"sub": sub, "exp": exp.Unix()}
	if name != "" {
		c["name"] = name
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(platformSecret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testPlatformUsers: a platform token creates its user on first sight
// (viewer, keyed by sub), later tokens rename it, taken names get a
// suffix, and chat tokens keep working beside it.
func testPlatformUsers(t *testing.T, e engine) {
	v, err := jwtauth.New(jwtauth.Config{Secret: platformSecret})
	if err != nil {
		t.Fatal(err)
	}
	en := newEnvOptions(t, e, 1000, chat.Options{PublicRead: true, Identities: jwtidentity.New(v)})
	b := en.users[chat.RoleBroadcaster]
	exp := time.Now().Add(time.Hour)
	auth := func(tok string) chat.Session {
		t.Helper()
		return must[chat.Session](t)(en.svc.AuthenticateSession(en.ctx, tok))
	}

	s := auth(platformToken(t, "platform|42", "Alice", exp))
	if s.User.ID != chat.PlatformUserID("platform|42") || s.User.Name != "Alice" || s.User.Role != chat.RoleViewer || s.Expires.Unix() != exp.Unix() {
		t.Fatalf("first token: %+v", s)
	}
	// Known: the same user, renamed by the claim (case included).
	if u := auth(platformToken(t, "platform|42", "alice", exp)).User; u.ID != s.User.ID || u.Name != "alice" {
		t.Fatalf("same name, other case: %+v", u)
	}
	up := must[chat.User](t)(en.svc.SetRole(en.ctx, b, s.User.ID, chat.RoleModerator))
	if u := auth(platformToken(t, "platform|42", "Alice_Renamed", exp)).User; u.ID != s.User.ID || u.Name != "Alice_Renamed" || u.Role != up.Role {
		t.Fatalf("rename keeps the id and the role: %+v", u)
	}
	// The old name is free again.
	en.newUser("Alice", chat.RoleViewer)

	// A name another user holds (a chat user here) gets a suffix from sub.
	taken := en.users[chat.RoleVIP].Name
	bob := auth(platformToken(t, "platform|7", taken, exp)).User
	if !strings.HasPrefix(bob.Name, taken+"_") || len(bob.Name) != len(taken)+5 || bob.ID == en.users[chat.RoleVIP].ID {
		t.Fatalf("taken name: %+v", bob)
	}
	if again := auth(platformToken(t, "platform|7", taken, exp)).User; again.Name != bob.Name {
		t.Fatalf("the suffix is stable: %q then %q", bob.Name, again.Name)
	}
	// A long taken name is cut to fit the suffix.
	long := strings.Repeat("x", 25)
	en.newUser(long, chat.RoleViewer)
	if u := auth(platformToken(t, "platform|8", long, exp)).User; len(u.Name) != 25 || !strings.HasPrefix(u.Name, long[:20]+"_") {
		t.Fatalf("long taken name: %+v", u)
	}
	// Absent or invalid names are derived from sub, the same each time.
	var derived string
	for _, name := range []string{"", "has space", "bot", "automod", "AutoMod", "x", "émile"} {
		u := auth(platformToken(t, "platform|9", name, exp)).User
		if !strings.HasPrefix(u.Name, "user_") || (derived != "" && u.Name != derived) {
			t.Fatalf("name %q: %+v", name, u)
		}
		derived = u.Name
	}

	// Chat tokens and the admin token work as before.
	if u := must[chat.User](t)(en.svc.Authenticate(en.ctx, "admin-token-0123456789")); u.ID != b.ID {
		t.Fatalf("admin token: %+v", u)
	}
	// A chat token with two dots is still a chat token.
	dotted := must[chat.User](t)(en.svc.Bootstrap(en.ctx, "admin.token.0123456789"))
	if u := must[chat.User](t)(en.svc.Authenticate(en.ctx, "admin.token.0123456789")); u.ID != dotted.ID {
		t.Fatalf("dotted admin token: %+v", u)
	}
	for tok, msg := range map[string]string{
		platformToken(t, "platform|42", "Alice", time.Now().Add(-time.Hour)):            "token expired",
		platformToken(t, "platform|42", "Alice", exp) + "x":                             "invalid token",
		strings.Replace(platformToken(t, "platform|42", "Alice", exp), "eyJ", "eyK", 1): "invalid token",
	} {
		_, err := en.svc.Authenticate(en.ctx, tok)
		if ce := wantKind(t, err, chat.KindUnauthorized); ce.Message != msg {
			t.Errorf("message %q; want %q", ce.Message, msg)
		}
	}

	// Many first tokens at once, on one or two services, make one user.
	tok := platformToken(t, "platform|race", "Racer", exp)
	svcs := []*chat.Service{en.svc}
	if en.second != nil {
		svcs = append(svcs, en.second())
	}
	var wg sync.WaitGroup
	ids := make([]string, 16)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u, err := svcs[i%len(svcs)].Authenticate(en.ctx, tok)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = u.ID
		}()
	}
	wg.Wait()
	n := 0
	for _, u := range must[[]chat.User](t)(en.svc.Users(en.ctx, b)) {
		if u.Name == "Racer" {
			n++
		}
	}
	if n != 1 || ids[0] != chat.PlatformUserID("platform|race") {
		t.Fatalf("%d users named Racer, ids %v", n, ids)
	}

	// A deleted platform user comes back, as a viewer, on its next token.
	must[struct{}](t)(struct{}{}, en.svc.DeleteUser(en.ctx, b, s.User.ID))
	if u := auth(platformToken(t, "platform|42", "Alice_Renamed", exp)).User; u.Role != chat.RoleViewer || u.Name != "Alice_Renamed" {
		t.Fatalf("after delete: %+v", u)
	}
}

// TestSystemNamesAreReserved (issue 41): nobody may be named as the
// chat's own signers (bot, automod), in any letter case.
func TestSystemNamesAreReserved(t *testing.T) {
	en := newEnv(t, memoryEngine(), 1000, true)
	for _, name := range []string{"bot", "automod", "AutoMod", "AUTOMOD"} {
		_, _, err := en.svc.CreateUser(en.ctx, en.users[chat.RoleBroadcaster], chat.CreateUserInput{Name: name})
		wantKind(t, err, chat.KindInvalid)
	}
}
