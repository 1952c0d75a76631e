package jwtauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// maxJWKSBytes bounds what a JWKS answer may make the service hold.
const maxJWKSBytes = 1 << 20

// fetchTimeout bounds one JWKS fetch when the caller's context does not.
const fetchTimeout = 5 * time.Second

// pubKey is one usable public key of the set.
type pubKey struct {
	key any    // *rsa.PublicKey, *ecdsa.PublicKey or ed25519.PublicKey
	alg string // the JWK's alg, "" when it names none
}

// keys is one fetched set, never changed once published.
type keys struct {
	byKID   map[string]pubKey
	fetched time.Time
}

// failureBackoff is how long a failed fetch holds the next one back: short
// (a failed fetch does not start the refetch gap, so keys come back as
// soon as the URL does), yet long enough that a flood of unknown kids
// cannot spin on a dead URL.
const failureBackoff = 250 * time.Millisecond

// keySet caches the keys of a JWKS URL. The set in use is read without a
// lock. A fetch happens when a kid is unknown or the set is older than
// KeysMaxAge, but never twice within RefetchInterval of a successful
// fetch, whatever the traffic: a flood of made-up kids costs one fetch per
// interval. While the URL fails, the last good set keeps being used.
//
// A fetch belongs to no request: it runs on a context of its own, bounded
// by fetchTimeout, and every request that needs it waits on the same one
// (at most one fetch at a time). A request that gives up, or whose client
// goes away, stops waiting; the fetch goes on for the others. Only a
// successful fetch starts the refetch gap, so a cancelled or failed fetch
// cannot lock a rotated key out for an interval (see Verifier.Refresh for
// the fetch at start and in the background).
type keySet struct {
	url    string
	client *http.Client
	gap    time.Duration
	maxAge time.Duration
	now    func() time.Time

	cur atomic.Pointer[keys]

	mu       sync.Mutex
	lastOK   time.Time // when the last successful fetch started
	failedAt time.Time // when the last failed fetch ended
	inflight *flight   // the fetch under way, nil when none
}

// flight is one fetch that any number of requests wait on.
type flight struct {
	done chan struct{}
	err  error // set before done is closed
}

func newKeySet(cfg Config) (*keySet, error) {
	if cfg.JWKSURL == "" {
		return nil, errors.New("jwtauth: no JWKS URL")
	}
	ks := &keySet{url: cfg.JWKSURL, client: cfg.HTTPClient, gap: cfg.RefetchInterval, maxAge: cfg.KeysMaxAge, now: cfg.Now}
	if ks.client == nil {
		ks.client = &http.Client{Timeout: fetchTimeout}
	}
	if ks.gap <= 0 {
		ks.gap = DefaultRefetchInterval
	}
	if ks.maxAge <= 0 {
		ks.maxAge = DefaultKeysMaxAge
	}
	return ks, nil
}

// find returns the key named kid. An empty kid matches the only key of a
// one-key set. An unknown kid may trigger one fetch (see keySet); ctx
// bounds only how long this call waits for it.
func (ks *keySet) find(ctx context.Context, kid string) (pubKey, error) {
	set := ks.cur.Load()
	if set != nil {
		if k, ok := set.lookup(kid); ok {
			if ks.now().Sub(set.fetched) > ks.maxAge {
				// Known key, old set: refresh behind the request.
				ks.start(ctx, false)
			}
			return k, nil
		}
	}
	f := ks.start(ctx, set == nil)
	if f == nil {
		if set == nil {
			return pubKey{}, ErrKeysUnavailable
		}
		return pubKey{}, fmt.Errorf("unknown key %q", kid)
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		// This caller stops waiting; the fetch goes on for the others.
		if set == nil {
			return pubKey{}, fmt.Errorf("%w: %w", ErrKeysUnavailable, ctx.Err())
		}
		return pubKey{}, fmt.Errorf("%w: waiting for key %q: %w", ErrKeysUnavailable, kid, ctx.Err())
	}
	if set = ks.cur.Load(); set != nil {
		if k, ok := set.lookup(kid); ok {
			return k, nil
		}
	}
	if f.err != nil && set == nil {
		return pubKey{}, fmt.Errorf("%w: %w", ErrKeysUnavailable, f.err)
	}
	return pubKey{}, fmt.Errorf("unknown key %q", kid)
}

