package main

// The chat part of the fault and abuse suite (issue 13): the real binary,
// built once, runs as two replicas on a real redis-server; the tests stop
// Redis and kill replicas under send load and check that every send
// answered 2xx is in the history exactly once and reached live clients,
// then replay the moderation findings against the running process.
// `go test -short` skips them.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/apistack/platform/libs/apiserver/proctest"
	"github.com/apistack/platform/libs/apiserver/redistest"
)

const faultAdminToken = "fault-suite-admin-token-0123456789"

func TestMain(m *testing.M) { os.Exit(proctest.Main(m)) }

// replica is one chat process (built once per test run, without the race
// detector), ready when /readyz answers 200; proctest stops it with SIGTERM
// when the test ends and shows its logs if the test failed.
type replica struct{ *proctest.Process }

func startReplica(t *testing.T, redisURL string, env ...string) *replica {
	t.Helper()
	return startBinary(t, proctest.Build(t, "."), redisURL, env...)
}

// startBinary starts the chat binary bin as one replica on redisURL.
func startBinary(t *testing.T, bin, redisURL string, env ...string) *replica {
	t.Helper()
	vars := append([]string{"REDIS_URL=" + redisURL,
		"CHAT_ADMIN_TOKEN=" + faultAdminToken, "APP_ENV=production", "LOG_LEVEL=warn",
		"RATE_LIMIT_ALLOW=127.0.0.1/32,::1/128", "CHAT_SEND_LIMIT=1000/1s"}, env...)
	return &replica{proctest.Start(t, bin, proctest.Options{Args: []string{"serve"}, Env: vars, ReadyPath: "/readyz"})}
}

var faultClient = &http.Client{Timeout: 5 * time.Second}

// call sends a JSON request and decodes a JSON answer into out (if not nil).
func (r *replica) call(method, path, token string, body any, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, r.Base+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := faultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return res.StatusCode, err
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return res.StatusCode, fmt.Errorf("decode %s: %w", b, err)
		}
	}
	return res.StatusCode, nil
}

type sentText struct {
	ID   int64  `json:"id"`
	Text string `json:"text"`
}

// history reads a whole channel from the start (after=0), page by page.
func (r *replica) history(t *testing.T, channel string) []sentText {
	t.Helper()
	var all []sentText
	after := int64(0)
	for {
		var page struct{ Messages []sentText }
		code, err := r.call("GET", fmt.Sprintf("/api/v1/messages?channel=%s&after=%d&limit=200", channel, after), "", nil, &page)
		if err != nil || code != http.StatusOK {
			t.Fatalf("read history after %d: %d %v", after, code, err)
		}
		if len(page.Messages) == 0 {
			return all
		}
		all = append(all, page.Messages...)
		after = page.Messages[len(page.Messages)-1].ID
	}
}

// load sends unique texts from workers to the replicas in turn until stop
// is closed, and records which were acknowledged (201) and every status.
type load struct {
	acked    sync.Map // text -> id
	nAcked   atomic.Int64
	statuses sync.Map // status (0: no answer) -> *atomic.Int64
	wg       sync.WaitGroup
	stop     chan struct{}
}

func startLoad(reps []*replica, channel string, workers int) *load {
	l := &load{stop: make(chan struct{})}
	for w := 0; w < workers; w++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				text := fmt.Sprintf("w%d-%d", w, i)
				var m sentText
				code, _ := reps[(w+i)%len(reps)].call("POST", "/api/v1/messages/send", faultAdminToken,
					map[string]string{"channel": channel, "message": text}, &m)
				n, _ := l.statuses.LoadOrStore(code, new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
				if code == http.StatusCreated {
					l.acked.Store(text, m.ID)
					l.nAcked.Add(1)
				}
				if code != http.StatusCreated {
					time.Sleep(20 * time.Millisecond) // an outage: do not spin
				}
			}
		}()
	}
	return l
}

func (l *load) halt() { close(l.stop); l.wg.Wait() }

func (l *load) status(code int) int64 {
	n, ok := l.statuses.Load(code)
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}

func (l *load) summary() string {
	var b strings.Builder
	l.statuses.Range(func(k, v any) bool { fmt.Fprintf(&b, "%v:%d ", k, v.(*atomic.Int64).Load()); return true })
	return b.String()
}

