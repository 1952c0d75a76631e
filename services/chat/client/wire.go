package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Paths under a service's base URL (the service's root, or the proxy's
// /chat prefix).
const (
	APIPrefix    = "/api/v1"
	WSPath       = APIPrefix + "/ws"
	SendPath     = APIPrefix + "/messages/send"
	MessagesPath = APIPrefix + "/messages"
)

// Frame types, server to client. Event types (those with a cursor) are
// TypeMessage, TypeMessageDeleted, TypeUserTimedOut, TypeUserBanned and
// TypeShieldMode; the others are control frames of one socket.
const (
	TypeHello          = "hello"
	TypePresence       = "presence"
	TypeAck            = "ack"
	TypePong           = "pong"
	TypeError          = "error"
	TypeMessage        = "message"
	TypeMessageDeleted = "message_deleted"
	TypeUserTimedOut   = "user_timed_out"
	TypeUserBanned     = "user_banned"
	// TypeShieldMode: shield mode went on or off (Event.Shield).
	TypeShieldMode = "shield_mode"
)

// Client frame types.
const (
	typeAuth    = "auth"
	typeRefresh = "refresh"
	typeSend    = "send"
	typePing    = "ping"
)

// Close codes of the chat's own (RFC 6455 §7.4.2 application range); the
// server's protocol documentation says what each means. Subscribe acts on
// them: see Subscription.
const (
	CloseUnauthorized   = 4001
	CloseTokenExpired   = 4002
	CloseUserDeleted    = 4003
	CloseUserBanned     = 4004
	CloseChannelBanned  = 4005
	CloseSlowConsumer   = 4008
	CloseResync         = 4010
	CloseTooManySockets = 4029
)

// Cursor orders a channel's events ("42.9f2c01a4": message 42; "42-1.5b0e77c3":
// the first event after it). Keep it as written and hand it back as since.
// A JSON number (a bare message id) is read too.
type Cursor string

// UnmarshalJSON takes a string or a number.
func (c *Cursor) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = Cursor(s)
		return nil
	}
	if string(b) == "null" {
		*c = ""
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("cursor %s: %w", b, err)
	}
	*c = Cursor(n.String())
	return nil
}