func (s *keys) lookup(kid string) (pubKey, bool) {
	if kid == "" {
		if len(s.byKID) != 1 {
			return pubKey{}, false
		}
		for _, k := range s.byKID {
			return k, true
		}
	}
	k, ok := s.byKID[kid]
	return k, ok
}

// start returns the fetch under way, or starts one when the gap since the
// last successful fetch (and the short backoff after a failed one) has
// passed; nil when neither. force skips the gap (no set yet, or the
// background refresher): the backoff after a failure still holds, unless
// the caller is the refresher. ctx gives the fetch its values (a trace),
// never its cancellation.
func (ks *keySet) start(ctx context.Context, force bool) *flight {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if ks.inflight != nil {
		return ks.inflight
	}
	now := ks.now()
	if !ks.failedAt.IsZero() && now.Sub(ks.failedAt) < failureBackoff {
		return nil
	}
	if !force && !ks.lastOK.IsZero() && now.Sub(ks.lastOK) < ks.gap {
		return nil
	}
	f := &flight{done: make(chan struct{})}
	ks.inflight = f
	go ks.run(context.WithoutCancel(ctx), f, now)
	return f
}

// run does one fetch for every waiter of f.
func (ks *keySet) run(ctx context.Context, f *flight, began time.Time) {
	f.err = ks.fetch(ctx)
	ks.mu.Lock()
	if f.err == nil {
		ks.lastOK, ks.failedAt = began, time.Time{}
	} else {
		ks.failedAt = ks.now()
	}
	ks.inflight = nil
	ks.mu.Unlock()
	close(f.done)
}

// refresh fetches now (or joins the fetch under way) and waits for it,
// ignoring the gap: for the background refresher.
func (ks *keySet) refresh(ctx context.Context) error {
	ks.mu.Lock()
	f := ks.inflight
	if f == nil {
		f = &flight{done: make(chan struct{})}
		ks.inflight = f
		go ks.run(context.WithoutCancel(ctx), f, ks.now())
	}
	ks.mu.Unlock()
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fetch reads the set and publishes it; on failure the old set stays. ctx
// is never a request's: see keySet.
func (ks *keySet) fetch(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ks.url, nil)
	if err != nil {
		return fmt.Errorf("jwks: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := ks.client.Do(req)
	if err != nil {
		return fmt.Errorf("jwks: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("jwks: status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return fmt.Errorf("jwks: %w", err)
	}
	if len(body) > maxJWKSBytes {
		return fmt.Errorf("jwks: larger than %d bytes", maxJWKSBytes)
	}
	set, err := parseSet(body)
	if err != nil {
		return err
	}
	set.fetched = ks.now()
	ks.cur.Store(set)
	return nil
}

// parseSet keeps the public signing keys of a JWK Set; keys of other
// uses, private keys and symmetric keys are left out.
func parseSet(body []byte) (*keys, error) {
	var raw struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	set := &keys{byKID: make(map[string]pubKey, len(raw.Keys))}
	for _, r := range raw.Keys {
		// One key go-jose cannot read (an unknown kty) must not hide the others.
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(r); err != nil {
			continue
		}
		if !k.Valid() || !k.IsPublic() || (k.Use != "" && k.Use != "sig") {
			continue
		}
		set.byKID[k.KeyID] = pubKey{key: k.Key, alg: k.Algorithm}
	}
	if len(set.byKID) == 0 {
		return nil, errors.New("jwks: no usable public signing key")
	}
	return set, nil
}
