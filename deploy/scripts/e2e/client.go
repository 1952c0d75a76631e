package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	chatclient "github.com/apistack/platform/services/chat/client"
)

// stack talks to the compose stack through the proxy.
type stack struct {
	base    *url.URL
	token   string
	channel string
	http    *http.Client
}

type response struct {
	status   int
	header   http.Header
	body     []byte
	finalURL *url.URL
}

func (s *stack) get(ctx context.Context, path string) (*response, error) {
	return s.do(ctx, http.MethodGet, path, nil, false)
}

func (s *stack) do(ctx context.Context, method, path string, body any, auth bool) (*response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	path, query, _ := strings.Cut(path, "?")
	req, err := http.NewRequestWithContext(ctx, method, s.base.JoinPath(path).String(), rd)
	if err != nil {
		return nil, err
	}
	// JoinPath drops a trailing slash; the services' paths keep theirs. A
	// query stays a query, not part of the path.
	req.URL.Path, req.URL.RawQuery = path, query
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading body: %w", method, path, err)
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: b, finalURL: resp.Request.URL}, nil
}

// getRaw sends rawPath exactly as written (no cleaning, escapes kept) and follows no
// redirect.
func (s *stack) getRaw(ctx context.Context, rawPath string) (*response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base.String(), nil)
	if err != nil {
		return nil, err
	}
	req.URL.Opaque = "//" + s.base.Host + rawPath
	client := *s.http
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading body: %w", rawPath, err)
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: b, finalURL: req.URL}, nil
}

// chat is the chat's Go client through the proxy, as the administrator.
func (s *stack) chat() *chatclient.Client {
	c := chatclient.New(s.base.String()+chatPrefix, s.token)
	c.HTTP = s.http
	return c
}

// send posts a message as the administrator and returns the stored message and the
// replica that stored it.
func (s *stack) send(ctx context.Context, text string) (chatMessage, string, error) {
	sent, err := s.chat().Send(ctx, chatclient.SendRequest{Channel: s.channel, Message: text})
	if err != nil {
		return chatMessage{}, "", err
	}
	if sent.Status != http.StatusCreated || sent.Message.ID == 0 {
		return chatMessage{}, "", fmt.Errorf("send: status %d, want 201 with a stored message", sent.Status)
	}
	return sent.Message, sent.Header.Get(servedByHeader), nil
}

// sendRetry sends until the stack accepts the message or ctx ends: for the moments after
// a replica or Redis went away. One idempotency key covers every attempt, so a send
// whose answer was lost is stored once.
func (s *stack) sendRetry(ctx context.Context, text string) (chatMessage, string, error) {
	key := chatclient.NewIdempotencyKey()
	var last error
	for {
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		sent, err := s.chat().Send(attempt, chatclient.SendRequest{Channel: s.channel, Message: text, IdempotencyKey: key})
		cancel()
		if err == nil && sent.Status == http.StatusCreated {
			return sent.Message, sent.Header.Get(servedByHeader), nil
		}
		if err == nil {
			err = fmt.Errorf("send: status %d, want 201", sent.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return chatMessage{}, "", fmt.Errorf("no 201 before the deadline; last error: %w", last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// wsClient is one WebSocket connection through the proxy. Frames are read by a goroutine
// (a canceled read closes the socket, so waits happen on the channel).
type wsClient struct {
	conn     *chatclient.Conn
	servedBy string
	hello    chatclient.Event
	frames   chan chatclient.Event
	done     chan struct{}
	err      error // set before done is closed
	seen     map[int64]int
}

func (s *stack) dial(ctx context.Context, since chatclient.Cursor) (*wsClient, error) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := s.chat().Dial(dctx, s.channel, chatclient.DialOptions{Since: since})
	if err != nil {
		return nil, err
	}
	c := &wsClient{
		conn:     conn,
		servedBy: conn.Header.Get(servedByHeader),
		hello:    conn.Hello,
		frames:   make(chan chatclient.Event, 1024),
		done:     make(chan struct{}),
		seen:     map[int64]int{},
	}
	go c.read()
	return c, nil
}

func (c *wsClient) read() {
	defer close(c.done)
	for {
		ev, err := c.conn.Next(context.Background())
		if err != nil {
			c.err = err
			return
		}
		c.frames <- ev
	}
}

var errClosed = errors.New("connection closed")

// next returns the next frame, or an error when the connection ends or wait passes.
func (c *wsClient) next(ctx context.Context, wait time.Duration) (chatclient.Event, error) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case f := <-c.frames:
		return f, nil
	default:
	}
	select {
	case f := <-c.frames:
		return f, nil
	case <-c.done:
		select {
		case f := <-c.frames:
			return f, nil
		default:
		}
		return chatclient.Event{}, fmt.Errorf("%w: %v", errClosed, c.err)
	case <-t.C:
		return chatclient.Event{}, fmt.Errorf("no frame within %s", wait)
	case <-ctx.Done():
		return chatclient.Event{}, ctx.Err()
	}
}

// await reads frames until every wanted message id has arrived; other frames are kept
// in seen, so a message delivered twice can be detected.
func (c *wsClient) await(ctx context.Context, wait time.Duration, want ...chatMessage) error {
	deadline := time.Now().Add(wait)
	missing := map[int64]chatMessage{}
	for _, m := range want {
		if c.seen[m.ID] == 0 {
			missing[m.ID] = m
		}
	}
	for len(missing) > 0 {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("messages %v not delivered within %s (client on %s)", ids(missing), wait, c.servedBy)
		}
		f, err := c.next(ctx, left)
		if err != nil {
			return fmt.Errorf("waiting for messages %v (client on %s): %w", ids(missing), c.servedBy, err)
		}
		if f.Type != chatclient.TypeMessage || f.Message == nil {
			continue
		}
		c.seen[f.Message.ID]++
		if w, ok := missing[f.Message.ID]; ok {
			if f.Message.Text != w.Text {
				return fmt.Errorf("message %d arrived with text %q, want %q", w.ID, f.Message.Text, w.Text)
			}
			delete(missing, f.Message.ID)
		}
	}
	return nil
}

func (c *wsClient) close() {
	_ = c.conn.Close()
	c.conn.CloseNow()
}

func ids(m map[int64]chatMessage) []int64 {
	out := make([]int64, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	return out
}

func snippet(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

func (c *wsClient) isClosed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}