// waitAcks waits until at least n more sends have been acknowledged.
func (l *load) waitAcks(t *testing.T, n int64, what string) {
	t.Helper()
	want := l.nAcked.Load() + n
	deadline := time.Now().Add(20 * time.Second)
	for l.nAcked.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d sends acknowledged after 20s (statuses %s)", what, l.nAcked.Load(), want, l.summary())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkExactlyOnce checks that every acknowledged text is in the history
// once, with the id it was acknowledged with, and that no text is twice.
func checkExactlyOnce(t *testing.T, l *load, hist []sentText) {
	t.Helper()
	seen := map[string]int{}
	for _, m := range hist {
		seen[m.Text]++
		if seen[m.Text] > 1 {
			t.Errorf("%q is in the history twice", m.Text)
		}
	}
	missing := 0
	l.acked.Range(func(k, v any) bool {
		if seen[k.(string)] != 1 {
			missing++
			if missing <= 5 {
				t.Errorf("acknowledged %q (id %d) is not in the history", k, v)
			}
		}
		return true
	})
	if missing > 0 {
		t.Fatalf("%d acknowledged sends lost (history %d, acknowledged %d)", missing, len(hist), l.nAcked.Load())
	}
}

// TestFaultRedisRestartUnderLoad stops redis-server (SIGKILL) under send
// load on two replicas and starts it again: sends during the outage answer
// 503 and store nothing claimed, sends resume without restarting the
// replicas, and nothing acknowledged is lost or stored twice.
func TestFaultRedisRestartUnderLoad(t *testing.T) {
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	reps := []*replica{startReplica(t, srv.URL()), startReplica(t, srv.URL())}
	start := time.Now()
	l := startLoad(reps, "faults", 4)
	l.waitAcks(t, 50, "before the outage")
	t.Logf("%v: 50 acknowledged; stopping Redis", time.Since(start).Round(time.Millisecond))
	srv.Stop()
	// Hold the outage until sends answer 503 (the client's retries give up).
	deadline := time.Now().Add(20 * time.Second)
	for l.status(http.StatusServiceUnavailable) < 10 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	before := l.status(http.StatusServiceUnavailable)
	t.Logf("%v: %d answered 503; starting Redis", time.Since(start).Round(time.Millisecond), before)
	srv.Start()
	l.waitAcks(t, 100, "after Redis came back")
	t.Logf("%v: 100 more acknowledged", time.Since(start).Round(time.Millisecond))
	l.halt()
	if before == 0 {
		t.Errorf("no send answered 503 while Redis was down (statuses %s)", l.summary())
	}
	l.statuses.Range(func(k, v any) bool {
		if c := k.(int); c != http.StatusCreated && c != http.StatusServiceUnavailable {
			t.Errorf("status %d answered %d times during the outage; want only 201 and 503", c, v.(*atomic.Int64).Load())
		}
		return true
	})
	checkExactlyOnce(t, l, reps[1].history(t, "faults"))
	t.Logf("statuses %s", l.summary())
}

// wsClient collects the message events of one channel from a replica.
type wsClient struct {
	mu    sync.Mutex
	ids   []int64
	texts map[string]int
}

func dialWS(t *testing.T, r *replica, channel string) *wsClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.Base, "http")+"/api/v1/ws?channel="+channel, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadLimit(1 << 20)
	c := &wsClient{texts: map[string]int{}}
	hello := make(chan struct{})
	go func() {
		defer conn.CloseNow()
		var once sync.Once
		for {
			_, data, err := conn.Read(ctx)
			if err != nil {
				return
			}
			for _, line := range bytes.Split(data, []byte("\n")) {
				var f struct {
					Type    string    `json:"type"`
					Message *sentText `json:"message"`
				}
				if json.Unmarshal(line, &f) != nil {
					continue
				}
				if f.Type == "hello" {
					once.Do(func() { close(hello) })
				}
				if f.Type == "message" && f.Message != nil {
					c.mu.Lock()
					c.ids = append(c.ids, f.Message.ID)
					c.texts[f.Message.Text]++
					c.mu.Unlock()
				}
			}
		}
	}()
	select {
	case <-hello:
	case <-time.After(10 * time.Second):
		t.Fatal("no hello from the replica")
	}
	return c
}

