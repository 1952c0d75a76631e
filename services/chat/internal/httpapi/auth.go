package httpapi

import (
	"net/http"

	"github.com/apistack/platform/libs/apiserver"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// Authenticator maps bearer tokens to users through the chat service. It
// exists before the service does: the server is built first (its Redis
// client is shared with the Redis engine), the service after; set Service
// before the server starts.
type Authenticator struct {
	Service *chat.Service
}

// Validate is the server's TokenValidator. Its answers are the domain's,
// mapped by StatusError as the WebSocket maps them: an unknown token
// (a deleted user's too) is 401, a store that cannot be asked 503.
func (a *Authenticator) Validate(token string, r *http.Request) apiserver.AuthResult[chat.User] {
	if a.Service == nil {
		return apiserver.AuthResult[chat.User]{Err: StatusError(errUnavailable, inBody)} // not wired yet
	}
	u, err := a.Service.Authenticate(r.Context(), token)
	if err != nil {
		return apiserver.AuthResult[chat.User]{Err: StatusError(err, inBody)}
	}
	return apiserver.AuthResult[chat.User]{Valid: true, Context: u}
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
