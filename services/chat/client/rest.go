package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client speaks the chat's REST API and opens its sockets. The zero value
// is not usable: make one with New. A Client is safe for concurrent use;
// change its fields before sharing it.
type Client struct {
	// Base is the service's URL: its root, or the proxy's prefix
	// (https://example.com/chat).
	Base string
	// Token is the bearer token (a chat token or a platform JWT) sent with
	// every request and socket; empty for anonymous reads.
	Token string
	// HTTP does the requests and the socket handshakes (http.DefaultClient
	// when nil).
	HTTP *http.Client
	// MaxBody bounds a REST answer read into memory (default 4 MiB).
	MaxBody int64
}

// New returns a client of the service at base with token (may be empty).
func New(base, token string) *Client {
	return &Client{Base: strings.TrimRight(base, "/"), Token: token}
}

// Error is a REST call's error answer: the service's error body
// ({"statusCode","error","message",...}) and its status.
type Error struct {
	Status  int    `json:"statusCode"`
	Title   string `json:"error"`
	Message string `json:"message"`
	// Reason, RetryAfter, Until, Limit: the fields the service adds where
	// they apply (the send's 429 and 403, the socket limits).
	Reason     string       `json:"reason,omitempty"`
	RetryAfter int          `json:"retry_after_seconds,omitempty"`
	Until      *time.Time   `json:"until,omitempty"`
	Limit      int          `json:"limit,omitempty"`
	Details    []FieldError `json:"details,omitempty"`
	// Header is the answer's headers (Retry-After, X-Served-By...).
	Header http.Header `json:"-"`
}

// FieldError names one field that failed validation.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	s := fmt.Sprintf("chat: %d %s: %s", e.Status, e.Title, e.Message)
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	return s
}

// StatusOf is the HTTP status of a REST error (0 for any other error: the
// request did not get an answer).
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// Answer is what Do read besides the body it decoded.
type Answer struct {
	Status int
	Header http.Header
}

// Do sends one request to path (under Base, e.g. "/api/v1/users") with the
// client's token, body encoded as JSON when not nil, and decodes a 2xx
// answer into out (when not nil). Any other status is an *Error.
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, header http.Header, body, out any) (Answer, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return Answer{}, fmt.Errorf("chat: encode %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	u := c.Base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return Answer{}, err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	limit := c.MaxBody
	if limit <= 0 {
		limit = 4 << 20
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return Answer{Status: resp.StatusCode, Header: resp.Header}, fmt.Errorf("chat: %s %s: read answer: %w", method, path, err)
	}
	if int64(len(b)) > limit {
		return Answer{Status: resp.StatusCode, Header: resp.Header}, fmt.Errorf("chat: %s %s: answer over %d bytes", method, path, limit)
	}
	ans := Answer{Status: resp.StatusCode, Header: resp.Header}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return ans, errorOf(resp, b)
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return ans, fmt.Errorf("chat: %s %s: decode %.200q: %w", method, path, b, err)
		}
	}
	return ans, nil
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// errorOf reads an error answer; a body that is not the service's (a
// proxy's page) keeps the status and a piece of the text.
func errorOf(resp *http.Response, b []byte) error {
	e := &Error{Header: resp.Header}
	if json.Unmarshal(b, e) != nil || e.Status == 0 {
		e = &Error{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode), Message: strings.TrimSpace(string(b[:min(len(b), 200)])), Header: resp.Header}
	}
	e.Status = resp.StatusCode
	if e.RetryAfter == 0 {
		e.RetryAfter, _ = strconv.Atoi(resp.Header.Get("Retry-After"))
	}
	return e
}

// SendRequest is one send.
type SendRequest struct {
	Channel string
	Message string
	// IdempotencyKey makes the send happen once (1..64 of A-Z, a-z, 0-9 and
	// . _ : -): send again with the same key after a timeout or a 503 with
	// reason outcome_unknown. NewIdempotencyKey makes one.
	IdempotencyKey string
}

// Sent is a send's answer: 201 with the stored Message (and the bot's
// Reply), or 202 with Held (nothing stored).
type Sent struct {
	Message Message      `json:"-"`
	Reply   *Message     `json:"reply,omitempty"`
	Held    *HeldMessage `json:"held,omitempty"`
	// Replayed: an earlier send with the same key answered; nothing was
	// stored now.
	Replayed bool        `json:"-"`
	Status   int         `json:"-"`
	Header   http.Header `json:"-"`
}

