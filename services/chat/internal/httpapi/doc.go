// Auth context type (the seam with internal/realtime): chat.User.
//
// The server is *apiserver.Server[chat.User], so realtime.Mount takes
// *apiserver.Server[chat.User] and handlers read c.Auth as a chat.User.
// Authenticator.Validate looks bearer tokens up through
// chat.Service.Authenticate. When the store cannot be asked it answers 503
// through AuthResult.Err, so no handler runs. Actor still refuses an empty
// user with 503 as a second line of defence.

// Package httpapi is the chat service's HTTP API under /api/v1, declared
// through libs/apiserver; StatusError maps domain errors to statuses.
package httpapi
