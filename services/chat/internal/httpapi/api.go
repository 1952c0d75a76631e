package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apistack/platform/libs/apiserver"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// Prefix is where every endpoint of the API lives.
const Prefix = "/api/v1"

// Documentation tags, in the order /docs shows them.
const (
	tagMessages    = "Messages"
	tagCommands    = "Commands"
	tagUsers       = "Users"
	tagModeration  = "Moderation"
	tagFilters     = "Filters"
	tagChannels    = "Channels"
	tagPermissions = "Permissions"
)

// Tags describes the API's documentation tags (apiserver.Config.APITags).
func Tags() []apiserver.Tag {
	return []apiserver.Tag{
		{Name: tagMessages, Description: "Read a channel's messages and send to it; a message starting with a command trigger makes the bot reply"},
		{Name: tagCommands, Description: "Bot commands: a trigger and a reply template"},
		{Name: tagUsers, Description: "Accounts, roles and bearer tokens"},
		{Name: tagModeration, Description: "Timeouts, bans and deleting messages"},
		{Name: tagFilters, Description: "Blocked terms, regular expressions, links and capitals"},
		{Name: tagChannels, Description: "Channel settings (slow mode) and the roles given in a channel"},
		{Name: tagPermissions, Description: "Who may do what"},
		{Name: tagWebhooks, Description: "Signed HTTP callbacks of channels' events (Standard Webhooks), with retries"},
		{Name: "Live", Description: "Real-time delivery over WebSocket: the protocol, recovery with since, presence"},
	}
}

// Description is the API description shown at the top of /docs, with the
// permission table rendered from chat.PermissionTable (the table the
// service enforces, so the two cannot differ).
func Description(publicRead bool) string {
	reading := "Reading (`GET /messages`, `/commands`, `/channels/{channel}`) is public: no token needed (`CHAT_PUBLIC_READ=true`)."
	if !publicRead {
		reading = "Reading needs a bearer token too (`CHAT_PUBLIC_READ=false`)."
	}
	var b strings.Builder
	b.WriteString("A streamer-style community chat with a command bot. Every endpoint lives under `/api/v1`.\n\n")
	b.WriteString("**Authentication.** `Authorization: Bearer <token>`. The first broadcaster's token is `CHAT_ADMIN_TOKEN`; ")
	b.WriteString("the broadcaster creates users (`POST /users`), whose token is shown once. ")
	b.WriteString(reading + "\n\n")
	b.WriteString("**Communities.** Everything a streamer owns is scoped to a channel. A user's role in a channel is the higher of the ")
	b.WriteString("platform-wide role and the role given there (`PUT /channels/{channel}/roles/{user_id}`); bans, timeouts, commands and filters ")
	b.WriteString("given a `channel` are that channel's own, managed by its moderators, and hold there only; without `channel` they are platform-wide ")
	b.WriteString("and need a platform-wide role. In a channel its own command wins over a platform-wide one; platform-wide filters run first. ")
	b.WriteString("`CHAT_MAX_COMMANDS`, `CHAT_MAX_FILTERS` and `CHAT_MAX_REGEX_FILTERS` count platform-wide and per channel.\n\n")
	b.WriteString("**Errors** use one body: `{\"statusCode\", \"error\", \"message\"}` plus `details` (400, 422), ")
	b.WriteString("`reason` (403, 409, 422, 429), `until` (403: the end of a timeout, null for a ban), `limit` (409 when a limit is reached) and `retry_after_seconds` with a `Retry-After` header (429, 503). ")
	b.WriteString("An unknown token (a deleted user's too) is 401. WebSocket error frames carry the same status, reason and fields. ")
	b.WriteString("A 503 means the store could not be reached and nothing was changed: a 201 always means stored.\n\n")
	b.WriteString("**Clients.** The browser client is served beside the API at `/client.js` (an ES module, no build step; types at `/client.d.ts`): ")
	b.WriteString("REST, the socket with reconnection and `since` recovery, a token-refresh callback. `/embed/{channel}` is an iframe page for other sites ")
	b.WriteString("(token by `postMessage`; framing sites are `CHAT_EMBED_ORIGINS`), and `/embed/{channel}?overlay=1&fade=<seconds>` an overlay for OBS's browser source. ")
	b.WriteString("Go programs use the package `github.com/apistack/platform/services/chat/client`.\n\n")
	b.WriteString("**Permissions**\n\n")
	b.WriteString(chat.PermissionsMarkdown())
	return b.String()
}

