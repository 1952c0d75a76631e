// Package jwtauth checks the JSON Web Tokens an identity platform issues,
// so a service can accept the platform's users as they are: HS256 with a
// shared secret, and RS256, ES256 and EdDSA against the keys of a JWKS URL
// (cached, see keys.go). Signatures are checked by github.com/golang-jwt/jwt
// and JWK sets parsed by github.com/go-jose/go-jose: nothing here does
// cryptography of its own.
//
// jwtvalidator plugs a Verifier into apiserver's TokenValidator seam; this
// package imports no HTTP framework, so a service's domain may use it.
package jwtauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Defaults of Config.
const (
	// MinSecretBytes is the shortest HS256 secret accepted: RFC 7518 3.2
	// asks for a key at least as long as the hash output.
	MinSecretBytes = 32
	// DefaultLeeway absorbs clock skew between the issuer and this
	// service when exp and nbf are checked.
	DefaultLeeway = 30 * time.Second
	// DefaultMaxTokenBytes bounds a token before anything is decoded.
	DefaultMaxTokenBytes = 8 << 10
	// DefaultRefetchInterval is the shortest gap between two JWKS fetches,
	// however many unknown kids arrive.
	DefaultRefetchInterval = 5 * time.Second
	// DefaultKeysMaxAge is how long a fetched key set is used before it is
	// refreshed in the background (keys the issuer withdrew stop working).
	DefaultKeysMaxAge = 10 * time.Minute
	// maxSubjectBytes bounds the sub claim, which services use as a key.
	maxSubjectBytes = 255
)

// Config configures a Verifier. Secret, JWKSURL or both must be set.
type Config struct {
	// Secret verifies HS256 tokens; at least MinSecretBytes long.
	Secret []byte
	// JWKSURL is where the issuer publishes its public keys (RS256, ES256
	// with P-256, EdDSA with Ed25519).
	JWKSURL string
	// Issuer and Audience, when set, must match iss and one of aud.
	Issuer   string
	Audience string
	// Leeway is the clock skew allowed on exp and nbf (DefaultLeeway;
	// negative means none).
	Leeway time.Duration
	// MaxTokenBytes refuses longer tokens unread (DefaultMaxTokenBytes).
	MaxTokenBytes int
	// RefetchInterval is the shortest gap between JWKS fetches
	// (DefaultRefetchInterval).
	RefetchInterval time.Duration
	// KeysMaxAge is when a key set is refreshed although every kid is
	// known (DefaultKeysMaxAge).
	KeysMaxAge time.Duration
	// HTTPClient fetches the JWKS (default: a client with a 5s timeout).
	HTTPClient *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Claims is what a valid token says about its holder.
type Claims struct {
	// Subject is sub: the platform's id of the user, never empty.
	Subject string
	// Name is the name claim when it is a string, else "".
	Name      string
	Issuer    string
	ExpiresAt time.Time
}

// Reasons a token is refused, for errors.Is. Every refusal wraps ErrInvalid.
var (
	ErrInvalid  = errors.New("invalid token")
	ErrExpired  = fmt.Errorf("%w: expired", ErrInvalid)
	ErrTooLarge = fmt.Errorf("%w: too large", ErrInvalid)
	// ErrKeysUnavailable is not a refusal: the JWKS has never been fetched,
	// so the token could not be checked (answer 503, not 401).
	ErrKeysUnavailable = errors.New("the signing keys could not be fetched")
)

// Verifier checks tokens. It is safe for concurrent use.
type Verifier struct {
	cfg     Config
	methods []string
	parser  *jwt.Parser
	keys    *keySet // nil without JWKSURL
}

// New returns a Verifier, or an error naming the setting that is wrong.
func New(cfg Config) (*Verifier, error) {
	if len(cfg.Secret) == 0 && cfg.JWKSURL == "" {
		return nil, errors.New("jwtauth: a secret or a JWKS URL is required")
	}
	if len(cfg.Secret) > 0 && len(cfg.Secret) < MinSecretBytes {
		return nil, fmt.Errorf("jwtauth: the secret must be at least %d bytes", MinSecretBytes)
	}
	if cfg.Leeway == 0 {
		cfg.Leeway = DefaultLeeway
	} else if cfg.Leeway < 0 {
		cfg.Leeway = 0
	}
	if cfg.MaxTokenBytes <= 0 {
		cfg.MaxTokenBytes = DefaultMaxTokenBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	v := &Verifier{cfg: cfg}
	if len(cfg.Secret) > 0 {
		v.methods = append(v.methods, jwt.SigningMethodHS256.Alg())
	}
	if cfg.JWKSURL != "" {
		ks, err := newKeySet(cfg)
		if err != nil {
			return nil, err
		}
		v.keys = ks
		v.methods = append(v.methods, jwt.SigningMethodRS256.Alg(), jwt.SigningMethodES256.Alg(), jwt.SigningMethodEdDSA.Alg())
	}
	opts := []jwt.ParserOption{
		// Only the algorithms a configured key can check: "none" and any
		// algorithm nobody configured are refused before the key lookup.
		jwt.WithValidMethods(v.methods),
		jwt.WithLeeway(cfg.Leeway),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(cfg.Now),
	}
	if cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Issuer))
	}
	if cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(cfg.Audience))
	}
	v.parser = jwt.NewParser(opts...)
	return v, nil
}