// Send posts a message. A 201 means stored.
func (c *Client) Send(ctx context.Context, in SendRequest) (*Sent, error) {
	var h http.Header
	if in.IdempotencyKey != "" {
		h = http.Header{"Idempotency-Key": {in.IdempotencyKey}}
	}
	var body struct {
		Message
		Reply *Message     `json:"reply,omitempty"`
		Held  *HeldMessage `json:"held,omitempty"`
	}
	ans, err := c.Do(ctx, http.MethodPost, SendPath, nil, h, SendBody{Message: in.Message, Channel: in.Channel}, &body)
	if err != nil {
		return nil, err
	}
	return &Sent{Message: body.Message, Reply: body.Reply, Held: body.Held, Status: ans.Status, Header: ans.Header,
		Replayed: ans.Header.Get("Idempotent-Replayed") == "true"}, nil
}

// SendRetry sends with one idempotency key (in.IdempotencyKey, or a new
// one), retrying what may be retried (no answer, 503, 409
// idempotency_key_in_use, 429 after its Retry-After) with backoff until ctx
// ends: the message is stored once however many attempts it took.
func (c *Client) SendRetry(ctx context.Context, in SendRequest, b Backoff) (*Sent, error) {
	if in.IdempotencyKey == "" {
		in.IdempotencyKey = NewIdempotencyKey()
	}
	for attempt := 0; ; attempt++ {
		s, err := c.Send(ctx, in)
		if err == nil {
			return s, nil
		}
		wait, retry := retryable(err)
		if !retry || ctx.Err() != nil {
			return nil, err
		}
		wait = max(wait, b.Delay(attempt))
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last attempt: %w)", ctx.Err(), err)
		case <-time.After(wait):
		}
	}
}

// retryable says whether a send may be sent again with the same key, and
// how long the service asked to wait.
func retryable(err error) (time.Duration, bool) {
	var e *Error
	if !errors.As(err, &e) {
		return 0, true // no answer: the outcome is unknown, the key makes it safe
	}
	switch {
	case e.Status == http.StatusServiceUnavailable, e.Status == http.StatusBadGateway, e.Status == http.StatusGatewayTimeout:
		return time.Duration(e.RetryAfter) * time.Second, true
	case e.Status == http.StatusConflict && e.Reason == "idempotency_key_in_use":
		return 0, true
	case e.Status == http.StatusTooManyRequests && e.RetryAfter > 0:
		return time.Duration(e.RetryAfter) * time.Second, true
	}
	return 0, false
}

// Page selects messages of a channel: the latest Limit (1..200, default
// 50), or those before Before, or after After (set AfterSet to read from
// the start with After 0).
type Page struct {
	Limit    int
	Before   int64
	After    int64
	AfterSet bool
}

// MessagePage is a page of a channel, oldest first.
type MessagePage struct {
	Channel  string    `json:"channel"`
	Messages []Message `json:"messages"`
}

