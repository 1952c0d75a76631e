package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/apistack/platform/libs/apiserver"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// authTimeout bounds the token lookup, so a hung store costs a request a
// bounded wait and then a 503, not the client's whole timeout.
const authTimeout = 2 * time.Second

// Authenticator maps bearer tokens to users through the chat service. It
// is made from the service, so it exists only once the service does
// (cmd/chat wires store, service, authenticator, then the HTTP server).
type Authenticator struct {
	svc *chat.Service
}

// NewAuthenticator returns the authenticator of svc.
func NewAuthenticator(svc *chat.Service) *Authenticator { return &Authenticator{svc: svc} }

// Validate is the server's TokenValidator. An unknown token is refused
// (403); a store that cannot be asked answers 503.
func (a *Authenticator) Validate(token string, r *http.Request) apiserver.AuthResult[chat.User] {
	ctx, cancel := context.WithTimeout(r.Context(), authTimeout)
	defer cancel()
	u, err := a.svc.Authenticate(ctx, token)
	switch {
	case err == nil:
		return apiserver.AuthResult[chat.User]{Valid: true, Context: u}
	case errors.Is(err, chat.ErrUnauthorized):
		return apiserver.AuthResult[chat.User]{Valid: false, Error: "Invalid token"}
	default:
		// The token could not be checked: answer 503 rather than guess.
		return apiserver.AuthResult[chat.User]{Err: StatusError(errUnavailable, inBody)}
	}
}

// Actor returns the authenticated user of a request on an authenticated
// endpoint, or the 503 to answer when the token could not be checked.
func Actor(c *apiserver.Context[chat.User]) (chat.User, error) {
	if c.Auth.ID == "" {
		return chat.User{}, StatusError(errUnavailable, inBody)
	}
	return c.Auth, nil
}

// reader returns who reads on an endpoint that is public while
// CHAT_PUBLIC_READ is on: nil for an anonymous caller (the endpoint was
// registered without authentication), the user otherwise.
func reader(c *apiserver.Context[chat.User]) (*chat.User, error) {
	if !c.Authenticated {
		return nil, nil
	}
	u, err := Actor(c)
	if err != nil {
		return nil, err
	}
	return &u, nil
}
