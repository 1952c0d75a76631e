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

// keySet caches the keys of a JWKS URL. The set in use is read without a
// lock. A fetch happens when a kid is unknown or the set is older than
// KeysMaxAge, but never twice within RefetchInterval, whatever the
// traffic: a flood of made-up kids costs one fetch per interval. While
// the URL fails, the last good set keeps being used.
type keySet struct {
	url    string
	client *http.Client
	gap    time.Duration
	maxAge time.Duration
	now    func() time.Time

	cur atomic.Pointer[keys]

	mu       sync.Mutex
	lastTry  time.Time // when the last fetch started (successful or not)
	fetching bool
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
// one-key set. An unknown kid may trigger one fetch (see keySet).
func (ks *keySet) find(ctx context.Context, kid string) (pubKey, error) {
	set := ks.cur.Load()
	if set != nil {
		if k, ok := set.lookup(kid); ok {
			if ks.now().Sub(set.fetched) > ks.maxAge && ks.claimFetch() {
				// Known key, old set: refresh behind the request.
				go ks.fetch(context.WithoutCancel(ctx)) //nolint:errcheck // a failure keeps the old set
			}
			return k, nil
		}
	}
	if !ks.claimFetch() {
		if set == nil {
			return pubKey{}, ErrKeysUnavailable
		}
		return pubKey{}, fmt.Errorf("unknown key %q", kid)
	}
	if err := ks.fetch(ctx); err != nil && set == nil {
		return pubKey{}, fmt.Errorf("%w: %w", ErrKeysUnavailable, err)
	}
	if set = ks.cur.Load(); set != nil {
		if k, ok := set.lookup(kid); ok {
			return k, nil
		}
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

// claimFetch reports whether the caller may fetch now, and if so records
// the attempt: at most one fetch at a time and one per gap.
func (ks *keySet) claimFetch() bool {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	now := ks.now()
	if ks.fetching || (!ks.lastTry.IsZero() && now.Sub(ks.lastTry) < ks.gap) {
		return false
	}
	ks.fetching = true
	ks.lastTry = now
	return true
}

// fetch reads the set and publishes it; on failure the old set stays.
func (ks *keySet) fetch(ctx context.Context) error {
	defer func() {
		ks.mu.Lock()
		ks.fetching = false
		ks.mu.Unlock()
	}()
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
