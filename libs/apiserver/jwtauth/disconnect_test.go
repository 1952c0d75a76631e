package jwtauth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"

	"github.com/apistack/platform/libs/apiserver/jwtauth"
)

// slowIssuer delays each JWKS answer, as an identity provider under load
// does: long enough for a client to give up while its fetch is under way.
func slowIssuer(t *testing.T, delay time.Duration) *issuer {
	is := newIssuer(t)
	inner := is.srv.Config.Handler
	is.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		inner.ServeHTTP(w, r)
	})
	return is
}

// verifyServer answers 200 for a valid token, 503 for keys unavailable and
// 401 otherwise, checking on the request's context as a service does.
func verifyServer(t *testing.T, v *jwtauth.Verifier) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := v.Verify(r.Context(), strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		switch {
		case errors.Is(err, jwtauth.ErrKeysUnavailable):
			w.WriteHeader(http.StatusServiceUnavailable)
		case err != nil:
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// call sends tok; a positive giveUp makes the client disconnect after it.
func call(srv *httptest.Server, tok string, giveUp time.Duration) (int, error) {
	ctx := context.Background()
	if giveUp > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, giveUp)
		defer cancel()
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestDisconnectingClientsCannotStarveKeys is the attack of issue 41: on a
// cold replica, clients with made-up kids that disconnect while the JWKS
// fetch is under way must neither cancel it nor start the refetch gap; a
// genuine RS256 user right after them is served.
func TestDisconnectingClientsCannotStarveKeys(t *testing.T) {
	is := slowIssuer(t, 300*time.Millisecond)
	const gap = 2 * time.Second
	v := newVerifier(t, jwtauth.Config{JWKSURL: is.srv.URL, RefetchInterval: gap})
	srv := verifyServer(t, v)
	now := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := sign(t, jwt.SigningMethodRS256, fmt.Sprintf("made-up-%d", i), is.rsa, claimsAt(now, "attacker"))
			_, _ = call(srv, tok, 30*time.Millisecond)
		}()
	}
	wg.Wait()
	good := sign(t, jwt.SigningMethodRS256, "rsa1", is.rsa, claimsAt(now, "alice"))
	if code, err := call(srv, good, 0); err != nil || code != http.StatusOK {
		t.Fatalf("a genuine RS256 user after 12 disconnecting clients: %d %v; want 200", code, err)
	}
	if n := is.fetches.Load(); n != 1 {
		t.Errorf("%d JWKS fetches; want 1 shared by every request", n)
	}

	// A rotated key: the attackers disconnect while the refetch runs; the
	// user holding a token with the new key is served.
	next, _ := rsa.GenerateKey(rand.Reader, 2048)
	is.addKey(jose.JSONWebKey{Key: &next.PublicKey, KeyID: "rsa2", Algorithm: "RS256", Use: "sig"})
	time.Sleep(gap)
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := sign(t, jwt.SigningMethodRS256, fmt.Sprintf("again-%d", i), is.rsa, claimsAt(now, "attacker"))
			_, _ = call(srv, tok, 30*time.Millisecond)
		}()
	}
	wg.Wait()
	rotated := sign(t, jwt.SigningMethodRS256, "rsa2", next, claimsAt(now, "bob"))
	if code, err := call(srv, rotated, 0); err != nil || code != http.StatusOK {
		t.Fatalf("a token with a newly rotated key after disconnecting clients: %d %v; want 200", code, err)
	}
}

// TestFailedFetchStartsNoGap: a fetch that failed does not hold the next
// one back for RefetchInterval; once the URL answers, keys come.
func TestFailedFetchStartsNoGap(t *testing.T) {
	is := newIssuer(t)
	is.down.Store(true)
	v := newVerifier(t, jwtauth.Config{JWKSURL: is.srv.URL, RefetchInterval: time.Minute})
	tok := sign(t, jwt.SigningMethodRS256, "rsa1", is.rsa, claimsAt(time.Now(), "u1"))
	if _, err := v.Verify(context.Background(), tok); !errors.Is(err, jwtauth.ErrKeysUnavailable) {
		t.Fatalf("URL down: %v; want keys unavailable", err)
	}
	is.down.Store(false)
	waitFor(t, func() bool { _, err := v.Verify(context.Background(), tok); return err == nil }, "keys within a second of the URL's return")
	if n := is.fetches.Load(); n > 10 {
		t.Errorf("%d fetches; the backoff after a failure did not hold", n)
	}
}

// TestRefreshFetchesAtStart: with Refresh running, a cold replica has its
// keys before any token, and a JWKS that is down at start is retried.
func TestRefreshFetchesAtStart(t *testing.T) {
	is := newIssuer(t)
	is.down.Store(true)
	v := newVerifier(t, jwtauth.Config{JWKSURL: is.srv.URL})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); v.Refresh(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, func() bool { return is.fetches.Load() >= 2 }, "a retry of the failed first fetch")
	is.down.Store(false)
	before := is.fetches.Load()
	waitFor(t, func() bool { return is.fetches.Load() > before }, "the fetch once the URL is back")
	time.Sleep(50 * time.Millisecond)
	n := is.fetches.Load()
	tok := sign(t, jwt.SigningMethodRS256, "rsa1", is.rsa, claimsAt(time.Now(), "u1"))
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatalf("after the background fetch: %v", err)
	}
	if got := is.fetches.Load(); got != n {
		t.Errorf("the first token fetched again (%d -> %d); the background fetch should have served it", n, got)
	}
}
