package realtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/coder/websocket"

	"github.com/apistack/platform/services/chat/internal/apierr"
	"github.com/apistack/platform/services/chat/internal/chat"
)

// Close codes the server uses besides the standard ones (1000 normal,
// 1001 going away on shutdown, 1003 binary frame, 1009 frame over the
// limit, 1011 internal error, 1013 try again later). The 4000 range is the
// application's (RFC 6455 §7.4.2); each says what the client should do.
const (
	// CloseUnauthorized: reading needs a token (CHAT_PUBLIC_READ=false) and
	// no valid auth frame came in time. Do not reconnect without a token.
	CloseUnauthorized websocket.StatusCode = 4001
	// CloseTokenExpired: the socket was authenticated by a platform token
	// (a JWT) and its exp passed without a refresh frame carrying a fresh
	// token for the same user. Get a fresh token, then reconnect with
	// since=<last id seen>.
	CloseTokenExpired websocket.StatusCode = 4002
	// CloseUserDeleted: the authenticated user was deleted (its token is
	// gone). Do not reconnect with that token.
	CloseUserDeleted websocket.StatusCode = 4003
	// CloseUserBanned: the authenticated user was banned. Sending is
	// refused until unbanned; reconnecting to read follows the usual rules
	// (CHAT_PUBLIC_READ, the token).
	CloseUserBanned websocket.StatusCode = 4004
	// CloseChannelBanned: the authenticated user was banned from this
	// socket's channel (a ban with channel), after the user_banned event.
	// Sending there is refused until unbanned; other channels are not
	// affected; reconnecting to read follows the usual rules.
	CloseChannelBanned websocket.StatusCode = 4005
	// CloseSlowConsumer: more events were waiting for this client than its
	// queue holds. Reconnect with since=<last id seen> to recover the rest.
	CloseSlowConsumer websocket.StatusCode = 4008
	// CloseTooManySockets: an auth frame, needed to read
	// (CHAT_PUBLIC_READ=false), named a user who holds its maximum of
	// sockets on this replica (CHAT_WS_MAX_SOCKETS_PER_USER); an error
	// frame with reason too_many_sockets_per_user comes first. Close
	// another socket of that user before reconnecting.
	CloseTooManySockets websocket.StatusCode = 4029
	// CloseResync: this replica lost its place in the channel's log (the
	// history window moved past it, or the store was reset). Reconnect with
	// since=<last id seen>; hello says recovered:false if a reload is needed.
	CloseResync websocket.StatusCode = 4010
)

// Frame types, server to client. Event frames use the domain's event
// types (message, message_deleted, user_timed_out, user_banned,
// shield_mode).
const (
	typeHello    = "hello"
	typePresence = "presence"
	typeAck      = "ack"
	typePong     = "pong"
	typeError    = "error"
)

// Client frame types.
const (
	typeAuth    = "auth"
	typeRefresh = "refresh"
	typeSend    = "send"
	typePing    = "ping"
)

// Error codes of error frames that do not come from a domain error kind
// (those use the kind itself: invalid, unauthorized, forbidden, blocked,
// slow_mode, unavailable, ...).
const (
	codeBadRequest  = "bad_request"
	codeRateLimited = "rate_limited"
	codeInternal    = apierr.CodeInternal
)

