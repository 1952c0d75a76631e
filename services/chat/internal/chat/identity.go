package chat

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Identities checks the identity platform's tokens. It is a port: the
// domain says what it needs and cmd/chat wires libs/apiserver/jwtauth in
// (internal/jwtidentity), so this package imports no token library.
type Identities interface {
	// IsPlatformToken reports whether token has the platform's shape (a
	// JWT); any other token is a chat token.
	IsPlatformToken(token string) bool
	// Verify checks a platform token. Its errors wrap ErrIdentityExpired
	// or ErrIdentityUnavailable (keys not fetched yet) when one applies;
	// any other error is an invalid token.
	Verify(ctx context.Context, token string) (PlatformClaims, error)
}

// PlatformClaims is what a valid platform token says.
type PlatformClaims struct {
	Subject   string
	Name      string // "" when the token has none
	ExpiresAt time.Time
}

// The errors Identities.Verify wraps.
var (
	ErrIdentityExpired     = errors.New("token expired")
	ErrIdentityUnavailable = errors.New("the platform's keys are unavailable")
)

// Platform users are the users of the identity platform chat is embedded
// in: they hold the platform's JWTs (CHAT_JWT_SECRET, CHAT_JWKS_URL), not
// chat tokens, and are created on their first valid token.
//
// Their id is derived from sub, so every replica finds the same user
// without an index and a user is keyed by sub. Their name is the token's
// name claim when it is a valid user name, else one derived from sub; as
// names are unique (case-insensitively), a name someone else holds gets a
// suffix from sub (alice_3f2a), and the derived name is the last resort.
// Each token sets the name again, so a platform rename shows on the next
// token.

// PlatformUserID is the chat id of the platform user sub: "p_" and 24 hex
// digits of SHA-256(sub).
func PlatformUserID(sub string) string {
	sum := sha256.Sum256([]byte(sub))
	return "p_" + hex.EncodeToString(sum[:12])
}

// platformNames are the names a platform user may take, in order of
// preference (see above).
func platformNames(sub, claim string) []string {
	sum := sha256.Sum256([]byte("name:" + sub))
	h := hex.EncodeToString(sum[:])
	derived := "user_" + h[:10]
	if validateUserName(claim) != nil {
		return []string{derived}
	}
	short := []rune(claim)
	if len(short) > maxUserNameRunes-5 {
		short = short[:maxUserNameRunes-5]
	}
	return []string{claim, string(short) + "_" + h[:4], derived}
}

// Session is what a bearer token names: a user and, for a platform
// token, when it expires (zero for chat tokens, which do not).
type Session struct {
	User    User
	Expires time.Time
}

// AuthenticateSession checks a bearer token: a platform JWT when the
// service has a verifier and the token has a JWT's shape, else a chat
// token (Authenticate). A platform token creates or renames its user.
func (s *Service) AuthenticateSession(ctx context.Context, token string) (Session, error) {
	if s.identities == nil || !s.identities.IsPlatformToken(token) {
		u, err := s.authenticateLocal(ctx, token)
		return Session{User: u}, err
	}
	ctx, cancel := context.WithTimeout(ctx, AuthTimeout)
	defer cancel()
	c, err := s.identities.Verify(ctx, token)
	switch {
	case errors.Is(err, ErrIdentityUnavailable):
		return Session{}, KeysUnavailable(err)
	case errors.Is(err, ErrIdentityExpired):
		return Session{}, &Error{Kind: KindUnauthorized, Message: "token expired"}
	case err != nil:
		return Session{}, &Error{Kind: KindUnauthorized, Message: "invalid token"}
	}
	u := User{ID: PlatformUserID(c.Subject), Role: RoleViewer, CreatedAt: s.clock()}
	u, err = s.store.ProvisionUser(ctx, u, platformNames(c.Subject, c.Name))
	switch {
	case KindOf(err) == KindUnavailable:
		return Session{}, fmt.Errorf("authenticate: %w", err)
	case KindOf(err) == KindConflict:
		return Session{}, err
	case err != nil:
		return Session{}, Unavailable("authenticate", err)
	}
	return Session{User: u, Expires: c.ExpiresAt}, nil
}