// Messages reads a page of channel's history.
func (c *Client) Messages(ctx context.Context, channel string, p Page) (*MessagePage, error) {
	q := url.Values{}
	if channel != "" {
		q.Set("channel", channel)
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Before > 0 {
		q.Set("before", strconv.FormatInt(p.Before, 10))
	}
	if p.AfterSet || p.After > 0 {
		q.Set("after", strconv.FormatInt(p.After, 10))
	}
	var out MessagePage
	_, err := c.Do(ctx, http.MethodGet, MessagesPath, q, nil, nil, &out)
	return &out, err
}

// AllMessages reads every message of channel's history window, oldest
// first, paging with after= (200 at a time) up to max messages.
func (c *Client) AllMessages(ctx context.Context, channel string, max int) ([]Message, error) {
	var all []Message
	var after int64
	for len(all) < max {
		p, err := c.Messages(ctx, channel, Page{Limit: 200, After: after, AfterSet: true})
		if err != nil {
			return all, err
		}
		if len(p.Messages) == 0 {
			return all, nil
		}
		all = append(all, p.Messages...)
		after = p.Messages[len(p.Messages)-1].ID
	}
	return all[:max], nil
}

// DeleteMessage replaces a message by its tombstone (moderators).
func (c *Client) DeleteMessage(ctx context.Context, channel string, id int64) (*Message, error) {
	var m Message
	q := url.Values{}
	if channel != "" {
		q.Set("channel", channel)
	}
	_, err := c.Do(ctx, http.MethodDelete, MessagesPath+"/"+strconv.FormatInt(id, 10), q, nil, nil, &m)
	return &m, err
}

// Account is a user as the REST API shows it.
type Account struct {
	ID               string     `json:"id"`
	Name             string     `json:"name"`
	Role             string     `json:"role"`
	CreatedAt        time.Time  `json:"created_at"`
	TimedOutUntil    *time.Time `json:"timed_out_until,omitempty"`
	Banned           bool       `json:"banned"`
	ModerationReason string     `json:"moderation_reason,omitempty"`
	// Channel: the standing in one channel, on answers about one.
	Channel *Standing `json:"channel,omitempty"`
}

// Standing is a user's role and moderation in one channel.
type Standing struct {
	Name             string     `json:"name"`
	Role             string     `json:"role"`
	GivenRole        string     `json:"given_role,omitempty"`
	TimedOutUntil    *time.Time `json:"timed_out_until,omitempty"`
	Banned           bool       `json:"banned"`
	ModerationReason string     `json:"moderation_reason,omitempty"`
}

// CreatedUser is a new account and its token, shown once.
type CreatedUser struct {
	Account
	Token string `json:"token"`
}

// CreateUser creates an account of role (below the caller's; "" for viewer).
func (c *Client) CreateUser(ctx context.Context, name, role string) (*CreatedUser, error) {
	var out CreatedUser
	body := map[string]string{"name": name}
	if role != "" {
		body["role"] = role
	}
	_, err := c.Do(ctx, http.MethodPost, APIPrefix+"/users", nil, nil, body, &out)
	return &out, err
}

// Me is the caller's account; with a channel, its standing there too.
func (c *Client) Me(ctx context.Context, channel string) (*Account, error) {
	var out Account
	var q url.Values
	if channel != "" {
		q = url.Values{"channel": {channel}}
	}
	_, err := c.Do(ctx, http.MethodGet, APIPrefix+"/users/me", q, nil, nil, &out)
	return &out, err
}

// User reads one account.
func (c *Client) User(ctx context.Context, id string) (*Account, error) {
	var out Account
	_, err := c.Do(ctx, http.MethodGet, APIPrefix+"/users/"+url.PathEscape(id), nil, nil, nil, &out)
	return &out, err
}

// SetRole changes a user's platform-wide role.
func (c *Client) SetRole(ctx context.Context, id, role string) (*Account, error) {
	var out Account
	_, err := c.Do(ctx, http.MethodPatch, APIPrefix+"/users/"+url.PathEscape(id), nil, nil, map[string]string{"role": role}, &out)
	return &out, err
}

// SetChannelRole gives a user a role in one channel.
func (c *Client) SetChannelRole(ctx context.Context, channel, id, role string) (*Account, error) {
	var out Account
	_, err := c.Do(ctx, http.MethodPut, APIPrefix+"/channels/"+url.PathEscape(channel)+"/roles/"+url.PathEscape(id), nil, nil,
		map[string]string{"role": role}, &out)
	return &out, err
}

// RemoveChannelRole takes back the role given in one channel.
func (c *Client) RemoveChannelRole(ctx context.Context, channel, id string) error {
	_, err := c.Do(ctx, http.MethodDelete, APIPrefix+"/channels/"+url.PathEscape(channel)+"/roles/"+url.PathEscape(id), nil, nil, nil, nil)
	return err
}

// Sanction is a timeout's or ban's details; an empty Channel means
// platform-wide.
type Sanction struct {
	Channel string
	Reason  string
	// Duration is a timeout's length (whole seconds, 1 s..14 days).
	Duration time.Duration
}

// Timeout times a user out.
func (c *Client) Timeout(ctx context.Context, id string, s Sanction) (*Account, error) {
	var out Account
	body := map[string]any{"seconds": int(s.Duration / time.Second)}
	if s.Reason != "" {
		body["reason"] = s.Reason
	}
	if s.Channel != "" {
		body["channel"] = s.Channel
	}
	_, err := c.Do(ctx, http.MethodPost, APIPrefix+"/users/"+url.PathEscape(id)+"/timeout", nil, nil, body, &out)
	return &out, err
}

// Ban bans a user.
func (c *Client) Ban(ctx context.Context, id string, s Sanction) (*Account, error) {
	var out Account
	body := map[string]any{}
	if s.Reason != "" {
		body["reason"] = s.Reason
	}
	if s.Channel != "" {
		body["channel"] = s.Channel
	}
	_, err := c.Do(ctx, http.MethodPost, APIPrefix+"/users/"+url.PathEscape(id)+"/ban", nil, nil, body, &out)
	return &out, err
}

// Unban lifts a ban or timeout (in channel, or the platform-wide one).
func (c *Client) Unban(ctx context.Context, id, channel string) (*Account, error) {
	var out Account
	var q url.Values
	if channel != "" {
		q = url.Values{"channel": {channel}}
	}
	_, err := c.Do(ctx, http.MethodDelete, APIPrefix+"/users/"+url.PathEscape(id)+"/ban", q, nil, nil, &out)
	return &out, err
}
