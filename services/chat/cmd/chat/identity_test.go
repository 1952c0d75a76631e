package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"

	"github.com/apistack/platform/libs/apiserver/jwtauth"
	"github.com/apistack/platform/services/chat/internal/chat"
)

const testJWTSecret = "identity-test-secret-0123456789abcdef"

// TestHelpListsSubcommandsAndEnvironment: chat --help (and chat help)
// exits 0 and names every subcommand and every CHAT_ variable the code
// reads.
func TestHelpListsSubcommandsAndEnvironment(t *testing.T) {
	read := map[string]bool{}
	re := regexp.MustCompile(`"(CHAT_[A-Z0-9_]+)"`)
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		for _, m := range re.FindAllSubmatch(b, -1) {
			read[string(m[1])] = true
		}
		return err
	})
	if err != nil || len(read) < 10 {
		t.Fatalf("found %d variables: %v", len(read), err)
	}
	for _, args := range [][]string{{"--help"}, {"help"}, {"-h"}} {
		var out bytes.Buffer
		if err := run(context.Background(), args, envOf(nil), &out, &bytes.Buffer{}); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for _, want := range []string{"serve", "healthcheck", "token --sub ID [--name NAME] [--ttl 1h]", "help"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%v: no %q in\n%s", args, want, out.String())
			}
		}
		for v := range read {
			if !strings.Contains(out.String(), v) {
				t.Errorf("%v: %s is read but not listed", args, v)
			}
		}
	}
}

func TestTokenCommand(t *testing.T) {
	env := envOf(map[string]string{"CHAT_JWT_SECRET": testJWTSecret, "CHAT_JWT_ISSUER": "https://id.example", "CHAT_JWT_AUDIENCE": "chat"})
	var out bytes.Buffer
	if err := run(context.Background(), []string{"token", "--sub", "dev-1", "--name", "Dev", "--ttl", "2h"}, env, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	v, err := jwtauth.New(jwtauth.Config{Secret: []byte(testJWTSecret), Issuer: "https://id.example", Audience: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := v.Verify(context.Background(), strings.TrimSpace(out.String()))
	if err != nil || c.Subject != "dev-1" || c.Name != "Dev" || time.Until(c.ExpiresAt) < 119*time.Minute || time.Until(c.ExpiresAt) > 2*time.Hour {
		t.Fatalf("token claims %+v, %v", c, err)
	}
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"token", "--name", "Dev"}, map[string]string{"CHAT_JWT_SECRET": testJWTSecret}, "--sub is required"},
		{[]string{"token", "--sub", "x"}, nil, "CHAT_JWT_SECRET"},
		{[]string{"token", "--sub", "x"}, map[string]string{"CHAT_JWT_SECRET": "short"}, "CHAT_JWT_SECRET"},
		{[]string{"token", "--sub", "x", "--ttl", "48h"}, map[string]string{"CHAT_JWT_SECRET": testJWTSecret}, "--ttl"},
		{[]string{"token", "--sub", "x", "stray"}, map[string]string{"CHAT_JWT_SECRET": testJWTSecret}, "unexpected"},
	} {
		err := run(context.Background(), tc.args, envOf(tc.env), &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want an error naming %s", tc.args, err, tc.want)
		}
	}
}

// jwks serves one RSA key as a JWK Set over loopback HTTP and counts
// the fetches.
type jwks struct {
	key     *rsa.PrivateKey
	url     string
	fetches atomic.Int64
}

func startJWKS(t *testing.T) *jwks {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	j := &jwks{key: k}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		j.fetches.Add(1)
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.PublicKey, KeyID: "platform-1", Algorithm: "RS256", Use: "sig"}}})
	}))
	t.Cleanup(srv.Close)
	j.url = srv.URL
	return j
}

