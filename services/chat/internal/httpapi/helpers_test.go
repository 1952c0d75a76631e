package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/openapitest"
	"github.com/apistack/platform/libs/apiserver/redisconn"
	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/libs/apiserver/testkit"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/httpapi"
	"github.com/apistack/platform/services/chat/internal/memory"
	"github.com/apistack/platform/services/chat/internal/redisstore"
	"github.com/apistack/platform/services/chat/internal/webhooks"
	"github.com/apistack/platform/services/chat/internal/webhooks/memq"
)

const adminToken = "admin-token-0123456789abcdef"

// engine is where a stack keeps its state: memory, or a real redis-server
// (every stack on it gets its own key prefix unless it shares one on purpose).
type engine struct {
	name  string
	redis *redistest.Server
}

var prefixSeq atomic.Int64

// engines runs f against every engine: the behaviour suite is one suite.
func engines(t *testing.T, f func(t *testing.T, e engine)) {
	t.Helper()
	t.Run("memory", func(t *testing.T) { f(t, engine{name: "memory"}) })
	t.Run("redis", func(t *testing.T) { f(t, engine{name: "redis", redis: redistest.Start(t)}) })
}

// newClock is the service clock: tests step it instead of sleeping through
// cooldowns, slow mode and timeouts.
func newClock() *testkit.Clock { return testkit.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)) }

type stackOptions struct {
	privateRead bool
	sendLimit   chat.SendLimit
	prefix      string // Redis key prefix; empty for a fresh one
	clock       *testkit.Clock
	// storeHook, with a Redis engine, gives the store a client of its own
	// with this hook (the HTTP server keeps the shared one), so a test sees
	// exactly the engine's commands.
	storeHook redis.Hook
	limits    chat.Limits
}

// stack is one chat service instance: the library server with the API
// registered, served over real HTTP on loopback.
type stack struct {
	t     *testing.T
	URL   string
	Clock *testkit.Clock
	Svc   *chat.Service
	srv   *apiserver.Server[chat.User]
	// client checks every answer against the service's own document, so
	// every test using the stack is also a contract test.
	client   *http.Client
	contract *openapitest.Validator
}

func newStack(t *testing.T, e engine, o stackOptions) *stack {
	t.Helper()
	if o.clock == nil {
		o.clock = newClock()
	}
	// The order of cmd/chat: connections, store, service, authenticator,
	// then the HTTP server on the same Redis client.
	var rdb redis.UniversalClient
	var store chat.Store
	if e.redis != nil {
		var err error
		if rdb, err = redisconn.Open(e.redis.URL()); err != nil {
			t.Fatal(err)
		}
		prefix := o.prefix
		if prefix == "" {
			prefix = fmt.Sprintf("t%d:", prefixSeq.Add(1))
		}
		storeClient := rdb
		if o.storeHook != nil {
			if storeClient, err = redisconn.Open(e.redis.URL()); err != nil {
				t.Fatal(err)
			}
			storeClient.AddHook(o.storeHook)
			t.Cleanup(func() { _ = storeClient.Close() })
		}
		store = redisstore.New(storeClient, redisstore.Options{Prefix: prefix})
	} else {
		store = memory.New(chat.DefaultHistory)
	}
	svc := chat.NewService(store, chat.Options{Now: o.clock.Now, PublicRead: !o.privateRead, Logger: testkit.Logger(), SendLimit: o.sendLimit, Limits: o.limits})
	if _, err := svc.Bootstrap(context.Background(), adminToken); err != nil {
		t.Fatal(err)
	}
	srv, err := apiserver.New(apiserver.Config[chat.User]{
		APITitle: "Chat API", APIDescription: httpapi.Description(!o.privateRead), APITags: httpapi.Tags(),
		TokenValidator: httpapi.NewAuthenticator(svc).Validate, RateLimitMax: 1_000_000, Redis: rdb,
		Getenv: func(string) string { return "" }, Logger: testkit.Logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := httpapi.Register(srv, svc); err != nil {
		t.Fatal(err)
	}
	// The webhook endpoints, as cmd/chat declares them (their store is
	// memq's: the endpoints' side only; internal/webhooks tests delivery).
	if err := httpapi.RegisterWebhooks(srv, webhooks.NewManager(memq.New(time.Now), svc, false)); err != nil {
		t.Fatal(err)
	}
	srv.AddReadinessCheck("chat store", svc.Ready) // as cmd/chat: the library checks Redis only failing closed
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		_ = srv.Stop(context.Background())
		_ = store.Close()
		if rdb != nil {
			_ = rdb.Close()
		}
	})
	contract, err := openapitest.FromHandler(srv.Handler())
	if err != nil {
		t.Fatal(err)
	}
	return &stack{t: t, URL: ts.URL, Clock: o.clock, Svc: svc, srv: srv,
		client: &http.Client{Transport: contract.Transport(t, nil)}, contract: contract}
}

