package apierr_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/testkit"
	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/httpapi"
	"github.com/apistack/platform/services/chat/internal/memory"
	"github.com/apistack/platform/services/chat/internal/realtime"
)

// failing is the memory engine with one failure to inject: the next
// AppendSent (a user's message) returns it, so Service.Send (the path both transports
// take) ends with exactly that domain error.
type failing struct {
	chat.Store
	mu   sync.Mutex
	next error
}

func (f *failing) fail(err error) { f.mu.Lock(); f.next = err; f.mu.Unlock() }

func (f *failing) AppendSent(ctx context.Context, m chat.Message, once chat.Once, w chat.Watch, gates ...chat.Gate) (chat.Message, error) {
	f.mu.Lock()
	err := f.next
	f.next = nil
	f.mu.Unlock()
	if err != nil {
		return chat.Message{}, err
	}
	return f.Store.AppendSent(ctx, m, once, w, gates...)
}

// answer is one transport's answer, reduced to what both must agree on.
type answer struct {
	Status     int
	Message    string
	Extra      map[string]any // every field beyond the standard ones, by name
	Details    []chat.FieldError
	RetryAfter string // header (REST) or retry_after_seconds (frame), "" when none
}

// rig is one chat process: the REST API and live delivery on one server.
type rig struct {
	t     *testing.T
	store *failing
	base  string
	token string
	ws    *websocket.Conn
	id    int
}

func newRig(t *testing.T) *rig {
	t.Helper()
	mem := memory.New(100)
	store := &failing{Store: mem}
	svc := chat.NewService(store, chat.Options{PublicRead: true, Logger: testkit.Logger()})
	admin, err := svc.Bootstrap(context.Background(), "admin-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	_, token, err := svc.CreateUser(context.Background(), admin, chat.CreateUserInput{Name: "viewer"})
	if err != nil {
		t.Fatal(err)
	}
	auth := httpapi.NewAuthenticator(svc)
	env := map[string]string{"PORT": "0"}
	srv, err := apiserver.New(apiserver.Config[chat.User]{TokenValidator: auth.Validate, RateLimitMax: 1_000_000,
		Getenv: func(k string) string { return env[k] }, Logger: testkit.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := httpapi.Register(srv, svc); err != nil {
		t.Fatal(err)
	}
	if _, err := realtime.Mount(srv, svc, realtime.Sources{Feed: mem, Users: store}, realtime.Options{SendRate: 1000, SendBurst: 1000}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Stop(ctx)
	})
	r := &rig{t: t, store: store, base: "http://" + srv.Addr(), token: token}
	r.ws = r.dial(token)
	return r
}

func (r *rig) dial(token string) *websocket.Conn {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.base, "http")+realtime.WSPath,
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		r.t.Fatalf("dial: %v (%v)", err, resp)
	}
	r.t.Cleanup(func() { _ = ws.CloseNow() })
	return ws
}

// rest sends a message with POST /messages/send.
func (r *rig) rest(token, text string) answer {
	r.t.Helper()
	body, _ := json.Marshal(map[string]string{"message": text})
	req, _ := http.NewRequest(http.MethodPost, r.base+"/api/v1/messages/send", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		r.t.Fatal(err)
	}
	a := decode(r.t, raw)
	if a.Status != resp.StatusCode {
		r.t.Fatalf("statusCode %d in a %d answer", a.Status, resp.StatusCode)
	}
	if resp.StatusCode == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") != "Bearer" {
		r.t.Errorf("401 without WWW-Authenticate: Bearer: %v", resp.Header)
	}
	a.RetryAfter = resp.Header.Get("Retry-After")
	return a
}

// frame sends a message in a send frame and returns its error frame.
func (r *rig) frame(typ string, fields map[string]any) answer {
	r.t.Helper()
	r.id++
	f := map[string]any{"type": typ, "id": r.id}
	for k, v := range fields {
		f[k] = v
	}
	b, _ := json.Marshal(f)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.ws.Write(ctx, websocket.MessageText, b); err != nil {
		r.t.Fatal(err)
	}
	for {
		_, data, err := r.ws.Read(ctx)
		if err != nil {
			r.t.Fatalf("%s frame %d: %v", typ, r.id, err)
		}
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			var head struct {
				Type string
				ID   *int
			}
			if json.Unmarshal(line, &head) != nil || head.ID == nil || *head.ID != r.id {
				continue
			}
			if head.Type != "error" {
				r.t.Fatalf("%s frame %d: %s, want an error", typ, r.id, line)
			}
			a := decode(r.t, line)
			if rs, ok := a.Extra["retry_after_seconds"]; ok {
				a.RetryAfter = fmt.Sprint(rs)
			}
			return a
		}
	}
}

// decode reads an error object (a REST body or a frame).
func decode(t *testing.T, raw []byte) answer {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not JSON: %s", raw)
	}
	var a answer
	for _, k := range []string{"statusCode", "status"} {
		if n, ok := m[k].(float64); ok {
			a.Status = int(n)
		}
	}
	a.Message, _ = m["message"].(string)
	if d, ok := m["details"]; ok {
		b, _ := json.Marshal(d)
		if err := json.Unmarshal(b, &a.Details); err != nil {
			t.Fatalf("details %s", b)
		}
	}
	a.Extra = map[string]any{}
	for k, v := range m {
		if k == "message" || k == "details" || k == "statusCode" || k == "status" || k == "error" || k == "type" || k == "id" || k == "code" {
			continue
		}
		a.Extra[k] = v
	}
	return a
}

