package chat

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// AuthTimeout bounds a token check, so a hung store costs a request or a
// WebSocket handshake a bounded wait and then an unavailable error (503),
// not the client's whole timeout. Every transport checks tokens here, so
// they all wait the same.
const AuthTimeout = 2 * time.Second

// Authenticate returns the user a bearer token names: a chat token's
// owner, or a platform token's user (AuthenticateSession). A missing or
// unknown token (a deleted user's too: its token goes with it), an
// invalid or expired platform token is Unauthorized; a store that cannot
// answer within AuthTimeout is Unavailable.
func (s *Service) Authenticate(ctx context.Context, token string) (User, error) {
	ss, err := s.AuthenticateSession(ctx, token)
	return ss.User, err
}

// authenticateLocal returns the user owning a chat token.
func (s *Service) authenticateLocal(ctx context.Context, token string) (User, error) {
	if token == "" {
		return User{}, &Error{Kind: KindUnauthorized, Message: "missing bearer token"}
	}
	ctx, cancel := context.WithTimeout(ctx, AuthTimeout)
	defer cancel()
	u, err := s.store.UserByTokenHash(ctx, HashToken(token))
	switch {
	case errors.Is(err, ErrNotFound):
		return User{}, &Error{Kind: KindUnauthorized, Message: "unknown bearer token"}
	case KindOf(err) == KindUnavailable:
		return User{}, fmt.Errorf("authenticate: %w", err)
	case err != nil:
		// Whatever kept the store from answering (a deadline), the token
		// was not checked: never guess either way.
		return User{}, Unavailable("authenticate", err)
	}
	return u, nil
}

// Bootstrap makes token the token of a broadcaster (CHAT_ADMIN_TOKEN): the
// user holding it is promoted if needed, or a broadcaster is created. It is
// idempotent, and replicas starting together converge on one user because
// the store refuses a second user with the same token hash.
func (s *Service) Bootstrap(ctx context.Context, token string) (User, error) {
	if len(token) < 16 {
		return User{}, Invalid("CHAT_ADMIN_TOKEN", "at least 16 characters")
	}
	hash := HashToken(token)
	for attempt := 0; attempt < 5; attempt++ {
		u, err := s.store.UserByTokenHash(ctx, hash)
		switch {
		case err == nil:
			if u.Role == RoleBroadcaster {
				return u, nil
			}
			r := RoleBroadcaster
			u, err = s.store.UpdateUser(ctx, u.ID, u.Role, UserPatch{Role: &r}, nil, nil)
			if errors.Is(err, ErrConflict) {
				continue // changed meanwhile; look again
			}
			if err != nil {
				return User{}, fmt.Errorf("bootstrap: promote %s: %w", u.ID, err)
			}
			return u, nil
		case !errors.Is(err, ErrNotFound):
			return User{}, fmt.Errorf("bootstrap: %w", err)
		}
		// A stable id and name from the hash: a racing replica creates the
		// very same user, and the loser sees a conflict and reads it back.
		u = User{ID: "u_" + hash[:16], Name: "broadcaster", Role: RoleBroadcaster, CreatedAt: s.clock(), TokenHash: hash}
		if attempt > 0 {
			u.Name = "broadcaster_" + hash[:6]
		}
		err = s.store.CreateUser(ctx, u)
		if err == nil {
			return u, nil
		}
		if !errors.Is(err, ErrConflict) {
			return User{}, fmt.Errorf("bootstrap: create: %w", err)
		}
	}
	return User{}, Conflict("bootstrap: could not create the broadcaster; the name is taken")
}
