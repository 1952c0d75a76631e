// Package jwtvalidator plugs a jwtauth.Verifier into apiserver's
// TokenValidator seam beside a service's own tokens. It is apart from
// jwtauth because it imports the library (and so gin): jwtauth checks
// tokens and nothing else, so a service's domain can use it without the
// HTTP stack (layers_test.go holds that).
package jwtvalidator

import (
	"errors"
	"net/http"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/jwtauth"
)

// New is an apiserver.TokenValidator that checks JWTs with v and
// hands every other token to local (nil: other tokens are refused), so a
// service accepts the platform's tokens beside its own. A valid JWT's
// claims become the auth context through fromClaims. A refused JWT is a
// 401 (RFC 6750 invalid_token) with the library's error body; keys that
// could not be fetched yet are a 503.
func New[A any](v *jwtauth.Verifier, fromClaims func(r *http.Request, c jwtauth.Claims) apiserver.AuthResult[A], local apiserver.TokenValidator[A]) apiserver.TokenValidator[A] {
	return func(token string, r *http.Request) apiserver.AuthResult[A] {
		if !jwtauth.LooksLikeJWT(token) {
			if local == nil {
				return apiserver.AuthResult[A]{Err: apiserver.UnauthorizedError(jwtauth.ErrInvalid.Error())}
			}
			return local(token, r)
		}
		c, err := v.Verify(r.Context(), token)
		switch {
		case errors.Is(err, jwtauth.ErrKeysUnavailable):
			e := apiserver.NewError(http.StatusServiceUnavailable, "the identity provider's signing keys are unavailable, so the token could not be checked; try again")
			e.Cause = err
			return apiserver.AuthResult[A]{Err: e}
		case errors.Is(err, jwtauth.ErrExpired):
			return apiserver.AuthResult[A]{Err: apiserver.UnauthorizedError("token expired")}
		case err != nil:
			return apiserver.AuthResult[A]{Err: apiserver.UnauthorizedError(jwtauth.ErrInvalid.Error())}
		}
		return fromClaims(r, c)
	}
}
