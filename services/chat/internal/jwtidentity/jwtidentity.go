// Package jwtidentity lets the chat domain check platform tokens with the
// library's jwtauth: it adapts a *jwtauth.Verifier to chat.Identities, so
// the domain itself imports no token library (cmd/chat/layers_test.go).
package jwtidentity

import (
	"context"
	"errors"
	"fmt"

	"github.com/apistack/platform/libs/apiserver/jwtauth"
	"github.com/apistack/platform/services/chat/internal/chat"
)

// New returns v as chat.Identities; nil (no platform tokens) when v is nil,
// so chat.Options.Identities stays a nil interface.
func New(v *jwtauth.Verifier) chat.Identities {
	if v == nil {
		return nil
	}
	return verifier{v}
}

type verifier struct{ v *jwtauth.Verifier }

func (verifier) IsPlatformToken(token string) bool { return jwtauth.LooksLikeJWT(token) }

func (a verifier) Verify(ctx context.Context, token string) (chat.PlatformClaims, error) {
	c, err := a.v.Verify(ctx, token)
	switch {
	case errors.Is(err, jwtauth.ErrKeysUnavailable):
		return chat.PlatformClaims{}, fmt.Errorf("%w: %w", chat.ErrIdentityUnavailable, err)
	case errors.Is(err, jwtauth.ErrExpired):
		return chat.PlatformClaims{}, fmt.Errorf("%w: %w", chat.ErrIdentityExpired, err)
	case err != nil:
		return chat.PlatformClaims{}, err
	}
	return chat.PlatformClaims{Subject: c.Subject, Name: c.Name, ExpiresAt: c.ExpiresAt}, nil
}
