package main

// What the driver assumes about chat's API is in this file: the answers it tells apart.
// The protocol itself (paths, bodies, headers, frames) is the chat's Go client's,
// services/chat/client.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	chatclient "github.com/apistack/platform/services/chat/client"
)

const (
	readyPath = "/readyz"

	// reasonOutcomeUnknown is the 503 reason of a send the server could not finish and
	// cannot say whether it stored: retry with the same key.
	reasonOutcomeUnknown = "outcome_unknown"
)

// message is a stored message: a send's 201 body, a history entry, a frame's message.
// The protocol is the chat's Go client's (services/chat/client).
type message = chatclient.Message

// api calls one chat deployment, whose replicas it is given.
type api struct {
	replicas []*url.URL
	token    string
	http     *http.Client
}

// client is the chat's Go client for a replica, with token (the administrator's when
// empty).
func (a *api) client(replica int, token string) *chatclient.Client {
	if token == "" {
		token = a.token
	}
	c := chatclient.New(a.replicas[replica].String(), token)
	c.HTTP = a.http
	return c
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
	u, err := a.client(0, "").CreateUser(ctx, name, role)
	if err != nil {
		return "", fmt.Errorf("create user %s: %w", name, err)
	}
	if u.Token == "" {
		return "", fmt.Errorf("create user %s: no token in the answer", name)
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
	sent, err := a.client(replica, token).Send(ctx, chatclient.SendRequest{Channel: channel, Message: text, IdempotencyKey: key})
	at.answered = time.Now()
	var e *chatclient.Error
	switch {
	case err == nil && sent.Status == http.StatusCreated:
		if sent.Message.ID <= 0 {
			at.outcome = "status 201 without a message"
			return at
		}
		at.outcome, at.msg = "201", sent.Message
	case err == nil:
		at.outcome = "status " + strconv.Itoa(sent.Status) // 202: held for review
	case errors.As(err, &e):
		at.outcome = strconv.Itoa(e.Status)
		if e.Status < 500 && e.Status != http.StatusTooManyRequests {
			at.outcome = "status " + at.outcome
		}
		if e.Reason == reasonOutcomeUnknown {
			at.outcome += " " + reasonOutcomeUnknown
		}
		if e.RetryAfter > 0 {
			at.retry = time.Duration(e.RetryAfter) * time.Second
		}
		at.detail = e.Error()
	case ctx.Err() != nil:
		at.outcome, at.detail = "timeout", err.Error()
	default:
		at.outcome, at.detail = "connection", err.Error()
	}
	return at
}

// history reads a channel's whole log, oldest first (after=0 is the start of the window).
func (a *api) history(ctx context.Context, replica int, channel string) ([]message, error) {
	all, err := a.client(replica, "").AllMessages(ctx, channel, math.MaxInt)
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", channel, err)
	}
	return all, nil
}
