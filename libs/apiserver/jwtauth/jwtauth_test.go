package jwtauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"

	"github.com/apistack/platform/libs/apiserver/jwtauth"
	"github.com/apistack/platform/libs/apiserver/testkit"
)

var secret = []byte("0123456789abcdef0123456789abcdef")

// issuer is a JWKS endpoint over loopback HTTP with real keys. It counts
// its fetches and can be made to fail.
type issuer struct {
	t       testing.TB
	srv     *httptest.Server
	rsa     *rsa.PrivateKey
	ec      *ecdsa.PrivateKey
	ed      ed25519.PrivateKey
	mu      sync.Mutex
	keys    []jose.JSONWebKey
	fetches atomic.Int64
	down    atomic.Bool
}

func newIssuer(t testing.TB) *issuer {
	t.Helper()
	is := &issuer{t: t}
	var err error
	if is.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if is.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	if _, is.ed, err = ed25519.GenerateKey(rand.Reader); err != nil {
		t.Fatal(err)
	}
	is.keys = []jose.JSONWebKey{
		{Key: &is.rsa.PublicKey, KeyID: "rsa1", Algorithm: "RS256", Use: "sig"},
		{Key: &is.ec.PublicKey, KeyID: "ec1", Algorithm: "ES256", Use: "sig"},
		{Key: is.ed.Public(), KeyID: "ed1", Algorithm: "EdDSA", Use: "sig"},
	}
	is.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		is.fetches.Add(1)
		if is.down.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		is.mu.Lock()
		defer is.mu.Unlock()
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: is.keys})
	}))
	t.Cleanup(is.srv.Close)
	return is
}

func (is *issuer) addKey(k jose.JSONWebKey) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.keys = append(is.keys, k)
}

