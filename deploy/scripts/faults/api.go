package main

// Everything the driver assumes about chat's API is in this file: paths, bodies, headers
// and the answers it tells apart (services/chat/README.md).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

const (
	readyPath    = "/readyz"
	usersPath    = "/api/v1/users"
	sendPath     = "/api/v1/messages/send"
	messagesPath = "/api/v1/messages"
	wsPath       = "/api/v1/ws"

	// idempotencyHeader makes a retried send safe: the server answers a retry with the
	// first attempt's result and stores nothing new.
	idempotencyHeader = "Idempotency-Key"
	// reasonOutcomeUnknown is the 503 reason of a send the server could not finish and
	// cannot say whether it stored: retry with the same key.
	reasonOutcomeUnknown = "outcome_unknown"
	historyPage          = 200
)

// message is a stored message: a send's 201 body, a history entry, a frame's message.
type message struct {
	ID      int64  `json:"id"`
	Channel string `json:"channel"`
	Text    string `json:"text"`
}

// errorBody is the part of chat's error body the driver reads.
type errorBody struct {
	StatusCode int    `json:"statusCode"`
	Message    string `json:"message"`
	Reason     string `json:"reason"`
}

// frame is one JSON object of a WebSocket message (a message may carry several, one per
// line). Cursor is kept as the server wrote it and sent back as since=.
type frame struct {
	Type      string   `json:"type"`
	Cursor    string   `json:"cursor"`
	LastID    string   `json:"last_id"`
	Recovered bool     `json:"recovered"`
	Replica   string   `json:"replica"`
	Message   *message `json:"message"`
}

// api calls one chat deployment, whose replicas it is given.
type api struct {
	replicas []*url.URL
	token    string
	http     *http.Client
}

func newAPI(replicas []string, token string) (*api, error) {
	a := &api{token: token, http: &http.Client{Transport: &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     30 * time.Second,
	}}}
	for _, r := range replicas {
		u, err := url.Parse(strings.TrimSuffix(r, "/"))
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("replica %q: want http://host:port", r)
		}
		a.replicas = append(a.replicas, u)
	}
	if len(a.replicas) == 0 {
		return nil, errors.New("no replica given")
	}
	return a, nil
}

// answer is one HTTP exchange; err is set when no answer came (timeout, connection).
type answer struct {
	status int
	header http.Header
	body   []byte
	err    error
}

func (a *api) do(ctx context.Context, replica int, method, path string, body any, header http.Header) answer {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return answer{err: err}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.replicas[replica].String()+path, rd)
	if err != nil {
		return answer{err: err}
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.token != "" && req.Header.Get("Authorization") == "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	res, err := a.http.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	if err != nil {
		return answer{status: res.StatusCode, err: fmt.Errorf("reading the body: %w", err)}
	}
	return answer{status: res.StatusCode, header: res.Header, body: b}
}

// ready reports whether a replica answers /readyz with 200.
func (a *api) ready(ctx context.Context, replica int) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ans := a.do(ctx, replica, http.MethodGet, readyPath, nil, nil)
	return ans.err == nil && ans.status == http.StatusOK
}

// createUser creates a user with the administrator token and returns its token.
func (a *api) createUser(ctx context.Context, name, role string) (string, error) {
	ans := a.do(ctx, 0, http.MethodPost, usersPath, map[string]string{"name": name, "role": role}, nil)
	if ans.err != nil {
		return "", fmt.Errorf("POST %s: %w", usersPath, ans.err)
	}
	if ans.status != http.StatusCreated {
		return "", fmt.Errorf("POST %s %s: status %d: %s", usersPath, name, ans.status, snippet(ans.body))
	}
	var u struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(ans.body, &u); err != nil || u.Token == "" {
		return "", fmt.Errorf("POST %s %s: no token in %s", usersPath, name, snippet(ans.body))
	}
	return u.Token, nil
}

// sendAttempt is one try of a send, classified.
type sendAttempt struct {
	replica  int
	started  time.Time
	answered time.Time
	outcome  string // "201", "503", "503 outcome_unknown", "429", "timeout", "connection", "status NNN"
	msg      message
	retry    time.Duration // the server's Retry-After, when it gave one
	detail   string
}

