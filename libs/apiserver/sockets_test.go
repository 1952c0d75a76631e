package apiserver_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/testkit"
)

// Issue 13, finding 2: every route keeps the server's read deadlines until
// it has passed the rate limiter and its checks; a WebSocket lives long
// only once its upgrade is accepted. The timeouts are short here so that
// a socket the server fails to close shows within seconds.
const (
	testHeaderTimeout = 1 * time.Second
	testReadTimeout   = 2 * time.Second
)

// socketServer serves /ws (a WebSocket echo, as the chat mounts its own)
// and /poll (a long answer with NoTimeouts) with the given global limit,
// allowing the origin https://example.com, over loopback.
func socketServer(t *testing.T, rateMax int) string {
	t.Helper()
	s, err := apiserver.New(apiserver.Config[struct{}]{
		Getenv:            func(k string) string { return map[string]string{"PORT": "0"}[k] },
		Logger:            testkit.Logger(),
		RateLimitMax:      rateMax,
		RateLimitWindow:   "1h",
		ReadHeaderTimeout: testHeaderTimeout,
		ReadTimeout:       testReadTimeout,
		WriteTimeout:      testReadTimeout,
		CORSOrigin:        "https://example.com",
	})
	if err != nil {
		t.Fatal(err)
	}
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/ws", Status: http.StatusSwitchingProtocols},
		func(c *apiserver.Context[struct{}], _ *struct{}) (apiserver.NoBody, error) {
			if !strings.EqualFold(c.Request.Header.Get("Upgrade"), "websocket") {
				return apiserver.NoBody{}, apiserver.NewError(http.StatusUpgradeRequired, "WebSocket only")
			}
			ws, err := websocket.Accept(c.Writer, c.Request, nil)
			if err != nil {
				return apiserver.NoBody{}, nil // Accept answered
			}
			go func() {
				defer ws.CloseNow()
				for {
					typ, msg, err := ws.Read(context.Background())
					if err != nil || ws.Write(context.Background(), typ, msg) != nil {
						return
					}
				}
			}()
			return apiserver.NoBody{}, nil
		})
	type pollOut struct {
		Waited string `json:"waited"`
	}
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/poll", NoTimeouts: true},
		func(c *apiserver.Context[struct{}], _ *struct{}) (pollOut, error) {
			wait := testReadTimeout + time.Second // past the write deadline
			time.Sleep(wait)
			return pollOut{Waited: wait.String()}, nil
		})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Stop(ctx)
	})
	return s.Addr()
}

const upgradeHeaders = "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"

// exchange writes raw bytes on a fresh connection and reads until the
// server closes it. It gives up after the server's read timeout plus a
// margin: a server that still holds the socket then fails the test.
func exchange(t *testing.T, addr, raw string) (answer string, closedAfter time.Duration) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if raw != "" {
		if _, err := io.WriteString(conn, raw); err != nil {
			t.Fatal(err)
		}
	}
	_ = conn.SetReadDeadline(start.Add(testReadTimeout + 3*time.Second))
	b, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server still held the socket after %s (read %q)", time.Since(start).Round(time.Millisecond), b)
	}
	return string(b), time.Since(start)
}

func statusOf(answer string) string {
	line, _, _ := strings.Cut(answer, "\r\n")
	return line
}

func TestRateLimitedUpgradeIsRefusedAndClosed(t *testing.T) {
	t.Parallel()
	addr := socketServer(t, 1)
	// The one allowed request upgrades and echoes.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Write(ctx, websocket.MessageText, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if _, msg, err := ws.Read(ctx); err != nil || string(msg) != "hi" {
		t.Fatalf("echo: %q %v", msg, err)
	}
	ws.CloseNow()
	// The limit is spent: a real client's upgrade is refused.
	_, resp, err := websocket.Dial(ctx, "ws://"+addr+"/ws", nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a rate-limited upgrade was not refused with 429: %v %v", resp, err)
	}
	// The finding: a rate-limited upgrade announcing a body it never
	// sends. The answer is 429 and the socket is closed, not held.
	answer, after := exchange(t, addr, "GET /ws HTTP/1.1\r\nHost: x\r\n"+upgradeHeaders+"Content-Length: 100\r\n\r\n")
	if got := statusOf(answer); got != "HTTP/1.1 429 Too Many Requests" {
		t.Fatalf("got %q", got)
	}
	t.Logf("rate-limited upgrade with an unsent body: 429, closed after %s", after.Round(time.Millisecond))
}

func TestUnsentBodiesAndSlowClientsAreClosed(t *testing.T) {
	t.Parallel()
	addr := socketServer(t, 1000)
	rows := []struct {
		name, raw, status string
		// within: the server must close before this (0: the read timeout).
		within time.Duration
	}{
		{"not an upgrade, body announced", "GET /ws HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", "HTTP/1.1 426 Upgrade Required", 0},
		{"NoTimeouts route, body announced", "GET /poll HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", "HTTP/1.1 200 OK", testReadTimeout + 2*time.Second}, // the handler takes testReadTimeout+1s
		{"unknown path, body announced", "GET /nope HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", "HTTP/1.1 404 Not Found", 0},
		// A CORS preflight is answered by the middleware, which reads no body:
		// it was held to the read timeout, then closed with no answer.
		{"CORS preflight, body announced", "OPTIONS /ws HTTP/1.1\r\nHost: x\r\nOrigin: https://example.com\r\nAccess-Control-Request-Method: GET\r\nContent-Length: 100\r\n\r\n", "HTTP/1.1 204 No Content", testHeaderTimeout},
		{"CORS preflight refused, body announced", "OPTIONS /ws HTTP/1.1\r\nHost: x\r\nOrigin: https://evil.example\r\nAccess-Control-Request-Method: GET\r\nContent-Length: 100\r\n\r\n", "HTTP/1.1 403 Forbidden", testHeaderTimeout},
		{"half-open: connects, sends nothing", "", "", testHeaderTimeout + time.Second},
		{"slowloris: headers never end", "GET /ws HTTP/1.1\r\nHost: x\r\nX-a: b\r\n", "", testHeaderTimeout + time.Second},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			answer, after := exchange(t, addr, r.raw)
			if got := statusOf(answer); got != r.status {
				t.Fatalf("got %q, want %q", got, r.status)
			}
			within := r.within
			if within == 0 {
				within = testReadTimeout + time.Second
			}
			if after > within {
				t.Fatalf("closed after %s, want within %s", after, within)
			}
			t.Logf("closed after %s", after.Round(time.Millisecond))
		})
	}
}

func TestAcceptedConnectionsOutliveTheDeadlines(t *testing.T) {
	t.Parallel()
	addr := socketServer(t, 1000)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	// A WebSocket idle past the read and write timeouts still echoes: the
	// accepted upgrade (hijack) lifted them.
	ws, _, err := websocket.Dial(ctx, "ws://"+addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	time.Sleep(testReadTimeout + time.Second)
	if err := ws.Write(ctx, websocket.MessageText, []byte("still here")); err != nil {
		t.Fatal(err)
	}
	if _, msg, err := ws.Read(ctx); err != nil || string(msg) != "still here" {
		t.Fatalf("after the deadlines: %q %v", msg, err)
	}
	// A NoTimeouts answer that takes longer than the write timeout
	// arrives whole: the route lifted the deadlines after its checks.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "GET /poll HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "waited") {
		t.Fatalf("long poll: %d %q", resp.StatusCode, body)
	}
}