// API holds what the handlers need.
type API struct {
	svc      *chat.Service
	messages prometheus.Counter // chat_messages_total{transport="http"}
}

// Register declares every endpoint on srv under /api/v1. Reading endpoints
// are public while svc.PublicRead() is on, authenticated otherwise.
func Register(srv *apiserver.Server[chat.User], svc *chat.Service) (*API, error) {
	if srv == nil || svc == nil {
		return nil, errors.New("httpapi: server and service are required")
	}
	a := &API{svc: svc}
	messages, err := messagesCounter(srv.Registry())
	if err != nil {
		return nil, err
	}
	a.messages = messages
	a.registerMessages(srv)
	a.registerArchive(srv)
	a.registerCommands(srv)
	a.registerUsers(srv)
	a.registerFilters(srv)
	a.registerChannels(srv)
	a.registerModLog(srv)
	a.registerPermissions(srv)
	return a, nil
}

// messagesCounter is chat_messages_total{transport="http"}: messages
// accepted (stored) by POST /messages/send. Live delivery counts its
// WebSocket sends in the same vector (transport="websocket"), whichever
// registers it first.
func messagesCounter(reg prometheus.Registerer) (prometheus.Counter, error) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chat_messages_total", Help: "Messages accepted (stored), by transport."}, []string{"transport"})
	if err := reg.Register(vec); err != nil {
		var are prometheus.AlreadyRegisteredError
		existing, ok := are.ExistingCollector.(*prometheus.CounterVec)
		if !errors.As(err, &are) || !ok {
			return nil, fmt.Errorf("httpapi: register chat_messages_total: %w", err)
		}
		vec = existing
	}
	c, err := vec.GetMetricWithLabelValues("http")
	if err != nil {
		return nil, fmt.Errorf("httpapi: chat_messages_total: %w", err)
	}
	return c, nil
}

// Documented answers shared by many endpoints.
const (
	docBadRequest   = "Invalid input; details name every field"
	docUnauthorized = "No bearer token, a malformed Authorization header, or an unknown token (a deleted user's too)"
	docForbidden    = "The caller's role may not do this (see the permission table)"
	docUnavailable  = "The store could not be reached; nothing was changed"
	docNotFound     = "No such resource"
)

// responses documents the answers shared by the endpoints and extra's, by description.
func responses(extra map[int]string, authenticated bool) map[int]apiserver.ResponseDoc {
	r := map[int]apiserver.ResponseDoc{
		http.StatusBadRequest:         {Description: docBadRequest},
		http.StatusServiceUnavailable: {Description: docUnavailable},
	}
	if authenticated {
		r[http.StatusUnauthorized] = apiserver.ResponseDoc{Description: docUnauthorized}
		r[http.StatusForbidden] = apiserver.ResponseDoc{Description: docForbidden}
	}
	for k, v := range extra {
		r[k] = apiserver.ResponseDoc{Description: v}
	}
	return r
}

// readOp declares a reading endpoint: public or not by configuration.
func (a *API) readOp(op apiserver.Operation, extra map[int]string) apiserver.Operation {
	op.Authenticated = !a.svc.PublicRead()
	if op.Authenticated {
		op.Description = strings.TrimSpace(op.Description + " Needs a bearer token (CHAT_PUBLIC_READ=false).")
	} else {
		op.Description = strings.TrimSpace(op.Description + " Public: no token needed (a token is not checked).")
	}
	op.Responses = responses(extra, op.Authenticated)
	return op
}

// writeOp declares an authenticated endpoint needing action.
func writeOp(op apiserver.Operation, action chat.Action, extra map[int]string) apiserver.Operation {
	op.Authenticated = true
	if action != "" {
		note := fmt.Sprintf("Needs `%s` (%s or higher).", action, chat.MinRoleFor(action))
		op.Description = strings.TrimSpace(op.Description + " " + note)
	}
	op.Responses = responses(extra, true)
	return op
}