// MessageID is the message part of the cursor ("42-1.5b0e77c3" is 42), 0 if
// it has another shape.
func (c Cursor) MessageID() int64 {
	s := string(c)
	if i := strings.IndexAny(s, "-."); i >= 0 {
		s = s[:i]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// User is a message's author or a moderation's subject, as of then.
type User struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Role string `json:"role"`
}

// Message is a stored chat message.
type Message struct {
	ID        int64      `json:"id"`
	Channel   string     `json:"channel"`
	User      User       `json:"user"`
	Text      string     `json:"text"`
	CreatedAt time.Time  `json:"created_at"`
	Bot       bool       `json:"bot"`
	Deleted   bool       `json:"deleted,omitempty"`
	DeletedAt *time.Time `json:"deleted_at,omitempty"`
}

// Moderation is a user_timed_out or user_banned event's payload.
type Moderation struct {
	User   User       `json:"user"`
	By     User       `json:"by"`
	Reason string     `json:"reason,omitempty"`
	Until  *time.Time `json:"until,omitempty"`
	At     time.Time  `json:"at"`
	Scope  string     `json:"scope,omitempty"`
}

// Shield is a shield_mode event's change: Auto when the raid watch switched it.
type Shield struct {
	On     bool       `json:"on"`
	Auto   bool       `json:"auto"`
	Until  *time.Time `json:"until,omitempty"`
	By     User       `json:"by"`
	Reason string     `json:"reason,omitempty"`
	At     time.Time  `json:"at"`
}

// HeldMessage is a send held for review: nothing was stored.
type HeldMessage struct {
	ID        int64     `json:"id"`
	Channel   string    `json:"channel"`
	User      User      `json:"user"`
	Text      string    `json:"text"`
	Reason    string    `json:"reason"`
	FilterID  string    `json:"filter_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Event is one server-to-client object; which fields are set depends on
// Type. For "error" the wire's "message" (a string there) is ErrorText.
type Event struct {
	Type    string
	Channel string
	// Cursor: the event's place in the channel's log (events only).
	Cursor Cursor
	// hello
	LastID    Cursor
	Recovered bool
	Replica   string
	// User: hello's and an auth or refresh ack's.
	User *User
	// presence
	Count int
	// message, message_deleted; a send's ack
	Message *Message
	// ack of a send
	Reply    *Message
	Replayed bool
	Held     *HeldMessage
	// user_timed_out, user_banned
	Moderation *Moderation
	Shield     *Shield
	// ack, pong, error: the id of the client frame answered (0: none)
	ID int64
	// error
	Code       string
	Status     int
	ErrorText  string
	Reason     string
	RetryAfter int
}

// wireEvent decodes every type in one pass; "message" is an object in
// message events and a string in error events, so error events are decoded
// again as errorEvent.
type wireEvent struct {
	Type       string       `json:"type"`
	Channel    string       `json:"channel,omitempty"`
	Cursor     Cursor       `json:"cursor,omitempty"`
	LastID     Cursor       `json:"last_id,omitempty"`
	Recovered  bool         `json:"recovered,omitempty"`
	Replica    string       `json:"replica,omitempty"`
	User       *User        `json:"user,omitempty"`
	Count      int          `json:"count,omitempty"`
	Code       string       `json:"code,omitempty"`
	Message    *Message     `json:"message,omitempty"`
	Reply      *Message     `json:"reply,omitempty"`
	Replayed   bool         `json:"replayed,omitempty"`
	Held       *HeldMessage `json:"held,omitempty"`
	Moderation *Moderation  `json:"moderation,omitempty"`
	Shield     *Shield      `json:"shield,omitempty"`
	ID         json.Number  `json:"id,omitempty"`
}

type errorEvent struct {
	Message    string `json:"message"`
	Status     int    `json:"status"`
	Reason     string `json:"reason"`
	RetryAfter int    `json:"retry_after_seconds"`
}

// eventTyped says whether a type's "message" must be a Message object.
func eventTyped(typ string) bool {
	return typ == TypeMessage || typ == TypeMessageDeleted
}

// ParseFrame calls fn for each object in a text frame holding one or more
// JSON objects separated by newlines. Unknown types are passed through with
// only what their fields share with known ones.
func ParseFrame(frame []byte, fn func(Event)) error {
	return eachLine(frame, func(line []byte) error {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			return nil
		}
		ev, err := parseLine(line)
		if err != nil {
			return err
		}
		fn(ev)
		return nil
	})
}

func parseLine(line []byte) (Event, error) {
	var w wireEvent
	err := json.Unmarshal(line, &w)
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
	case errors.As(err, &typeErr) && !eventTyped(w.Type):
		w.Message = nil // a field of an event we do not read has another shape
	default:
		return Event{}, fmt.Errorf("decode event %.80q: %w", line, err)
	}
	id, _ := w.ID.Int64()
	ev := Event{Type: w.Type, Channel: w.Channel, Cursor: w.Cursor, LastID: w.LastID, Recovered: w.Recovered,
		Replica: w.Replica, User: w.User, Count: w.Count, Code: w.Code, Message: w.Message, Reply: w.Reply,
		Replayed: w.Replayed, Held: w.Held, Moderation: w.Moderation, Shield: w.Shield, ID: id}
	switch w.Type {
	case TypeMessage, TypeMessageDeleted:
		if w.Message == nil {
			return Event{}, fmt.Errorf("%s event without message: %.80q", w.Type, line)
		}
	case TypeError:
		var e errorEvent
		if err := json.Unmarshal(line, &e); err != nil {
			return Event{}, fmt.Errorf("decode error event %.80q: %w", line, err)
		}
		ev.Message = nil
		ev.ErrorText, ev.Status, ev.Reason, ev.RetryAfter = e.Message, e.Status, e.Reason, e.RetryAfter
	}
	return ev, nil
}

// ScanFrame is ParseFrame for a reader that needs only the id and text of
// message events, at a fraction of the cost: a message event in the shape
// the chat writes ({"type":"message",...,"message":{"id":N,...,"text":"..."...}}
// with no escape in the text) is read without decoding it, and onMessage
// gets the text's bytes (valid until it returns); every other line goes
// through ParseFrame's decoding to onEvent. A load generator reading
// hundreds of thousands of deliveries a second spends most of its CPU in
// encoding/json otherwise.
func ScanFrame(frame []byte, onMessage func(id int64, text []byte), onEvent func(Event)) error {
	return eachLine(frame, func(line []byte) error {
		if id, text, ok := scanMessage(line); ok {
			onMessage(id, text)
			return nil
		}
		return ParseFrame(line, onEvent)
	})
}

// eachLine calls fn for each newline-separated line of a frame, until fn fails.
func eachLine(frame []byte, fn func(line []byte) error) error {
	for len(frame) > 0 {
		line := frame
		if i := bytes.IndexByte(frame, '\n'); i >= 0 {
			line, frame = frame[:i], frame[i+1:]
		} else {
			frame = nil
		}
		if err := fn(line); err != nil {
			return err
		}
	}
	return nil
}

var (
	messageStart = []byte(`{"type":"message",`)
	messageID    = []byte(`"message":{"id":`)
	textKey      = []byte(`"text":"`)
)

// scanMessage reads a message event's id and text; ok is false for any line it
// cannot read that way (the caller decodes it). In JSON an unescaped `"text":"`
// can only be a key, and the message object's "id" comes first in the
// chat's encoding, so the first match after it is the message's text.
func scanMessage(line []byte) (id int64, text []byte, ok bool) {
	if !bytes.HasPrefix(line, messageStart) || line[len(line)-1] != '}' {
		return 0, nil, false // not a message event, or cut short: decode it
	}
	i := bytes.Index(line, messageID)
	if i < 0 {
		return 0, nil, false
	}
	rest := line[i+len(messageID):]
	n := 0
	for n < len(rest) && n < 19 && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == 0 || n == len(rest) || (rest[n] != ',' && rest[n] != '}') {
		return 0, nil, false
	}
	id, err := strconv.ParseInt(string(rest[:n]), 10, 64)
	if err != nil {
		return 0, nil, false
	}
	rest = rest[n:]
	j := bytes.Index(rest, textKey)
	if j < 0 {
		return 0, nil, false
	}
	rest = rest[j+len(textKey):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return 0, nil, false // escaped text: let encoding/json read it
	}
	return id, rest[:end], true
}

// EncodeMessageEvent encodes a "message" event as one JSON object (no
// newline), as the chat writes it: for a stand-in server (a benchmark's
// floor) that speaks the same protocol.
func EncodeMessageEvent(m Message) ([]byte, error) {
	b, err := json.Marshal(wireEvent{Type: TypeMessage, Channel: m.Channel, Cursor: Cursor(strconv.FormatInt(m.ID, 10)), Message: &m})
	if err != nil {
		return nil, fmt.Errorf("encode message %d: %w", m.ID, err)
	}
	return b, nil
}

// SendBody is the JSON body of POST /messages/send.
type SendBody struct {
	Message string `json:"message"`
	Channel string `json:"channel,omitempty"`
}

// WSURL is the subscription URL for channel under base (http becomes ws,
// https wss); an empty since leaves it out.
func WSURL(base, channel string, since Cursor) (string, error) {
	u, err := url.Parse(strings.TrimRight(base, "/") + WSPath)
	if err != nil {
		return "", fmt.Errorf("build websocket URL from %q: %w", base, err)
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	case "ws", "wss":
	default:
		return "", fmt.Errorf("base URL %q: want http, https, ws or wss", base)
	}
	q := url.Values{"channel": {channel}}
	if since != "" {
		q.Set("since", string(since))
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// SendURL is the send endpoint under base.
func SendURL(base string) string { return strings.TrimRight(base, "/") + SendPath }
