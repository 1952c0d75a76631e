// Package chatwire is the chat service's wire contract as the benchmark sees it: the
// WebSocket and send URLs, the event frames and the send body. Names live here only.
package chatwire

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

// Paths under a service's base URL.
const (
	WSPath   = "/api/v1/ws"
	SendPath = "/api/v1/messages/send"
)

// Event types the benchmark reads; any other type is ignored.
const (
	TypeHello    = "hello"
	TypeMessage  = "message"
	TypePresence = "presence"
	TypeError    = "error"
	// TypeShieldMode: shield mode went on or off (Event.Shield).
	TypeShieldMode = "shield_mode"
)

// Shield is a shield_mode event's change: Auto when the raid watch switched it.
type Shield struct {
	On    bool       `json:"on"`
	Auto  bool       `json:"auto"`
	Until *time.Time `json:"until,omitempty"`
	At    time.Time  `json:"at"`
}

// User is the author of a message.
type User struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Role string `json:"role"`
}

// Message is a stored chat message as sent to subscribers.
type Message struct {
	ID        int64     `json:"id"`
	Channel   string    `json:"channel"`
	Text      string    `json:"text"`
	User      User      `json:"user"`
	CreatedAt time.Time `json:"created_at"`
	Bot       bool      `json:"bot"`
}

// Event is one server-to-client object. For "message" events Message is set; for
// "error" events Code and ErrorText are set (the wire field "message" is a string there).
type Event struct {
	Type      string
	LastID    int64
	Recovered bool
	Count     int
	Code      string
	ErrorText string
	Message   *Message
	Shield    *Shield
}

// wireEvent decodes every event type in one pass; "message" is an object in message
// events and a string in error events, so error events are decoded again as errorEvent.
type wireEvent struct {
	Type      string   `json:"type"`
	LastID    int64    `json:"last_id,omitempty"`
	Recovered bool     `json:"recovered,omitempty"`
	Count     int      `json:"count,omitempty"`
	Code      string   `json:"code,omitempty"`
	Message   *Message `json:"message,omitempty"`
	Shield    *Shield  `json:"shield,omitempty"`
}

type errorEvent struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ParseFrame calls fn for each event in a text frame holding one or more JSON objects
// separated by newlines. Unknown types are passed through with only Type set.
func ParseFrame(frame []byte, fn func(Event)) error {
	return eachLine(frame, func(line []byte) error {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			return nil
		}
		var w wireEvent
		err := json.Unmarshal(line, &w)
		var typeErr *json.UnmarshalTypeError
		switch {
		case err == nil:
		case errors.As(err, &typeErr) && w.Type != TypeMessage:
			w.Message = nil // a field of an event we do not read has another shape
		default:
			return fmt.Errorf("decode event %.80q: %w", line, err)
		}
		ev := Event{Type: w.Type, LastID: w.LastID, Recovered: w.Recovered, Count: w.Count, Code: w.Code, Shield: w.Shield}
		switch w.Type {
		case TypeMessage:
			if w.Message == nil {
				return fmt.Errorf("message event without message: %.80q", line)
			}
			ev.Message = w.Message
		case TypeError:
			var e errorEvent
			if err := json.Unmarshal(line, &e); err != nil {
				return fmt.Errorf("decode error event %.80q: %w", line, err)
			}
			ev.Code, ev.ErrorText = e.Code, e.Message
		}
		fn(ev)
		return nil
	})
}

// ScanFrame is ParseFrame for a reader that needs only the id and text of message
// events, at a fraction of the cost: a message event in the shape both the chat and
// the floor write ({"type":"message",...,"message":{"id":N,...,"text":"..."...}} with
// no escape in the text) is read without decoding it, and onMessage gets the text's
// bytes (valid until it returns); every other line goes through ParseFrame's decoding
// to onEvent. A generator reading hundreds of thousands of deliveries a second spends
// most of its CPU in encoding/json otherwise.
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
// can only be a key, and the message object's "id" comes first in both servers'
// encodings, so the first match after it is the message's text.
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

// EncodeMessageEvent encodes a "message" event as one JSON object (no newline).
func EncodeMessageEvent(m Message) ([]byte, error) {
	b, err := json.Marshal(wireEvent{Type: TypeMessage, Message: &m})
	if err != nil {
		return nil, fmt.Errorf("encode message %d: %w", m.ID, err)
	}
	return b, nil
}

// SendBody is the JSON body of a send request.
type SendBody struct {
	Message string `json:"message"`
	Channel string `json:"channel"`
}

// WSURL is the subscription URL for channel under base; since <= 0 leaves it out.
func WSURL(base, channel string, since int64) (string, error) {
	u, err := url.Parse(strings.TrimRight(base, "/") + WSPath)
	if err != nil {
		return "", fmt.Errorf("build websocket URL from %q: %w", base, err)
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	}
	q := url.Values{"channel": {channel}}
	if since > 0 {
		q.Set("since", strconv.FormatInt(since, 10))
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// SendURL is the send endpoint under base.
func SendURL(base string) string { return strings.TrimRight(base, "/") + SendPath }
