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
// exists before the service does: the server is built first (its Redis
// client is shared with the Redis engine), the service after; set Service
// before the server starts.
type Authenticator struct {
	Service *chat.Service
}

// Validate is the server's TokenValidator. An unknown token is refused
// (403); a store that cannot be asked answers 503.
func (a *Authenticator) Validate(token string, r *http.Request) apiserver.AuthResult[chat.User] {
	if a.Service == nil {
		return apiserver.AuthResult[chat.User]{Err: StatusError(errUnavailable, inBody)} // not wired yet
	}
	ctx, cancel := context.WithTimeout(r.Context(), authTimeout)
	defer cancel()
	u, err := a.Service.Authenticate(ctx, token)
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
