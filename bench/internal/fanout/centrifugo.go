package fanout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/apistack/platform/bench/internal/hs256"

	"github.com/coder/websocket"
)

// Protocols a run can speak: the chat service's (and the floor's), or Centrifugo's
// JSON protocol, so that the same generator measures the peer users would pick instead.
const (
	ProtocolChat       = "chat"
	ProtocolCentrifugo = "centrifugo"
)

// Centrifugo's endpoints under a node's base URL.
const (
	centrifugoWSPath      = "/connection/websocket"
	centrifugoPublishPath = "/api/publish"
)

// centrifugoTokenTTL bounds the life of the connection tokens the generator signs.
const centrifugoTokenTTL = time.Hour

// centrifugoToken is a connection JWT for user sub, signed HS256 with secret (Centrifugo's
// client.token.hmac_secret_key).
func centrifugoToken(secret, sub string, now time.Time) (string, error) {
	if secret == "" {
		return "", errors.New("centrifugo: no HMAC secret for connection tokens")
	}
	tok, err := hs256.Sign([]byte(secret), map[string]any{"sub": sub, "exp": now.Add(centrifugoTokenTTL).Unix()})
	if err != nil {
		return "", fmt.Errorf("centrifugo: %w", err)
	}
	return tok, nil
}

// centrifugoWSURL is a node's WebSocket endpoint.
func centrifugoWSURL(base string) (string, error) {
	u, err := url.Parse(strings.TrimRight(base, "/") + centrifugoWSPath)
	if err != nil {
		return "", fmt.Errorf("build websocket URL from %q: %w", base, err)
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	}
	return u.String(), nil
}

// centrifugoSubscribe sends the connect and subscribe commands; their replies come to
// the reader (an error reply counts as an error event). Centrifugo handles a
// connection's commands in order, so the subscribe follows the connect.
func centrifugoSubscribe(ctx context.Context, c *websocket.Conn, token, channel string) error {
	connect, err := json.Marshal(map[string]any{"id": 1, "connect": map[string]string{"token": token}})
	if err != nil {
		return err
	}
	sub, err := json.Marshal(map[string]any{"id": 2, "subscribe": map[string]string{"channel": channel}})
	if err != nil {
		return err
	}
	if err := c.Write(ctx, websocket.MessageText, connect); err != nil {
		return err
	}
	return c.Write(ctx, websocket.MessageText, sub)
}

// centrifugoPublishBody is the HTTP API's publish request; the text travels as the
// publication's data {"text": ...}.
func centrifugoPublishBody(text, channel string) ([]byte, error) {
	return json.Marshal(map[string]any{"channel": channel, "data": map[string]string{"text": text}})
}

// centrifugoPublishFailed reports whether a 2xx publish answer carries an error: the
// HTTP API answers some failures with 200 and {"error":{...}}.
func centrifugoPublishFailed(body []byte) bool {
	return bytes.Contains(body, []byte(`"error"`))
}

var (
	centrifugoPush  = []byte(`"push":`)
	centrifugoText  = []byte(`"text":"`)
	centrifugoError = []byte(`"error":{`)
	centrifugoCode  = []byte(`"code":`)
)

// scanCentrifugo reads a frame of Centrifugo's JSON protocol (replies and pushes, one
// JSON object a line): onText gets the text of each publication (valid until it
// returns), onPing each server ping ({}), which the client must answer, and onError the
// code of each error reply. Other replies are ignored. Like client.ScanFrame it reads
// without encoding/json: the generator reads hundreds of thousands of pushes a second.
func scanCentrifugo(frame []byte, onText func([]byte), onPing func(), onError func(code string)) error {
	for len(frame) > 0 {
		line := frame
		if i := bytes.IndexByte(frame, '\n'); i >= 0 {
			line, frame = frame[:i], frame[i+1:]
		} else {
			frame = nil
		}
		line = bytes.TrimSpace(line)
		switch {
		case len(line) == 0:
		case bytes.Equal(line, []byte("{}")):
			onPing()
		case bytes.Contains(line, centrifugoPush):
			i := bytes.Index(line, centrifugoText)
			if i < 0 {
				continue // a push of another kind (join, leave, unsubscribe)
			}
			rest := line[i+len(centrifugoText):]
			end := bytes.IndexByte(rest, '"')
			if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
				return fmt.Errorf("centrifugo push %.80q: unreadable text", line)
			}
			onText(rest[:end])
		case bytes.Contains(line, centrifugoError):
			code := "unknown"
			if i := bytes.Index(line, centrifugoCode); i >= 0 {
				rest := line[i+len(centrifugoCode):]
				n := 0
				for n < len(rest) && n < 10 && rest[n] >= '0' && rest[n] <= '9' {
					n++
				}
				if v, err := strconv.Atoi(string(rest[:n])); err == nil {
					code = "centrifugo " + strconv.Itoa(v)
				}
			}
			onError(code)
		case line[0] != '{':
			return fmt.Errorf("centrifugo frame %.80q: not JSON", line)
		}
	}
	return nil
}
