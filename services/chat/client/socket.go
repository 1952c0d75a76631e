package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// Conn is one WebSocket to one channel, after its hello: the low-level
// API (no reconnection). Next reads the events; Subscribe is what most
// readers want instead.
type Conn struct {
	ws *websocket.Conn
	// Hello is the socket's first frame: the channel's cursor (LastID),
	// whether since was recovered, the user, the replica.
	Hello Event
	// Header is the handshake answer's headers (X-Served-By behind the
	// platform's proxy).
	Header http.Header
	queue  []Event
}

// DialOptions tune one socket.
type DialOptions struct {
	// Since resumes after this cursor: every event after it is replayed
	// (Hello.Recovered), then live ones.
	Since Cursor
	// Token replaces the client's for this socket when set. It is sent in
	// the handshake (Authorization), so the socket counts as its user's
	// from the start.
	Token string
	// ReadLimit bounds one frame (default 1 MiB; the server's frames are
	// smaller).
	ReadLimit int64
}

// DialError is a socket that could not be opened (no answer, a refused
// handshake: Err is then an *Error with the status, or no hello); OnDrop
// tells it from a socket that ended.
type DialError struct {
	URL string
	Err error
}

func (e *DialError) Error() string { return "chat: dial " + e.URL + ": " + e.Err.Error() }
func (e *DialError) Unwrap() error { return e.Err }

// Dial opens a socket to channel on the client's Base and reads its hello.
func (c *Client) Dial(ctx context.Context, channel string, o DialOptions) (*Conn, error) {
	return c.dial(ctx, c.Base, channel, o)
}

func (c *Client) dial(ctx context.Context, base, channel string, o DialOptions) (*Conn, error) {
	u, err := WSURL(base, channel, o.Since)
	if err != nil {
		return nil, err
	}
	tok := o.Token
	if tok == "" {
		tok = c.Token
	}
	h := http.Header{}
	if tok != "" {
		h.Set("Authorization", "Bearer "+tok)
	}
	ws, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: c.httpClient(), HTTPHeader: h})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			var b []byte
			if resp.Body != nil {
				b = make([]byte, 1024)
				n, _ := resp.Body.Read(b)
				b = b[:n]
			}
			return nil, &DialError{URL: u, Err: errorOf(resp, b)}
		}
		return nil, &DialError{URL: u, Err: err}
	}
	limit := o.ReadLimit
	if limit <= 0 {
		limit = 1 << 20
	}
	ws.SetReadLimit(limit)
	cn := &Conn{ws: ws, Header: resp.Header}
	ev, err := cn.Next(ctx)
	if err != nil {
		cn.CloseNow()
		return nil, &DialError{URL: u, Err: fmt.Errorf("waiting for hello: %w", err)}
	}
	if ev.Type != TypeHello {
		cn.CloseNow()
		return nil, &DialError{URL: u, Err: fmt.Errorf("first frame is %q, want hello", ev.Type)}
	}
	cn.Hello = ev
	return cn, nil
}

// Next returns the next object the server sent. Like every read of
// coder/websocket, a ctx that ends closes the socket.
func (c *Conn) Next(ctx context.Context) (Event, error) {
	for len(c.queue) == 0 {
		typ, data, err := c.ws.Read(ctx)
		if err != nil {
			return Event{}, err
		}
		if typ != websocket.MessageText {
			continue
		}
		if err := ParseFrame(data, func(ev Event) { c.queue = append(c.queue, ev) }); err != nil {
			return Event{}, err
		}
	}
	ev := c.queue[0]
	c.queue[0] = Event{}
	c.queue = c.queue[1:]
	return ev, nil
}

// Write sends one client frame (an object the protocol defines), safe
// alongside Next.
func (c *Conn) Write(ctx context.Context, frame any) error {
	b, err := json.Marshal(frame)
	if err != nil {
		return err
	}
	return c.ws.Write(ctx, websocket.MessageText, b)
}