func signed(t *testing.T, m jwt.SigningMethod, kid string, key any, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPlatformTokensOverHTTP is the wired service with a real HS256
// secret and a real RSA key served as JWKS: valid tokens provision their
// user, hostile ones get 401 with the error body, a flood of unknown kids
// fetches the JWKS at most once more, and chat tokens keep working.
func TestPlatformTokensOverHTTP(t *testing.T) {
	keys := startJWKS(t)
	env := map[string]string{"PORT": freePort(t), "CHAT_ADMIN_TOKEN": "identity-admin-token-0123", "RATE_LIMIT_MAX": "100000",
		"CHAT_JWT_SECRET": testJWTSecret, "CHAT_JWKS_URL": keys.url, "CHAT_JWT_ISSUER": "https://id.example", "CHAT_JWT_AUDIENCE": "chat"}
	base := "http://" + serveChat(t, env)
	me := func(token string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/users/me", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body map[string]any
		b, _ := io.ReadAll(res.Body)
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatalf("%d %s", res.StatusCode, b)
		}
		return res.StatusCode, body
	}
	now := time.Now()
	claims := func(sub string, edit func(jwt.MapClaims)) jwt.MapClaims {
		c := jwt.MapClaims{"sub": sub, "name": "Name_" + sub, "exp": now.Add(time.Hour).Unix(), "iss": "https://id.example", "aud": "chat"}
		if edit != nil {
			edit(c)
		}
		return c
	}

	for name, tok := range map[string]string{
		"HS256": signed(t, jwt.SigningMethodHS256, "", []byte(testJWTSecret), claims("hs", nil)),
		"RS256": signed(t, jwt.SigningMethodRS256, "platform-1", keys.key, claims("rs", nil)),
	} {
		code, body := me(tok)
		if code != 200 || body["role"] != "viewer" || !strings.HasPrefix(body["name"].(string), "Name_") || !strings.HasPrefix(body["id"].(string), "p_") {
			t.Errorf("%s: %d %v", name, code, body)
		}
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"token", "--sub", "dev", "--name", "Dev_User"}, envOf(env), &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if code, body := me(strings.TrimSpace(out.String())); code != 200 || body["name"] != "Dev_User" || body["id"] != chat.PlatformUserID("dev") {
		t.Errorf("chat token's token: %d %v", code, body)
	}
	if code, body := me(env["CHAT_ADMIN_TOKEN"]); code != 200 || body["role"] != "broadcaster" {
		t.Errorf("admin token: %d %v", code, body)
	}

	pubDER, _ := x509.MarshalPKIXPublicKey(&keys.key.PublicKey)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	b64 := base64.RawURLEncoding.EncodeToString
	claimJSON, _ := json.Marshal(claims("none", nil))
	before := keys.fetches.Load()
	for name, tok := range map[string]string{
		"expired":                              signed(t, jwt.SigningMethodRS256, "platform-1", keys.key, claims("x", func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Hour).Unix() })),
		"wrong aud":                            signed(t, jwt.SigningMethodHS256, "", []byte(testJWTSecret), claims("x", func(c jwt.MapClaims) { c["aud"] = "billing" })),
		"wrong iss":                            signed(t, jwt.SigningMethodRS256, "platform-1", keys.key, claims("x", func(c jwt.MapClaims) { c["iss"] = "https://evil.example" })),
		"alg none":                             b64([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + b64(claimJSON) + ".",
		"HS256 signed with the RSA public key": signed(t, jwt.SigningMethodHS256, "platform-1", pubPEM, claims("x", nil)),
		"oversized":                            signed(t, jwt.SigningMethodHS256, "", []byte(testJWTSecret), claims("x", func(c jwt.MapClaims) { c["pad"] = strings.Repeat("p", 9000) })),
		"no sub":                               signed(t, jwt.SigningMethodHS256, "", []byte(testJWTSecret), claims("", nil)),
	} {
		code, body := me(tok)
		if code != 401 || body["statusCode"] != float64(401) || body["error"] != "Unauthorized" || body["message"] == "" {
			t.Errorf("%s: %d %v; want 401 with the error body", name, code, body)
		}
	}
	// A flood of made-up kids: all refused, at most one more JWKS fetch.
	start := time.Now()
	for i := 0; i < 300; i++ {
		if code, _ := me(signed(t, jwt.SigningMethodRS256, fmt.Sprintf("kid-%d", i), keys.key, claims("x", nil))); code != 401 {
			t.Fatalf("unknown kid: %d", code)
		}
	}
	if n := keys.fetches.Load() - before; n > 1 {
		t.Errorf("300 unknown kids fetched the JWKS %d times; want at most 1 (one per %s)", n, jwtauth.DefaultRefetchInterval)
	}
	t.Logf("300 unknown-kid requests in %s, %d JWKS fetches", time.Since(start), keys.fetches.Load()-before)
}

