package main

// Everything the checks assume about the services' URLs and wire formats is in this file,
// so that a change to the chat protocol or to geoip's JSON is one edit here.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// Paths as seen through the proxy (the prefix is what Caddy strips).
const (
	geoipPrefix     = "/geoip"
	chatPrefix      = "/chat"
	geoipLookupIP   = "8.8.8.8"
	geoipLookupPath = geoipPrefix + "/" + geoipLookupIP + "/json/"
	// The sample database embedded in geoip places geoipLookupIP here.
	geoipWantCountry = "US"

	chatSendPath = chatPrefix + "/api/v1/messages/send"
	chatWSPath   = chatPrefix + "/api/v1/ws"

	// The proxy names the replica that answered in this response header.
	servedByHeader = "X-Served-By"
)

// proxyIndexLinks are the pages the proxy's HTML index at / must link to (as paths from
// the root); the smoke check follows every link of the page, these included.
var proxyIndexLinks = []string{
	geoipPrefix + "/", geoipLookupPath, geoipPrefix + "/docs",
	chatPrefix + "/", chatPrefix + "/docs",
}

// geoipIndex is the part of geoip's root (GET /geoip/, JSON for API clients) the checks
// read: links relative to the page, and the endpoints.
type geoipIndex struct {
	Docs      string   `json:"docs"`
	OpenAPI   string   `json:"openapi"`
	Health    string   `json:"health"`
	Endpoints []string `json:"endpoints"`
}

// metricsPaths are ways to ask the proxy for a service's /metrics, which it must refuse:
// the plain path, another case, a trailing slash, a doubled slash, a dot segment and a
// percent-escape (Caddy's path matcher sees them all as /metrics; gin would too for some).
var metricsPaths = []string{
	geoipPrefix + "/metrics", chatPrefix + "/metrics",
	geoipPrefix + "/METRICS", chatPrefix + "/metrics/",
	geoipPrefix + "//metrics", chatPrefix + "/./metrics", chatPrefix + "/%6detrics",
}

// geoipLocation is the part of a geoip lookup the checks read.
type geoipLocation struct {
	IP      string `json:"ip"`
	Country string `json:"country"`
}

// openAPIDoc is the part of /openapi.json the checks read.
type openAPIDoc struct {
	OpenAPI string `json:"openapi"`
	Servers []struct {
		URL string `json:"url"`
	} `json:"servers"`
}

// sendRequest is the body of POST /api/v1/messages/send.
func sendRequest(channel, text string) any {
	return map[string]string{"message": text, "channel": channel}
}

// chatMessage is a stored message: the 201 body of a send and the "message" of a frame.
type chatMessage struct {
	ID      messageID `json:"id"`
	Channel string    `json:"channel"`
	Text    string    `json:"text"`
	Bot     bool      `json:"bot"`
}

// frame is one JSON object sent by the server over the WebSocket.
//
//	{"type":"hello","last_id":N,"recovered":bool,"replica":"..."}
//	{"type":"message","message":{...}}
type frame struct {
	Type      string    `json:"type"`
	LastID    messageID `json:"last_id"`
	Recovered bool      `json:"recovered"`
	// Replica is the host name of the chat container that holds the connection.
	Replica string       `json:"replica"`
	Message *chatMessage `json:"message"`
}

const (
	frameHello   = "hello"
	frameMessage = "message"
)

// wsURL is the WebSocket address for a channel; since, when set, asks for the messages
// after that id (recovery after a reconnect).
func wsURL(base *url.URL, channel string, since messageID) string {
	u := *base
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	default:
		u.Scheme = "ws"
	}
	u.Path = chatWSPath
	q := url.Values{"channel": {channel}}
	if since != "" {
		q.Set("since", string(since))
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// parseFrames splits one WebSocket text message into its JSON objects: the server may
// put several in one message, one per line.
func parseFrames(data []byte) ([]frame, error) {
	var out []frame
	for _, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var f frame
		if err := json.Unmarshal(line, &f); err != nil {
			return nil, fmt.Errorf("frame %q: %w", line, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// messageID is a message id as the server writes it: a JSON number (or, tolerated, a
// string). It is kept as text because the checks only compare ids and send them back.
type messageID string

func (id *messageID) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" {
		*id = ""
		return nil
	}
	if strings.HasPrefix(s, `"`) {
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return err
		}
		*id = messageID(str)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("message id %s: %w", s, err)
	}
	*id = messageID(n.String())
	return nil
}