// TestFaultReplicaKilledUnderLoad kills one of two replicas with SIGKILL
// while both take sends: nothing acknowledged by either is lost, and a
// live client of the surviving replica receives every acknowledged
// message exactly once, in order, including those the dead one stored.
func TestFaultReplicaKilledUnderLoad(t *testing.T) {
	srv := redistest.Start(t)
	a, b := startReplica(t, srv.URL()), startReplica(t, srv.URL())
	live := dialWS(t, b, "killed")
	l := startLoad([]*replica{a, b}, "killed", 4)
	l.waitAcks(t, 50, "before the kill")
	a.Kill()
	l.waitAcks(t, 100, "after the kill")
	l.halt()
	if l.status(0) == 0 {
		t.Errorf("no send failed on the killed replica; it was not under load (statuses %s)", l.summary())
	}
	checkExactlyOnce(t, l, b.history(t, "killed"))

	deadline := time.Now().Add(15 * time.Second)
	for {
		live.mu.Lock()
		got := 0
		l.acked.Range(func(k, _ any) bool {
			if live.texts[k.(string)] > 0 {
				got++
			}
			return true
		})
		ids := append([]int64(nil), live.ids...)
		dup := ""
		for text, n := range live.texts {
			if n > 1 {
				dup = text
			}
		}
		live.mu.Unlock()
		if dup != "" {
			t.Fatalf("live client got %q more than once", dup)
		}
		for i := 1; i < len(ids); i++ {
			if ids[i] <= ids[i-1] {
				t.Fatalf("live client got id %d after %d", ids[i], ids[i-1])
			}
		}
		if int64(got) == l.nAcked.Load() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("live client on the surviving replica got %d of %d acknowledged messages", got, l.nAcked.Load())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestFaultModerationFindings replays issue 13's chat findings against
// the running binary: filter evasions, control and invisible characters
// (over HTTP and WebSocket), quotas from the environment, and after=0.
func TestFaultModerationFindings(t *testing.T) {
	srv := redistest.Start(t)
	r := startReplica(t, srv.URL(), "CHAT_MAX_FILTERS=4", "CHAT_MAX_REGEX_FILTERS=1", "CHAT_MAX_COMMANDS=2", "CHAT_MAX_CHANNELS=3")
	var viewer struct{ Token string }
	if code, err := r.call("POST", "/api/v1/users", faultAdminToken, map[string]string{"name": "viewer_one"}, &viewer); code != http.StatusCreated || err != nil {
		t.Fatalf("create viewer: %d %v", code, err)
	}
	for _, f := range []map[string]string{{"kind": "blocked_term", "pattern": "scam"}, {"kind": "links"}} {
		if code, err := r.call("POST", "/api/v1/filters", faultAdminToken, f, nil); code != http.StatusCreated || err != nil {
			t.Fatalf("create filter %v: %d %v", f, code, err)
		}
	}
	type errBody struct {
		StatusCode int
		Message    string
		Reason     string
		Limit      int
		Details    []struct{ Field, Message string }
	}
	send := func(text string) (int, errBody) {
		var e errBody
		code, err := r.call("POST", "/api/v1/messages/send", viewer.Token, map[string]string{"message": text}, &e)
		if err != nil {
			t.Fatalf("send %q: %v", text, err)
		}
		return code, e
	}
	for _, text := range []string{"s\u0441\u0430m", "ѕᴄᴀᴍ", "sc\u3164am", "sc\uffa0am", "sc\u2800am"} {
		if code, e := send(text); code != http.StatusUnprocessableEntity || e.Reason != "blocked_term" {
			t.Errorf("%q: %d %+v, want 422 blocked_term", text, code, e)
		}
	}
	for _, text := range []string{"evil\u3002com", "evil[.]com", "1.2.3.4/x", "evil.tk", "evil.ninja", "xn--80ak6aa92e.com", "ftp://x", "javascript:alert(1)", "data:text/html,x"} {
		if code, e := send(text); code != http.StatusUnprocessableEntity || e.Reason != "links" {
			t.Errorf("%q: %d %+v, want 422 links", text, code, e)
		}
	}
	for _, text := range []string{"sc\x00am", "bell\a", "esc\x1b[2J", "del\x7f", "rlo\u202eexe.txt", "\u200b\u200c\u200d", "\u3164"} {
		if code, e := send(text); code != http.StatusBadRequest || len(e.Details) == 0 || e.Details[0].Field != "body.message" {
			t.Errorf("%q: %d %+v, want 400 on body.message", text, code, e)
		}
	}
	// The same refusals over a WebSocket send.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.Base, "http")+"/api/v1/ws?channel=general",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + viewer.Token}}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	for i, text := range []string{"nul\x00here", "\u200b", "s\u0441\u0430m"} {
		frame, _ := json.Marshal(map[string]any{"type": "send", "message": text, "id": i})
		if err := conn.Write(ctx, websocket.MessageText, frame); err != nil {
			t.Fatal(err)
		}
		want := map[int]int{0: 400, 1: 400, 2: 422}[i]
		for {
			_, data, err := conn.Read(ctx)
			if err != nil {
				t.Fatalf("ws send %q: %v", text, err)
			}
			var f struct {
				Type   string
				ID     *int
				Status int
			}
			if json.Unmarshal(bytes.Split(data, []byte("\n"))[0], &f) != nil || f.ID == nil || *f.ID != i {
				continue
			}
			if f.Type != "error" || f.Status != want {
				t.Errorf("ws send %q: %s", text, data)
			}
			break
		}
	}
	var page struct{ Messages []sentText }
	if code, _ := r.call("GET", "/api/v1/messages?after=0", "", nil, &page); code != http.StatusOK || len(page.Messages) != 0 {
		t.Fatalf("refused sends were stored: %d %+v", code, page.Messages)
	}

	// Quotas from the environment: 409 with the limit and its variable.
	limited := func(path string, body map[string]string, variable string, limit int) {
		t.Helper()
		var e errBody
		code, err := r.call("POST", path, faultAdminToken, body, &e)
		if err != nil || code != http.StatusConflict || e.Reason != "limit" || e.Limit != limit || !strings.Contains(e.Message, variable) {
			t.Errorf("POST %s %v: %d %+v %v, want 409 limit %d naming %s", path, body, code, e, err, limit, variable)
		}
	}
	created := func(path string, body map[string]string) {
		t.Helper()
		if code, err := r.call("POST", path, faultAdminToken, body, nil); code != http.StatusCreated || err != nil {
			t.Fatalf("POST %s %v: %d %v", path, body, code, err)
		}
	}
	created("/api/v1/filters", map[string]string{"kind": "regex", "pattern": "x+y"})
	limited("/api/v1/filters", map[string]string{"kind": "regex", "pattern": "z+y"}, "CHAT_MAX_REGEX_FILTERS", 1)
	created("/api/v1/filters", map[string]string{"kind": "blocked_term", "pattern": "four"})
	limited("/api/v1/filters", map[string]string{"kind": "blocked_term", "pattern": "five"}, "CHAT_MAX_FILTERS", 4)
	created("/api/v1/commands", map[string]string{"command": "one", "response": "1"})
	created("/api/v1/commands", map[string]string{"command": "two", "response": "2"})
	limited("/api/v1/commands", map[string]string{"command": "three", "response": "3"}, "CHAT_MAX_COMMANDS", 2)
	for i := 1; i <= 4; i++ {
		body := map[string]string{"channel": fmt.Sprintf("room%d", i), "message": "hello"}
		if i < 4 {
			created("/api/v1/messages/send", body)
		} else {
			limited("/api/v1/messages/send", body, "CHAT_MAX_CHANNELS", 3)
		}
	}

	// after=0 is the oldest page, not the newest.
	for i := 1; i <= 5; i++ {
		created("/api/v1/messages/send", map[string]string{"channel": "room1", "message": fmt.Sprintf("m%d", i)})
	}
	if code, _ := r.call("GET", "/api/v1/messages?channel=room1&after=0&limit=2", "", nil, &page); code != http.StatusOK ||
		len(page.Messages) != 2 || page.Messages[0].ID != 1 || page.Messages[1].Text != "m1" {
		t.Fatalf("after=0: %d %+v, want the first two messages", code, page.Messages)
	}
}
