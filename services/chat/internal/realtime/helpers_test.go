package realtime_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/jwtauth"
	"github.com/apistack/platform/libs/apiserver/redisconn"
	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/libs/apiserver/testkit"
	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/httpapi"
	"github.com/apistack/platform/services/chat/internal/jwtidentity"
	"github.com/apistack/platform/services/chat/internal/memory"
	"github.com/apistack/platform/services/chat/internal/realtime"
	"github.com/apistack/platform/services/chat/internal/realtime/redispresence"
	"github.com/apistack/platform/services/chat/internal/redisstore"
)

const adminToken = "admin-token-0123456789"

// wait bounds every event wait: generous, as the machine is shared.
const wait = 30 * time.Second

func TestMain(m *testing.M) {
	// go-redis logs every failed dial; the tests that stop Redis expect them.
	testkit.QuietRedis()
	os.Exit(m.Run())
}

// replica is one chat process: its own apiserver, Service, engine and Hub.
type replica struct {
	t     *testing.T
	srv   *apiserver.Server[chat.User]
	svc   *chat.Service
	hub   *realtime.Hub
	store chat.Store
	base  string
	admin chat.User
}

// engine is what a storage engine gives a replica: its store and its feed.
type engine interface {
	chat.Store
	chat.FeedSource
}

type replicaConfig struct {
	redisURL   string // empty: memory engine
	store      engine
	history    int
	publicRead bool
	cors       string
	opts       realtime.Options
	register   func(*apiserver.Server[chat.User], *chat.Service) // more routes: the REST API, the page
	env        map[string]string                                 // extra server environment (TRUSTED_PROXIES...)
	identities *jwtauth.Verifier                                 // platform tokens (nil: chat tokens only)
	now        func() time.Time                                  // the service clock (nil: the wall clock)
}

var prefixN atomic.Int64

// testPrefix keeps each test's keys apart on a shared Redis.
func testPrefix() string { return fmt.Sprintf("rt%d:", prefixN.Add(1)) }

func startReplica(t *testing.T, cfg replicaConfig, prefix string) *replica {
	t.Helper()
	if cfg.history == 0 {
		cfg.history = 1000
	}
	// The order of cmd/chat: the connection, then everything on it.
	var rdb redis.UniversalClient
	if cfg.redisURL != "" {
		var err error
		if rdb, err = redisconn.Open(cfg.redisURL); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rdb.Close() })
	}
	store := cfg.store
	if store == nil {
		if rdb != nil {
			rs := redisstore.New(rdb, redisstore.Options{History: cfg.history, Prefix: prefix})
			// As cmd/chat does: the engine's repair runs beside the hub.
			ctx, stop := context.WithCancel(context.Background())
			repaired := make(chan struct{})
			go func() { defer close(repaired); rs.RepairPending(ctx) }()
			t.Cleanup(func() { stop(); <-repaired })
			store = rs
		} else {
			store = memory.New(cfg.history)
		}
	}
	svc := chat.NewService(store, chat.Options{PublicRead: cfg.publicRead, Logger: testkit.Logger(), Identities: jwtidentity.New(cfg.identities), Now: cfg.now})
	admin, err := svc.Bootstrap(context.Background(), adminToken)
	if err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	env := map[string]string{"PORT": "0"}
	for k, v := range cfg.env {
		env[k] = v
	}
	srv, err := apiserver.New(apiserver.Config[chat.User]{
		Getenv:         func(k string) string { return env[k] },
		Logger:         testkit.Logger(),
		Redis:          rdb,
		RateLimitAllow: []string{"127.0.0.0/8"},
		CORSOrigin:     cfg.cors,
		TokenValidator: httpapi.NewAuthenticator(svc).Validate, // for the REST API, when registered
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := cfg.opts
	opts.KeyPrefix = prefix
	if opts.Presence == nil && rdb != nil {
		opts.Presence = redispresence.New(rdb, prefix, 0)
	}
	if cfg.register != nil {
		cfg.register(srv, svc)
	}
	hub, err := realtime.Mount(srv, svc, realtime.Sources{Feed: store, Users: store}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	r := &replica{t: t, srv: srv, svc: svc, hub: hub, store: store, base: "http://" + srv.Addr(), admin: admin}
	t.Cleanup(func() { r.stop() })
	return r
}

func (r *replica) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_ = r.srv.Stop(ctx)
}

// user creates a user of role and returns it with its token.
func (r *replica) user(role chat.Role, name string) (chat.User, string) {
	r.t.Helper()
	u, tok, err := r.svc.CreateUser(context.Background(), r.admin, chat.CreateUserInput{Name: name, Role: role})
	if err != nil {
		r.t.Fatalf("create user %s: %v", name, err)
	}
	return u, tok
}

// event is any server frame object.
type event struct {
	Type       string          `json:"type"`
	Channel    string          `json:"channel"`
	Cursor     chat.Cursor     `json:"cursor"`
	LastID     chat.Cursor     `json:"last_id"`
	Recovered  bool            `json:"recovered"`
	Count      int             `json:"count"`
	Code       string          `json:"code"`
	Status     int             `json:"status"`
	Reason     string          `json:"reason"`
	ID         json.RawMessage `json:"id"`
	Raw        json.RawMessage `json:"message"`
	Moderation *chat.Moderation
	Reply      *chat.Message `json:"reply"`
	User       *chat.UserRef `json:"user"`
	Replayed   bool          `json:"replayed"`
	// Held, Shield, Consequence: moderation (a held send's ack, a
	// shield_mode event, a refusing filter's error).
	Held        *chat.HeldMessage  `json:"held"`
	Shield      *chat.ShieldChange `json:"shield"`
	Consequence *chat.Consequence  `json:"consequence"`
}

func (e event) msg(t *testing.T) chat.Message {
	t.Helper()
	var m chat.Message
	if err := json.Unmarshal(e.Raw, &m); err != nil {
		t.Fatalf("%s frame without a message: %s", e.Type, e.Raw)
	}
	return m
}

// client is a test WebSocket subscriber.
type client struct {
	t      *testing.T
	ws     *websocket.Conn
	events chan event // hello, channel events
	acks   chan event // ack, error, pong
	pres   chan int
	closed chan struct{}
	err    error // why the read loop ended, valid after closed
	frames atomic.Int64
	mu     sync.Mutex
	reqID  int
}

func dial(t *testing.T, base, query string, header http.Header) *client {
	t.Helper()
	c, resp, err := tryDial(t, base, query, header)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial %s?%s: %v (status %d)", base, query, err, status)
	}
	return c
}