// resp is a recorded answer.
type resp struct {
	Status int
	Header http.Header
	Raw    []byte
}

// JSON decodes the body into a generic map.
func (r resp) JSON() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(r.Raw, &m)
	return m
}

func (r resp) String() string { return fmt.Sprintf("%d %s", r.Status, r.Raw) }

// call sends one request; body is JSON-encoded unless it is a string.
func (s *stack) call(method, path, token string, body any) resp {
	s.t.Helper()
	return s.callWith(method, path, token, body, nil)
}

// callWith is call with more request headers.
func (s *stack) callWith(method, path, token string, body any, header http.Header) resp {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		switch b := body.(type) {
		case string:
			rd = strings.NewReader(b)
		default:
			raw, err := json.Marshal(b)
			if err != nil {
				s.t.Fatal(err)
			}
			rd = bytes.NewReader(raw)
		}
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	res, err := s.client.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp{Status: res.StatusCode, Header: res.Header, Raw: raw}
}

// must sends a request and fails the test unless the status is want,
// decoding the body into out when out is not nil.
func (s *stack) must(want int, method, path, token string, body, out any) resp {
	s.t.Helper()
	r := s.call(method, path, token, body)
	if r.Status != want {
		s.t.Fatalf("%s %s: want %d, got %s", method, path, want, r)
	}
	if out != nil {
		if err := json.Unmarshal(r.Raw, out); err != nil {
			s.t.Fatalf("%s %s: decode %s: %v", method, path, r.Raw, err)
		}
	}
	return r
}

var userSeq atomic.Int64

// user creates a user of role (the admin is the only broadcaster) and
// returns it with its token.
func (s *stack) user(role chat.Role) (httpapi.CreatedUser, string) {
	s.t.Helper()
	if role == chat.RoleBroadcaster {
		var me httpapi.User
		s.must(200, "GET", "/api/v1/users/me", adminToken, nil, &me)
		return httpapi.CreatedUser{User: me}, adminToken
	}
	var u httpapi.CreatedUser
	name := fmt.Sprintf("%s_%d", role, userSeq.Add(1))
	s.must(201, "POST", "/api/v1/users", adminToken, map[string]any{"name": name, "role": role}, &u)
	return u, u.Token
}

// send posts a message and returns the decoded answer.
func (s *stack) send(token, channel, text string) httpapi.SentMessage {
	s.t.Helper()
	var m httpapi.SentMessage
	body := map[string]any{"message": text}
	if channel != "" {
		body["channel"] = channel
	}
	s.must(201, "POST", "/api/v1/messages/send", token, body, &m)
	return m
}

// messages reads a page.
func (s *stack) messages(query string) []httpapi.Message {
	s.t.Helper()
	var p httpapi.MessagePage
	s.must(200, "GET", "/api/v1/messages"+query, "", nil, &p)
	return p.Messages
}

// errorBody checks the standard error body and returns it.
func errorBody(t *testing.T, r resp, status int) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("want %d, got %s", status, r)
	}
	m := r.JSON()
	if m == nil || m["statusCode"] != float64(status) || m["error"] != http.StatusText(status) || m["message"] == "" {
		t.Fatalf("not the standard error body: %s", r.Raw)
	}
	return m
}