// Close ends the socket with a normal closure.
func (c *Conn) Close() error { return c.ws.Close(websocket.StatusNormalClosure, "") }

// CloseNow drops the socket without the closing handshake.
func (c *Conn) CloseNow() { _ = c.ws.CloseNow() }

// CloseCode is the close code a socket error carries (-1 when the socket
// ended without a close frame).
func CloseCode(err error) int { return int(websocket.CloseStatus(err)) }

// clientFrame is every client-to-server object.
type clientFrame struct {
	Type           string `json:"type"`
	ID             int64  `json:"id,omitempty"`
	Token          string `json:"token,omitempty"`
	Message        string `json:"message,omitempty"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// SubscribeOptions tune a Subscription.
type SubscribeOptions struct {
	// Since resumes after this cursor on the first connection; empty
	// starts live, at the channel's cursor.
	Since Cursor
	// TokenSource, when set, supplies the token: before the first dial,
	// again when the server refuses or expires the one in use (401, 4001,
	// 4002), and before a platform token's exp, which it renews on the
	// open socket with a refresh frame. Without it the client's Token is
	// used, and a refused token ends the subscription.
	TokenSource func(context.Context) (string, error)
	// RefreshBefore is how long before a platform token's exp it is
	// renewed (default a fifth of its remaining life, at most a minute).
	RefreshBefore time.Duration
	// Backoff spaces reconnections (default DefaultBackoff); a socket
	// that stayed up for Healthy (default 5 s) resets it.
	Backoff Backoff
	Healthy time.Duration
	// Bases, when set, are the URLs to connect to in turn, one per
	// connection (replicas without a balancer in front); default the
	// client's Base.
	Bases []string
	// OnEvent gets every object the server sends but the answers to
	// Send, Refresh and Ping: hello (one per connection: Recovered false
	// after a since means reload history up to LastID), presence, the
	// channel's events, errors. It runs on the subscription's reader:
	// one at a time, in order. A slow OnEvent makes the server drop the
	// socket (4008); the subscription then recovers with since.
	OnEvent func(Event)
	// OnDrop is told why each connection ended or could not be made (a
	// *DialError), before the wait that follows.
	OnDrop func(error)
}

// Subscription reads one channel over as many sockets as it takes:
// when one drops it reconnects with backoff and jitter and since=<the
// last cursor it saw>, so OnEvent sees every event once, in order, as
// long as the server still holds it (else a hello with Recovered false).
// Close codes that say reconnecting cannot help (4003 user deleted, 4029
// too many sockets, 4001 and 4002 without a TokenSource) end it; Err says
// why.
type Subscription struct {
	c       *Client
	channel string
	o       SubscribeOptions
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
	err     error // set before done closes

	mu       sync.Mutex
	cursor   Cursor
	token    string
	conn     *Conn
	pending  map[int64]chan Event
	nextID   int64
	connects int
}

// ErrNotConnected: a request was made while the subscription had no socket.
var ErrNotConnected = errors.New("chat: not connected")

// errSocketEnded: the socket ended before answering; a send's outcome is unknown.
var errSocketEnded = errors.New("chat: socket ended before the answer")

// Subscribe starts reading channel until ctx ends or Close.
func (c *Client) Subscribe(ctx context.Context, channel string, o SubscribeOptions) *Subscription {
	if o.Backoff.Min <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.Healthy <= 0 {
		o.Healthy = 5 * time.Second
	}
	if len(o.Bases) == 0 {
		o.Bases = []string{c.Base}
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Subscription{c: c, channel: channel, o: o, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		cursor: o.Since, token: c.Token, pending: map[int64]chan Event{}}
	go s.run()
	return s
}

// Cursor is the last cursor seen (what the next connection resumes after).
func (s *Subscription) Cursor() Cursor {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cursor
}

// Connects counts the sockets opened so far.
func (s *Subscription) Connects() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connects
}

// Done is closed when the subscription has ended.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Err is why the subscription ended (after Done): the context's error, or
// the refusal that reconnecting cannot overcome.
func (s *Subscription) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Close ends the subscription and waits for its reader.
func (s *Subscription) Close() error {
	s.cancel()
	<-s.done
	return nil
}

func (s *Subscription) run() {
	defer close(s.done)
	attempt, base := 0, 0
	needToken := s.o.TokenSource != nil
	for {
		var err error
		opened := time.Time{}
		if needToken {
			var tok string
			if tok, err = s.o.TokenSource(s.ctx); err == nil {
				s.mu.Lock()
				s.token = tok
				s.mu.Unlock()
				needToken = false
			} else {
				err = fmt.Errorf("chat: token source: %w", err)
			}
		}
		if err == nil {
			s.mu.Lock()
			since, tok := s.cursor, s.token
			s.mu.Unlock()
			var cn *Conn
			if cn, err = s.c.dial(s.ctx, s.o.Bases[base], s.channel, DialOptions{Since: since, Token: tok}); err == nil {
				opened = time.Now()
				err = s.serve(cn, since != "")
			}
		}
		if s.ctx.Err() != nil {
			s.err = s.ctx.Err()
			return
		}
		if s.o.OnDrop != nil {
			s.o.OnDrop(err)
		}
		retry, wait, token := s.verdict(err)
		if !retry {
			s.err = err
			return
		}
		needToken = needToken || token
		base = (base + 1) % len(s.o.Bases)
		if !opened.IsZero() && time.Since(opened) >= s.o.Healthy {
			attempt = 0
		}
		wait = max(wait, s.o.Backoff.Delay(attempt))
		attempt++
		select {
		case <-s.ctx.Done():
			s.err = s.ctx.Err()
			return
		case <-time.After(wait):
		}
	}
}

// verdict says whether to reconnect after err, how long the server asked
// to wait, and whether a new token is needed first.
func (s *Subscription) verdict(err error) (retry bool, wait time.Duration, token bool) {
	canRenew := s.o.TokenSource != nil
	var e *Error
	if errors.As(err, &e) {
		switch e.Status {
		case http.StatusUnauthorized:
			return canRenew, 0, true
		case http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound:
			return false, 0, false
		}
		return true, time.Duration(e.RetryAfter) * time.Second, false
	}
	switch CloseCode(err) {
	case CloseUnauthorized, CloseTokenExpired:
		return canRenew, 0, true
	case CloseUserDeleted, CloseTooManySockets, int(websocket.StatusUnsupportedData), int(websocket.StatusMessageTooBig), int(websocket.StatusPolicyViolation):
		return false, 0, false
	}
	return true, 0, false
}

// serve reads one socket until it ends.
func (s *Subscription) serve(cn *Conn, resumed bool) error {
	hello := cn.Hello
	s.mu.Lock()
	s.connects++
	if !resumed || !hello.Recovered || s.cursor == "" {
		s.cursor = hello.LastID
	}
	s.conn = cn
	tok := s.token
	s.mu.Unlock()
	defer s.drop(cn)
	if s.o.OnEvent != nil {
		s.o.OnEvent(hello)
	}
	if s.o.TokenSource != nil {
		if exp := tokenExpiry(tok); !exp.IsZero() {
			t := time.AfterFunc(s.refreshAt(exp), s.renew)
			defer t.Stop()
		}
	}
	for {
		ev, err := cn.Next(s.ctx)
		if err != nil {
			return err
		}
		if ev.Cursor != "" {
			s.mu.Lock()
			s.cursor = ev.Cursor
			s.mu.Unlock()
		}
		if ev.ID != 0 && (ev.Type == TypeAck || ev.Type == TypeError || ev.Type == TypePong) {
			s.mu.Lock()
			ch := s.pending[ev.ID]
			delete(s.pending, ev.ID)
			s.mu.Unlock()
			if ch != nil {
				ch <- ev
				continue
			}
		}
		if s.o.OnEvent != nil {
			s.o.OnEvent(ev)
		}
	}
}

// drop forgets a socket that ended; its requests fail.
func (s *Subscription) drop(cn *Conn) {
	cn.CloseNow()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == cn {
		s.conn = nil
	}
	for id, ch := range s.pending {
		close(ch)
		delete(s.pending, id)
	}
}

// refreshAt is how long until a token expiring at exp is renewed.
func (s *Subscription) refreshAt(exp time.Time) time.Duration {
	left := time.Until(exp)
	before := s.o.RefreshBefore
	if before <= 0 {
		before = min(left/5, time.Minute)
	}
	return max(left-before, 0)
}

// renew gets a fresh token and hands it to the open socket; when that
// fails the socket closes at exp (4002) and the next one dials with a
// fresh token.
func (s *Subscription) renew() {
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	tok, err := s.o.TokenSource(ctx)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.token = tok
	s.mu.Unlock()
	if err := s.Refresh(ctx, tok); err == nil {
		s.mu.Lock()
		cn := s.conn
		s.mu.Unlock()
		if exp := tokenExpiry(tok); cn != nil && !exp.IsZero() {
			time.AfterFunc(s.refreshAt(exp), func() {
				s.mu.Lock()
				same := s.conn == cn
				s.mu.Unlock()
				if same {
					s.renew()
				}
			})
		}
	}
}

// request writes f on the open socket and waits for its answer.
func (s *Subscription) request(ctx context.Context, f clientFrame) (Event, error) {
	s.mu.Lock()
	cn := s.conn
	if cn == nil {
		s.mu.Unlock()
		return Event{}, ErrNotConnected
	}
	s.nextID++
	f.ID = s.nextID
	ch := make(chan Event, 1)
	s.pending[f.ID] = ch
	s.mu.Unlock()
	forget := func() {
		s.mu.Lock()
		delete(s.pending, f.ID)
		s.mu.Unlock()
	}
	if err := cn.Write(ctx, f); err != nil {
		forget()
		return Event{}, err
	}
	select {
	case ev, ok := <-ch:
		if !ok {
			return Event{}, errSocketEnded
		}
		if ev.Type == TypeError {
			return ev, &Error{Status: ev.Status, Title: ev.Code, Message: ev.ErrorText, Reason: ev.Reason, RetryAfter: ev.RetryAfter}
		}
		return ev, nil
	case <-ctx.Done():
		forget()
		return Event{}, ctx.Err()
	}
}

// Send sends a message to the channel over the open socket and waits for
// its ack: ev.Message (with ev.Reply, ev.Replayed) once stored, ev.Held
// when held for review. A refusal is an *Error as over REST (Title is the
// error frame's code). With a key, a send whose outcome is unknown (the
// socket ended, or 503 outcome_unknown) can be sent again safely.
func (s *Subscription) Send(ctx context.Context, text, idempotencyKey string) (Event, error) {
	return s.request(ctx, clientFrame{Type: typeSend, Message: text, IdempotencyKey: idempotencyKey})
}

// Refresh hands the open socket a fresh platform token for the same user.
func (s *Subscription) Refresh(ctx context.Context, token string) error {
	_, err := s.request(ctx, clientFrame{Type: typeRefresh, Token: token})
	return err
}

// Ping asks the server for a pong: a round trip over the open socket.
func (s *Subscription) Ping(ctx context.Context) error {
	_, err := s.request(ctx, clientFrame{Type: typePing})
	return err
}

// tokenExpiry is a JWT's exp, unverified (the server checks it; the client
// only needs to know when to renew), or zero for any other token.
func tokenExpiry(tok string) time.Time {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return time.Time{}
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}
	}
	var claims struct {
		Exp json.Number `json:"exp"`
	}
	if json.Unmarshal(b, &claims) != nil {
		return time.Time{}
	}
	sec, err := claims.Exp.Float64()
	if err != nil || sec <= 0 {
		return time.Time{}
	}
	return time.Unix(int64(sec), 0)
}