func tryDial(t *testing.T, base, query string, header http.Header) (*client, *http.Response, error) {
	t.Helper()
	return tryDialWith(t, base, query, &websocket.DialOptions{HTTPHeader: header})
}

func tryDialWith(t *testing.T, base, query string, opts *websocket.DialOptions) (*client, *http.Response, error) {
	t.Helper()
	url := strings.Replace(base, "http://", "ws://", 1) + realtime.WSPath + "?" + query
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, url, opts)
	if err != nil {
		return nil, resp, err
	}
	ws.SetReadLimit(1 << 20)
	c := &client{t: t, ws: ws, events: make(chan event, 100000), acks: make(chan event, 1000), pres: make(chan int, 1000), closed: make(chan struct{})}
	go c.read()
	t.Cleanup(func() { ws.CloseNow() })
	return c, resp, nil
}

func (c *client) read() {
	defer close(c.closed)
	for {
		_, data, err := c.ws.Read(context.Background())
		if err != nil {
			c.err = err
			return
		}
		c.frames.Add(1)
		for line := range bytes.SplitSeq(data, []byte{'\n'}) {
			var e event
			if err := json.Unmarshal(line, &e); err != nil {
				c.err = fmt.Errorf("bad line %q: %w", line, err)
				return
			}
			switch e.Type {
			case "ack", "error", "pong":
				c.acks <- e
			case "presence":
				c.pres <- e.Count
			default:
				c.events <- e
			}
		}
	}
}

func (c *client) next() event {
	c.t.Helper()
	select {
	case e := <-c.events:
		return e
	case <-c.closed:
		c.t.Fatalf("connection closed while waiting for an event: %v", c.err)
	case <-time.After(wait):
		c.t.Fatal("no event in time")
	}
	return event{}
}

func (c *client) hello() event {
	c.t.Helper()
	e := c.next()
	if e.Type != "hello" {
		c.t.Fatalf("first frame %q, want hello", e.Type)
	}
	return e
}

// messages reads n message events and returns their messages.
func (c *client) messages(n int) []chat.Message {
	c.t.Helper()
	out := make([]chat.Message, 0, n)
	for len(out) < n {
		e := c.next()
		if e.Type != string(chat.EventMessage) {
			continue
		}
		out = append(out, e.msg(c.t))
	}
	return out
}

// request writes a client frame and waits for its ack or error.
func (c *client) request(v map[string]any) event {
	c.t.Helper()
	c.mu.Lock()
	c.reqID++
	id := c.reqID
	c.mu.Unlock()
	v["id"] = id
	b, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageText, b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
	for {
		select {
		case e := <-c.acks:
			if string(e.ID) == fmt.Sprint(id) {
				return e
			}
		case <-c.closed:
			c.t.Fatalf("connection closed while waiting for the answer to %v: %v", v, c.err)
		case <-time.After(wait):
			c.t.Fatalf("no answer to %v", v)
		}
	}
}

func (c *client) auth(token string) event {
	return c.request(map[string]any{"type": "auth", "token": token})
}

func (c *client) send(text string) event {
	return c.request(map[string]any{"type": "send", "message": text})
}

// waitClosed waits for the server to close the connection and returns
// the close code (-1 without a close frame).
func (c *client) waitClosed() websocket.StatusCode {
	c.t.Helper()
	select {
	case <-c.closed:
	case <-time.After(wait):
		c.t.Fatal("connection still open")
	}
	return websocket.CloseStatus(c.err)
}

// waitPresence waits for a presence frame with count n.
func (c *client) waitPresence(n int) {
	c.t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case got := <-c.pres:
			if got == n {
				return
			}
		case <-c.closed:
			c.t.Fatalf("closed while waiting for presence %d: %v", n, c.err)
		case <-deadline:
			c.t.Fatalf("presence never reached %d", n)
		}
	}
}

func redisServer(t *testing.T, args ...string) *redistest.Server {
	return redistest.Start(t, args...)
}

// rawUpgrade completes a WebSocket handshake over plain TCP and returns
// the connection, reading nothing more.
func rawUpgrade(t *testing.T, base, query string) net.Conn {
	t.Helper()
	addr := strings.TrimPrefix(base, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	req := "GET " + realtime.WSPath + "?" + query + " HTTP/1.1\r\nHost: " + addr +
		"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 16), nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %v %v", resp, err)
	}
	return conn
}

// rawStuckClient completes a WebSocket handshake over plain TCP and then
// never reads: the server's writes back up into the socket buffers.
func rawStuckClient(t *testing.T, base, query string) net.Conn {
	t.Helper()
	conn := rawUpgrade(t, base, query)
	_ = conn.SetReadDeadline(time.Time{})
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	return conn
}