func sign(t testing.TB, m jwt.SigningMethod, kid string, key any, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func claimsAt(now time.Time, sub string) jwt.MapClaims {
	return jwt.MapClaims{"sub": sub, "name": "Alice", "exp": now.Add(time.Hour).Unix(), "iss": "https://id.example", "aud": "chat"}
}

func newVerifier(t testing.TB, cfg jwtauth.Config) *jwtauth.Verifier {
	t.Helper()
	v, err := jwtauth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestNewRefusesWeakConfig(t *testing.T) {
	if _, err := jwtauth.New(jwtauth.Config{}); err == nil {
		t.Error("no secret and no JWKS URL accepted")
	}
	if _, err := jwtauth.New(jwtauth.Config{Secret: secret[:31]}); err == nil || !strings.Contains(err.Error(), "32 bytes") {
		t.Errorf("31-byte secret: %v; want refused", err)
	}
	if _, err := jwtauth.New(jwtauth.Config{Secret: secret}); err != nil {
		t.Errorf("32-byte secret: %v", err)
	}
}

func TestVerifyAcceptsEachAlgorithm(t *testing.T) {
	is := newIssuer(t)
	now := time.Now()
	v := newVerifier(t, jwtauth.Config{Secret: secret, JWKSURL: is.srv.URL, Issuer: "https://id.example", Audience: "chat"})
	for name, tok := range map[string]string{
		"HS256": sign(t, jwt.SigningMethodHS256, "", secret, claimsAt(now, "u1")),
		"RS256": sign(t, jwt.SigningMethodRS256, "rsa1", is.rsa, claimsAt(now, "u1")),
		"ES256": sign(t, jwt.SigningMethodES256, "ec1", is.ec, claimsAt(now, "u1")),
		"EdDSA": sign(t, jwt.SigningMethodEdDSA, "ed1", is.ed, claimsAt(now, "u1")),
	} {
		c, err := v.Verify(context.Background(), tok)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if c.Subject != "u1" || c.Name != "Alice" || c.Issuer != "https://id.example" || c.ExpiresAt.Unix() != now.Add(time.Hour).Unix() {
			t.Errorf("%s: claims %+v", name, c)
		}
	}
	if n := is.fetches.Load(); n != 1 {
		t.Errorf("%d JWKS fetches for three known kids; want 1 (cached)", n)
	}
}

// TestVerifyRefusesHostileTokens: every token here is refused as invalid.
func TestVerifyRefusesHostileTokens(t *testing.T) {
	is := newIssuer(t)
	now := time.Now()
	v := newVerifier(t, jwtauth.Config{Secret: secret, JWKSURL: is.srv.URL, Issuer: "https://id.example", Audience: "chat"})
	rsaOnly := newVerifier(t, jwtauth.Config{JWKSURL: is.srv.URL})
	pubDER, err := x509.MarshalPKIXPublicKey(&is.rsa.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	with := func(edit func(jwt.MapClaims)) jwt.MapClaims {
		c := claimsAt(now, "u1")
		edit(c)
		return c
	}
	b64 := base64.RawURLEncoding.EncodeToString
	noneTok := b64([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + b64(must(json.Marshal(claimsAt(now, "u1")))) + "."
	otherKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	for _, tc := range []struct {
		name string
		v    *jwtauth.Verifier
		tok  string
		want error
	}{
		{"expired", v, sign(t, jwt.SigningMethodHS256, "", secret, with(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Minute).Unix() })), jwtauth.ErrExpired},
		{"no exp", v, sign(t, jwt.SigningMethodHS256, "", secret, with(func(c jwt.MapClaims) { delete(c, "exp") })), jwtauth.ErrInvalid},
		{"no sub", v, sign(t, jwt.SigningMethodHS256, "", secret, with(func(c jwt.MapClaims) { delete(c, "sub") })), jwtauth.ErrInvalid},
		{"huge sub", v, sign(t, jwt.SigningMethodHS256, "", secret, with(func(c jwt.MapClaims) { c["sub"] = strings.Repeat("x", 256) })), jwtauth.ErrInvalid},
		{"not yet valid", v, sign(t, jwt.SigningMethodHS256, "", secret, with(func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Hour).Unix() })), jwtauth.ErrInvalid},
		{"wrong aud", v, sign(t, jwt.SigningMethodHS256, "", secret, with(func(c jwt.MapClaims) { c["aud"] = "billing" })), jwtauth.ErrInvalid},
		{"no aud", v, sign(t, jwt.SigningMethodHS256, "", secret, with(func(c jwt.MapClaims) { delete(c, "aud") })), jwtauth.ErrInvalid},
		{"wrong iss", v, sign(t, jwt.SigningMethodRS256, "rsa1", is.rsa, with(func(c jwt.MapClaims) { c["iss"] = "https://evil.example" })), jwtauth.ErrInvalid},
		{"wrong secret", v, sign(t, jwt.SigningMethodHS256, "", []byte("another-secret-another-secret-xx"), claimsAt(now, "u1")), jwtauth.ErrInvalid},
		{"alg none", v, noneTok, jwtauth.ErrInvalid},
		{"HS256 with the RSA public key as secret", v, sign(t, jwt.SigningMethodHS256, "rsa1", pubPEM, claimsAt(now, "u1")), jwtauth.ErrInvalid},
		{"HS256 with the RSA public key, no secret configured", rsaOnly, sign(t, jwt.SigningMethodHS256, "rsa1", pubPEM, claimsAt(now, "u1")), jwtauth.ErrInvalid},
		{"RS256 by another key under a known kid", v, sign(t, jwt.SigningMethodRS256, "rsa1", otherKey, claimsAt(now, "u1")), jwtauth.ErrInvalid},
		{"ES256 header on the RSA kid", v, sign(t, jwt.SigningMethodES256, "rsa1", is.ec, claimsAt(now, "u1")), jwtauth.ErrInvalid},
		{"RS512 (not offered)", v, sign(t, jwt.SigningMethodRS512, "rsa1", is.rsa, claimsAt(now, "u1")), jwtauth.ErrInvalid},
		{"oversized", v, sign(t, jwt.SigningMethodHS256, "", secret, with(func(c jwt.MapClaims) { c["pad"] = strings.Repeat("x", 9000) })), jwtauth.ErrTooLarge},
		{"garbage", v, "a.b.c", jwtauth.ErrInvalid},
	} {
		_, err := tc.v.Verify(context.Background(), tc.tok)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v; want %v", tc.name, err, tc.want)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestLeeway(t *testing.T) {
	c := testkit.NewClock(time.Unix(1_800_000_000, 0))
	v := newVerifier(t, jwtauth.Config{Secret: secret, Now: c.Now})
	tok := sign(t, jwt.SigningMethodHS256, "", secret, jwt.MapClaims{"sub": "u1", "exp": c.Now().Unix()})
	c.Advance(jwtauth.DefaultLeeway - time.Second)
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Errorf("within the leeway: %v", err)
	}
	c.Advance(2 * time.Second)
	if _, err := v.Verify(context.Background(), tok); !errors.Is(err, jwtauth.ErrExpired) {
		t.Errorf("past the leeway: %v; want expired", err)
	}
}

// TestUnknownKidFloodFetchesOncePerInterval: a flood of made-up kids
// costs one JWKS fetch per RefetchInterval, not one per token.
func TestUnknownKidFloodFetchesOncePerInterval(t *testing.T) {
	is := newIssuer(t)
	c := testkit.NewClock(time.Now())
	v := newVerifier(t, jwtauth.Config{JWKSURL: is.srv.URL, Now: c.Now})
	ok := sign(t, jwt.SigningMethodRS256, "rsa1", is.rsa, claimsAt(c.Now(), "u1"))
	if _, err := v.Verify(context.Background(), ok); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 250; i++ {
				tok := sign(t, jwt.SigningMethodRS256, fmt.Sprintf("kid-%d-%d", g, i), is.rsa, claimsAt(c.Now(), "u1"))
				if _, err := v.Verify(context.Background(), tok); !errors.Is(err, jwtauth.ErrInvalid) {
					t.Errorf("unknown kid: %v; want invalid", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := is.fetches.Load(); n != 1 {
		t.Errorf("%d fetches for 2000 unknown kids within one interval; want 1", n)
	}
	c.Advance(jwtauth.DefaultRefetchInterval)
	for i := 0; i < 100; i++ {
		_, _ = v.Verify(context.Background(), sign(t, jwt.SigningMethodRS256, fmt.Sprintf("again-%d", i), is.rsa, claimsAt(c.Now(), "u1")))
	}
	if n := is.fetches.Load(); n != 2 {
		t.Errorf("%d fetches after one more interval; want 2", n)
	}
}

// TestRotatedKeyIsFetched: a kid the issuer added is found by a refetch.
func TestRotatedKeyIsFetched(t *testing.T) {
	is := newIssuer(t)
	c := testkit.NewClock(time.Now())
	v := newVerifier(t, jwtauth.Config{JWKSURL: is.srv.URL, Now: c.Now})
	if _, err := v.Verify(context.Background(), sign(t, jwt.SigningMethodRS256, "rsa1", is.rsa, claimsAt(c.Now(), "u1"))); err != nil {
		t.Fatal(err)
	}
	next, _ := rsa.GenerateKey(rand.Reader, 2048)
	is.addKey(jose.JSONWebKey{Key: &next.PublicKey, KeyID: "rsa2", Algorithm: "RS256", Use: "sig"})
	c.Advance(jwtauth.DefaultRefetchInterval)
	if _, err := v.Verify(context.Background(), sign(t, jwt.SigningMethodRS256, "rsa2", next, claimsAt(c.Now(), "u1"))); err != nil {
		t.Errorf("rotated key: %v", err)
	}
}

// TestStaleKeysServedWhileURLDown: once fetched, keys keep working while
// the JWKS URL fails, past their max age too.
func TestStaleKeysServedWhileURLDown(t *testing.T) {
	is := newIssuer(t)
	c := testkit.NewClock(time.Now())
	v := newVerifier(t, jwtauth.Config{JWKSURL: is.srv.URL, Now: c.Now})
	if _, err := v.Verify(context.Background(), sign(t, jwt.SigningMethodRS256, "rsa1", is.rsa, claimsAt(c.Now(), "u1"))); err != nil {
		t.Fatal(err)
	}
	is.down.Store(true)
	for i := 0; i < 3; i++ {
		c.Advance(jwtauth.DefaultKeysMaxAge + time.Second)
		if _, err := v.Verify(context.Background(), sign(t, jwt.SigningMethodES256, "ec1", is.ec, claimsAt(c.Now(), "u1"))); err != nil {
			t.Errorf("stale key while the URL is down: %v", err)
		}
	}
	waitFor(t, func() bool { return is.fetches.Load() >= 2 }, "a background refresh of the old set")
}

// TestKeysUnavailableBeforeFirstFetch: a token that cannot be checked
// because no key was ever fetched is not called invalid.
func TestKeysUnavailableBeforeFirstFetch(t *testing.T) {
	is := newIssuer(t)
	is.down.Store(true)
	v := newVerifier(t, jwtauth.Config{JWKSURL: is.srv.URL})
	_, err := v.Verify(context.Background(), sign(t, jwt.SigningMethodRS256, "rsa1", is.rsa, claimsAt(time.Now(), "u1")))
	if !errors.Is(err, jwtauth.ErrKeysUnavailable) || errors.Is(err, jwtauth.ErrInvalid) {
		t.Errorf("%v; want keys unavailable", err)
	}
}

func TestNonStringNameIsAbsent(t *testing.T) {
	v := newVerifier(t, jwtauth.Config{Secret: secret})
	c, err := v.Verify(context.Background(), sign(t, jwt.SigningMethodHS256, "", secret, jwt.MapClaims{"sub": "u1", "name": 42, "exp": time.Now().Add(time.Hour).Unix()}))
	if err != nil || c.Name != "" {
		t.Errorf("claims %+v, %v; want valid with no name", c, err)
	}
}

func TestLooksLikeJWT(t *testing.T) {
	for tok, want := range map[string]bool{
		"eyJh.eyJz.sig": true, "eyJhbGciOiJub25lIn0.e30.": true, "chat_abcdef": false, "a.b": false, "a.b.c.d": false,
		"eyJh.b.c=": false, "admin.token.0123456789": false, "abc.def.ghi": false, "": false, "..": false, "ICAg.e30.": false,
	} {
		if got := jwtauth.LooksLikeJWT(tok); got != want {
			t.Errorf("LooksLikeJWT(%q) = %v", tok, got)
		}
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