// TestEveryDomainErrorAnswersAlikeOnBothTransports drives each domain error
// through POST /messages/send and through a WebSocket send frame on one
// server and asserts the same status, message, reason and other fields by
// the same names, the same details (field names included) and the same
// wait; the frame's code is the kind.
func TestEveryDomainErrorAnswersAlikeOnBothTransports(t *testing.T) {
	r := newRig(t)
	until := time.Date(2026, 3, 1, 12, 10, 0, 0, time.UTC)
	cases := []struct {
		name string
		err  error
		want int
	}{
		{"invalid", chat.Invalid("message", "must not be empty"), 400},
		{"unauthorized", &chat.Error{Kind: chat.KindUnauthorized, Message: "user no longer exists"}, 401},
		{"forbidden timed out", &chat.Error{Kind: chat.KindForbidden, Reason: "timed_out", Until: until, Message: "you are timed out"}, 403},
		{"forbidden banned", &chat.Error{Kind: chat.KindForbidden, Reason: "banned", Message: "you are banned"}, 403},
		{"forbidden role", &chat.Error{Kind: chat.KindForbidden, Reason: "send_messages", Message: "your role may not"}, 403},
		{"not found", chat.NotFound("channel"), 404},
		{"conflict", &chat.Error{Kind: chat.KindConflict, Reason: "name", Message: "taken"}, 409},
		{"conflict limit", chat.LimitReached(chat.QuotaChannels, 1000), 409},
		{"history gone", &chat.Error{Kind: chat.KindHistoryGone}, 410},
		{"blocked", &chat.Error{Kind: chat.KindBlocked, Reason: "links", Message: "message blocked by a links filter (f3)"}, 422},
		{"slow mode", &chat.Error{Kind: chat.KindSlowMode, Reason: "slow_mode", RetryAfter: 2500 * time.Millisecond, Message: "slow mode is on: wait 3s"}, 429},
		{"slow mode without reason", &chat.Error{Kind: chat.KindSlowMode, RetryAfter: time.Millisecond}, 429},
		{"send limit", &chat.Error{Kind: chat.KindSlowMode, Reason: chat.ReasonSendLimit, RetryAfter: 4 * time.Second, Message: "too many messages"}, 429},
		{"unavailable", chat.Unavailable("store message", errors.New("dial tcp 10.0.0.7:6379: secret")), 503},
		// A deadline that expired while storing (a WebSocket send's):
		// the store did not answer in time.
		{"deadline", fmt.Errorf("append message: %w", context.DeadlineExceeded), 503},
		// A request whose context ended while storing (its client went
		// away): nobody may be told, but the log must not call it a bug.
		{"canceled", fmt.Errorf("append message: %w", context.Canceled), 503},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r.t = t
			r.store.fail(c.err)
			rest := r.rest(r.token, "hi")
			r.store.fail(c.err)
			ws := r.frame("send", map[string]any{"message": "hi"})
			if rest.Status != c.want || ws.Status != c.want {
				t.Fatalf("status: REST %d, WebSocket %d, want %d", rest.Status, ws.Status, c.want)
			}
			if !reflect.DeepEqual(rest, ws) {
				t.Fatalf("the transports disagree:\n REST      %+v\n WebSocket %+v", rest, ws)
			}
			if strings.Contains(rest.Message, "secret") {
				t.Fatalf("the cause leaks: %q", rest.Message)
			}
			if (c.name == "deadline" || c.name == "canceled") && strings.Contains(rest.Message, "nothing was changed") {
				t.Fatalf("message %q: the write may have been made", rest.Message)
			}
			if c.want == 429 || c.want == 503 {
				if n, err := strconv.Atoi(rest.RetryAfter); err != nil || n < 1 {
					t.Fatalf("Retry-After %q", rest.RetryAfter)
				}
			}
		})
	}
	// The frame's code is the kind, so a client can switch on it.
	r.t = t
	r.store.fail(chat.NotFound("channel"))
	if code := r.rawCode(); code != string(chat.KindNotFound) {
		t.Fatalf("code %q, want not_found", code)
	}
}

// rawCode sends one frame and returns its error frame's code.
func (r *rig) rawCode() string {
	r.t.Helper()
	r.id++
	b, _ := json.Marshal(map[string]any{"type": "send", "message": "hi", "id": r.id})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.ws.Write(ctx, websocket.MessageText, b); err != nil {
		r.t.Fatal(err)
	}
	for {
		_, data, err := r.ws.Read(ctx)
		if err != nil {
			r.t.Fatal(err)
		}
		var f struct {
			ID   *int
			Code string
		}
		if json.Unmarshal(data, &f) == nil && f.ID != nil && *f.ID == r.id {
			return f.Code
		}
	}
}

// TestAnUnknownTokenIs401Everywhere: REST, the WebSocket handshake and the
// WebSocket auth frame refuse an unknown token alike (401, and the same
// message where there is a body to compare).
func TestAnUnknownTokenIs401Everywhere(t *testing.T) {
	r := newRig(t)
	rest := r.rest("chat_unknown", "hi")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.base, "http")+realtime.WSPath,
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer chat_unknown"}}})
	if err == nil || resp == nil {
		t.Fatalf("handshake with an unknown token: %v", err)
	}
	if resp.Body != nil {
		defer resp.Body.Close()
	}
	hs := answer{Status: resp.StatusCode}
	if resp.StatusCode == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") != "Bearer" {
		t.Errorf("handshake 401 without WWW-Authenticate: %v", resp.Header)
	}
	frame := r.frame("auth", map[string]any{"token": "chat_unknown"})
	if rest.Status != 401 || hs.Status != 401 || frame.Status != 401 {
		t.Fatalf("unknown token: REST %d, handshake %d, auth frame %d; want 401 on all", rest.Status, hs.Status, frame.Status)
	}
	if rest.Message != frame.Message {
		t.Fatalf("messages differ: REST %q, auth frame %q", rest.Message, frame.Message)
	}
}
