package httpapi

import (
	"net/http"

	"github.com/apistack/platform/libs/apiserver"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// Authenticator maps bearer tokens to users through the chat service. It
// is made from the service, so it exists only once the service does
// (cmd/chat wires store, service, authenticator, then the HTTP server).
type Authenticator struct {
	svc *chat.Service
}

// NewAuthenticator returns the authenticator of svc.
func NewAuthenticator(svc *chat.Service) *Authenticator { return &Authenticator{svc: svc} }

// Validate is the server's TokenValidator. Its answers are the domain's,
// mapped by StatusError as the WebSocket maps them: an unknown token
// (a deleted user's too) is 401, a store that cannot be asked 503.
func (a *Authenticator) Validate(token string, r *http.Request) apiserver.AuthResult[chat.User] {
	u, err := a.svc.Authenticate(r.Context(), token)
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