// LooksLikeJWT tells a compact JWS (three base64url parts, the first a
// JSON object) from an opaque token, so a service can route a token
// without trying both checks: an opaque token that happens to hold two
// dots is not taken for a JWT.
func LooksLikeJWT(token string) bool {
	if strings.Count(token, ".") != 2 {
		return false
	}
	for _, r := range token {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	header, _, _ := strings.Cut(token, ".")
	if len(header) < 4 {
		return false
	}
	// The first 3 bytes of the header are enough to see its opening brace.
	b, err := base64.RawURLEncoding.DecodeString(header[:4])
	return err == nil && strings.HasPrefix(strings.TrimLeft(string(b), " \t\r\n"), "{")
}

// claims is the token body: the registered claims and the display name.
// Name is any so a non-string name makes the name absent, not the token
// invalid.
type claims struct {
	jwt.RegisteredClaims
	Name any `json:"name,omitempty"`
}

// Verify checks token and returns its claims. A refused token is an error
// wrapping ErrInvalid (ErrExpired, ErrTooLarge among them); ctx bounds a
// JWKS fetch the check may need.
func (v *Verifier) Verify(ctx context.Context, token string) (Claims, error) {
	if len(token) > v.cfg.MaxTokenBytes {
		return Claims{}, ErrTooLarge
	}
	var c claims
	_, err := v.parser.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) { return v.key(ctx, t) })
	switch {
	case errors.Is(err, ErrKeysUnavailable):
		return Claims{}, err
	case errors.Is(err, jwt.ErrTokenExpired):
		return Claims{}, ErrExpired
	case err != nil:
		return Claims{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if c.Subject == "" || len(c.Subject) > maxSubjectBytes {
		return Claims{}, fmt.Errorf("%w: sub must be 1..%d bytes", ErrInvalid, maxSubjectBytes)
	}
	out := Claims{Subject: c.Subject, Issuer: c.Issuer, ExpiresAt: c.ExpiresAt.Time}
	if name, ok := c.Name.(string); ok {
		out.Name = name
	}
	return out, nil
}

// key picks the key that checks t: the secret for HS256 only, a JWKS key
// of the matching type for the others, so a token signed with HS256 and a
// public key as the secret never meets that key.
func (v *Verifier) key(ctx context.Context, t *jwt.Token) (any, error) {
	alg := t.Method.Alg()
	if alg == jwt.SigningMethodHS256.Alg() {
		return v.cfg.Secret, nil
	}
	if v.keys == nil {
		return nil, errors.New("no JWKS configured")
	}
	kid, _ := t.Header["kid"].(string)
	k, err := v.keys.find(ctx, kid)
	if err != nil {
		return nil, err
	}
	if k.alg != "" && k.alg != alg {
		return nil, fmt.Errorf("key %q is for %s, not %s", kid, k.alg, alg)
	}
	switch key := k.key.(type) {
	case *rsa.PublicKey:
		if alg == jwt.SigningMethodRS256.Alg() {
			return key, nil
		}
	case *ecdsa.PublicKey:
		if alg == jwt.SigningMethodES256.Alg() && key.Curve == elliptic.P256() {
			return key, nil
		}
	case ed25519.PublicKey:
		if alg == jwt.SigningMethodEdDSA.Alg() {
			return key, nil
		}
	}
	return nil, fmt.Errorf("key %q cannot check %s", kid, alg)
}

// Refresh fetches the JWKS at once and keeps it fresh until ctx ends, so
// a replica holds its keys before the first token arrives and a refresh
// never waits on a client: after a successful fetch the next comes half a
// KeysMaxAge later; after a failed one it is retried from 500 ms,
// doubling up to RefetchInterval, until one succeeds. Run it in a
// goroutine; without a JWKS URL it returns at once. Requests still fetch
// an unknown kid themselves (see keySet), sharing the fetch under way.
func (v *Verifier) Refresh(ctx context.Context) {
	if v.keys == nil {
		return
	}
	const firstRetry = 500 * time.Millisecond
	retry := firstRetry
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := v.keys.refresh(ctx); err != nil {
			t.Reset(retry)
			retry = min(2*retry, v.keys.gap)
			continue
		}
		retry = firstRetry
		t.Reset(v.keys.maxAge / 2)
	}
}