// TestJWKSDownSaysIdentityProvider (issue 41): while the identity
// provider's keys cannot be fetched, a platform token is a 503 that names
// the identity provider, not the chat store; the replica fetches the keys
// in the background as soon as the URL answers, with no request waiting.
func TestJWKSDownSaysIdentityProvider(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	var down atomic.Bool
	var fetches, served atomic.Int64
	down.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		if down.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		served.Add(1)
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.PublicKey, KeyID: "platform-1", Algorithm: "RS256", Use: "sig"}}})
	}))
	t.Cleanup(srv.Close)
	env := map[string]string{"PORT": freePort(t), "CHAT_ADMIN_TOKEN": "identity-admin-token-0123", "RATE_LIMIT_MAX": "100000", "CHAT_JWKS_URL": srv.URL}
	base := "http://" + serveChat(t, env)
	tok := signed(t, jwt.SigningMethodRS256, "platform-1", k, jwt.MapClaims{"sub": "rs", "exp": time.Now().Add(time.Hour).Unix()})
	me := func() (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/users/me", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(res.Body).Decode(&body)
		return res.StatusCode, body
	}
	code, body := me()
	msg, _ := body["message"].(string)
	if code != http.StatusServiceUnavailable || body["reason"] != chat.ReasonKeysUnavailable || !strings.Contains(msg, "identity provider") || strings.Contains(msg, "store") {
		t.Fatalf("keys down: %d %v; want 503 naming the identity provider's keys", code, body)
	}
	down.Store(false)
	deadline := time.Now().Add(10 * time.Second)
	for served.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the replica did not fetch the keys in the background once the URL answered")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	n := fetches.Load()
	if code, body := me(); code != http.StatusOK {
		t.Fatalf("after the background fetch: %d %v", code, body)
	}
	if fetches.Load() != n {
		t.Errorf("the first token after the background fetch fetched again")
	}
}

// TestViewersCannotSquatChannels (issue 41): fifty platform (JWT) viewers
// each open channels until the open pool is full; the administrator can
// still name a broadcaster in a new channel, and a viewer writes there.
func TestViewersCannotSquatChannels(t *testing.T) {
	const max = 40
	env := map[string]string{"PORT": freePort(t), "CHAT_ADMIN_TOKEN": "identity-admin-token-0123", "RATE_LIMIT_MAX": "1000000",
		"CHAT_JWT_SECRET": testJWTSecret, "CHAT_MAX_CHANNELS": fmt.Sprint(max), "CHAT_SEND_LIMIT": "off"}
	base := "http://" + serveChat(t, env)
	do := func(method, path, token, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+"/api/v1"+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(res.Body).Decode(&out)
		return res.StatusCode, out
	}
	viewer := func(i int) string {
		return signed(t, jwt.SigningMethodHS256, "", []byte(testJWTSecret), jwt.MapClaims{"sub": fmt.Sprintf("squatter-%d", i), "exp": time.Now().Add(time.Hour).Unix()})
	}
	refused := 0
	for i := 0; i < 50; i++ {
		tok := viewer(i)
		for j := 0; j < 2; j++ {
			code, body := do(http.MethodPost, "/messages/send", tok, fmt.Sprintf(`{"channel":"squat-%d-%d","message":"mine"}`, i, j))
			switch code {
			case http.StatusCreated:
			case http.StatusConflict:
				refused++
			default:
				t.Fatalf("viewer %d: %d %v", i, code, body)
			}
		}
	}
	if refused != 100-max {
		t.Errorf("%d first sends refused; want %d (the open pool holds %d)", refused, 100-max, max)
	}
	admin := env["CHAT_ADMIN_TOKEN"]
	caster := signed(t, jwt.SigningMethodHS256, "", []byte(testJWTSecret), jwt.MapClaims{"sub": "caster", "exp": time.Now().Add(time.Hour).Unix()})
	code, me := do(http.MethodGet, "/users/me", caster, "")
	if code != http.StatusOK {
		t.Fatalf("caster: %d %v", code, me)
	}
	if code, body := do(http.MethodPut, "/channels/the-show/roles/"+me["id"].(string), admin, `{"role":"broadcaster"}`); code != http.StatusOK {
		t.Fatalf("the admin names a broadcaster after the squat: %d %v; want 200", code, body)
	}
	if code, body := do(http.MethodPost, "/messages/send", viewer(7), `{"channel":"the-show","message":"hello"}`); code != http.StatusCreated {
		t.Fatalf("a viewer in the platform's new channel: %d %v", code, body)
	}
}