// clientFrame is every client-to-server object; unused fields stay empty.
type clientFrame struct {
	Type    string          `json:"type"`
	ID      json.RawMessage `json:"id,omitempty"`
	Token   string          `json:"token,omitempty"`
	Message string          `json:"message,omitempty"`
	// IdempotencyKey is a send's Idempotency-Key (chat.SendInput).
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

type helloFrame struct {
	Type      string        `json:"type"`
	Channel   string        `json:"channel"`
	LastID    chat.Cursor   `json:"last_id"`
	Recovered bool          `json:"recovered"`
	User      *chat.UserRef `json:"user,omitempty"`
	Replica   string        `json:"replica"`
}

type presenceFrame struct {
	Type    string `json:"type"`
	Channel string `json:"channel"`
	Count   int    `json:"count"`
}

type ackFrame struct {
	Type    string          `json:"type"`
	ID      json.RawMessage `json:"id,omitempty"`
	Message *chat.Message   `json:"message,omitempty"`
	Reply   *chat.Message   `json:"reply,omitempty"`
	User    *chat.UserRef   `json:"user,omitempty"`
	// Replayed: the ack is an earlier send's, found by its
	// idempotency_key; nothing was stored now.
	Replayed bool `json:"replayed,omitempty"`
	// Held: the message waits for review (only its sender is told; it
	// shows it as pending); nothing was stored.
	Held *chat.HeldMessage `json:"held,omitempty"`
}

type pongFrame struct {
	Type string          `json:"type"`
	ID   json.RawMessage `json:"id,omitempty"`
}

// errorFrame mirrors the HTTP error body: the status a REST call would
// have answered, a code to switch on (the domain's error kind), and the
// same fields by the same names (apierr: reason, until, limit,
// retry_after_seconds, details on body.message).
type errorFrame struct {
	Type    string            `json:"type"`
	ID      json.RawMessage   `json:"id,omitempty"`
	Code    string            `json:"code"`
	Status  int               `json:"status"`
	Message string            `json:"message"`
	Details []chat.FieldError `json:"details,omitempty"`
	// Extra holds the fields beyond these, by apierr's names.
	Extra map[string]any `json:"-"`
}

// MarshalJSON writes the fixed fields, then Extra's.
func (e errorFrame) MarshalJSON() ([]byte, error) {
	type plain errorFrame // without this method
	b, err := json.Marshal(plain(e))
	if err != nil || len(e.Extra) == 0 {
		return b, err
	}
	x, err := json.Marshal(e.Extra)
	if err != nil {
		return nil, err
	}
	out := append(b[:len(b)-1:len(b)-1], ',')
	return append(out, x[1:]...), nil
}

// frame is what a connection's queue holds: the bytes of one WebSocket
// message, shared by every subscriber it goes to. Event frames carry the
// cursor of each event they hold and where it ends in data, so a
// subscriber that already has some of them (after a recovery) can write
// the rest without encoding anything again.
type frame struct {
	data    []byte
	cursors []chat.Cursor // empty for control frames (hello, ack, ...)
	ends    []int         // ends[i]: end of event i in data (exclusive)
}

func (f *frame) events() int { return len(f.cursors) }

// controlFrame encodes one control object.
func controlFrame(v any) *frame {
	b, err := json.Marshal(v)
	if err != nil {
		// Every control type is a plain struct; this cannot happen.
		panic("realtime: encode control frame: " + err.Error())
	}
	return &frame{data: b}
}

// encodeEvents encodes each event once and groups them into frames of at
// most batch events, newline-separated: what a subscriber that is behind
// gets in one write.
func encodeEvents(evs []chat.Event, batch int) ([]*frame, error) {
	out := make([]*frame, 0, (len(evs)+batch-1)/batch)
	for len(evs) > 0 {
		n := min(batch, len(evs))
		f := &frame{cursors: make([]chat.Cursor, 0, n), ends: make([]int, 0, n)}
		var buf bytes.Buffer
		for i, ev := range evs[:n] {
			if i > 0 {
				buf.WriteByte('\n')
			}
			b, err := json.Marshal(ev)
			if err != nil {
				return nil, err
			}
			buf.Write(b)
			f.cursors = append(f.cursors, ev.Cursor)
			f.ends = append(f.ends, buf.Len())
		}
		f.data = buf.Bytes()
		out = append(out, f)
		evs = evs[n:]
	}
	return out, nil
}

// after returns the part of an event frame holding the events strictly
// after cur (nil if none), and how many there are.
func (f *frame) after(cur chat.Cursor) ([]byte, int) {
	for i, c := range f.cursors {
		if cur.Less(c) {
			start := 0
			if i > 0 {
				start = f.ends[i-1] + 1 // skip the newline
			}
			return f.data[start:], len(f.cursors) - i
		}
	}
	return nil, 0
}

// errorFor turns an error of the send or auth path into an error frame:
// the answer POST /messages/send would give (apierr.For maps both).
func errorFor(id json.RawMessage, err error) errorFrame {
	a, _ := apierr.For(err, apierr.InBody)
	return errorFrame{Type: typeError, ID: id, Code: a.Code, Status: a.Status, Message: a.Message, Details: a.Details, Extra: a.Extra}
}

func badRequest(id json.RawMessage, msg string) errorFrame {
	return errorFrame{Type: typeError, ID: id, Code: codeBadRequest, Status: http.StatusBadRequest, Message: msg}
}

// rateLimited is the answer to a connection over its own frame limit.
func rateLimited(id json.RawMessage, msg string) errorFrame {
	return errorFrame{Type: typeError, ID: id, Code: codeRateLimited, Status: http.StatusTooManyRequests, Message: msg,
		Extra: map[string]any{apierr.FieldRetryAfter: 1}}
}

// closeCode extracts the close code from a read or write error, -1 if the
// connection ended without a close frame.
func closeCode(err error) websocket.StatusCode {
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return -1
}