func (s sendAttempt) acked() bool { return s.outcome == "201" }

// retryable says whether a well-behaved client sends the same message again (same key):
// the server did not refuse the message itself.
func (s sendAttempt) retryable() bool {
	switch {
	case s.acked():
		return false
	case s.outcome == "timeout", s.outcome == "connection", s.outcome == "429":
		return true
	case strings.HasPrefix(s.outcome, "5"):
		return true
	}
	return false
}

// send posts text to channel as the user of token, with an idempotency key.
func (a *api) send(ctx context.Context, replica int, token, channel, text, key string, timeout time.Duration) sendAttempt {
	at := sendAttempt{replica: replica, started: time.Now()}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	h := http.Header{}
	h.Set("Authorization", "Bearer "+token)
	h.Set(idempotencyHeader, key)
	ans := a.do(ctx, replica, http.MethodPost, sendPath, map[string]string{"channel": channel, "message": text}, h)
	at.answered = time.Now()
	switch {
	case ans.err != nil && ctx.Err() != nil:
		at.outcome, at.detail = "timeout", ans.err.Error()
	case ans.err != nil:
		at.outcome, at.detail = "connection", ans.err.Error()
	case ans.status == http.StatusCreated:
		if err := json.Unmarshal(ans.body, &at.msg); err != nil || at.msg.ID <= 0 {
			at.outcome, at.detail = "status 201 without a message", snippet(ans.body)
			return at
		}
		at.outcome = "201"
	default:
		var e errorBody
		_ = json.Unmarshal(ans.body, &e)
		at.outcome = strconv.Itoa(ans.status)
		if ans.status < 500 && ans.status != http.StatusTooManyRequests {
			at.outcome = "status " + at.outcome
		}
		if e.Reason == reasonOutcomeUnknown {
			at.outcome += " " + reasonOutcomeUnknown
		}
		if s, err := strconv.Atoi(ans.header.Get("Retry-After")); err == nil && s > 0 {
			at.retry = time.Duration(s) * time.Second
		}
		at.detail = snippet(ans.body)
	}
	return at
}

// history reads a channel's whole log, oldest first (after=0 is the start of the window).
func (a *api) history(ctx context.Context, replica int, channel string) ([]message, error) {
	var all []message
	after := int64(0)
	for {
		q := url.Values{"channel": {channel}, "after": {strconv.FormatInt(after, 10)}, "limit": {strconv.Itoa(historyPage)}}
		ans := a.do(ctx, replica, http.MethodGet, messagesPath+"?"+q.Encode(), nil, nil)
		if ans.err != nil {
			return nil, fmt.Errorf("GET %s %s: %w", messagesPath, channel, ans.err)
		}
		if ans.status != http.StatusOK {
			return nil, fmt.Errorf("GET %s %s after %d: status %d: %s", messagesPath, channel, after, ans.status, snippet(ans.body))
		}
		var page struct {
			Messages []message `json:"messages"`
		}
		if err := json.Unmarshal(ans.body, &page); err != nil {
			return nil, fmt.Errorf("GET %s %s: %w", messagesPath, channel, err)
		}
		if len(page.Messages) == 0 {
			return all, nil
		}
		all = append(all, page.Messages...)
		after = page.Messages[len(page.Messages)-1].ID
	}
}

// wsURL is a replica's WebSocket address for channel, resuming after since when set.
func (a *api) wsURL(replica int, channel, since string) string {
	u := *a.replicas[replica]
	u.Scheme = map[string]string{"https": "wss"}[u.Scheme]
	if u.Scheme == "" {
		u.Scheme = "ws"
	}
	u.Path += wsPath
	q := url.Values{"channel": {channel}}
	if since != "" {
		q.Set("since", since)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// parseFrames splits one WebSocket message into its JSON objects, one per line.
func parseFrames(data []byte) ([]frame, error) {
	var out []frame
	for _, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var f frame
		if err := json.Unmarshal(line, &f); err != nil {
			return nil, fmt.Errorf("frame %q: %w", snippet(line), err)
		}
		out = append(out, f)
	}
	return out, nil
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
