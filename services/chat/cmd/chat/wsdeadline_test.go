package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestWebSocketRouteKeepsDeadlinesUntilAccepted is finding 2 of issue 13 on
// the real server: GET /api/v1/ws announcing a body it never sends was held
// forever, even for a rate-limited client, because the route lifted the read
// deadlines before the limiter and the handshake checks ran.
func TestWebSocketRouteKeepsDeadlinesUntilAccepted(t *testing.T) {
	env := map[string]string{"PORT": freePort(t), "CHAT_ADMIN_TOKEN": "ws-deadline-token-0123456789", "RATE_LIMIT_MAX": "3", "RATE_LIMIT_WINDOW": "1h"}
	addr := serveChat(t, env)
	// The server's read timeout is 30 s; the socket must be closed long before.
	const within = 5 * time.Second
	exchange := func(raw string) string {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, raw); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(within))
		b, err := io.ReadAll(conn)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the server still held the socket after %s; it had answered %q", within, b)
		}
		status, _, _ := strings.Cut(string(b), "\r\n")
		return status
	}
	upgrade := "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	// Counted by the limiter (1 of 3): not a handshake, body announced and never sent.
	if got := exchange("GET /api/v1/ws HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"); got != "HTTP/1.1 426 Upgrade Required" {
		t.Fatalf("not a handshake: %q", got)
	}
	// 2 of 3: a real client upgrades.
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	ws, _, err := websocket.Dial(dctx, "ws://"+addr+"/api/v1/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	ws.CloseNow()
	// 3 of 3, then limited.
	if res, err := http.Get("http://" + addr + "/api/v1/messages"); err == nil {
		res.Body.Close()
	}
	if got := exchange("GET /api/v1/ws HTTP/1.1\r\nHost: x\r\n" + upgrade + "Content-Length: 100\r\n\r\n"); got != "HTTP/1.1 429 Too Many Requests" {
		t.Fatalf("rate-limited handshake with an unsent body: %q", got)
	}
	if _, res, err := websocket.Dial(dctx, "ws://"+addr+"/api/v1/ws", nil); err == nil || res == nil || res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a rate-limited client upgraded: %v %v", res, err)
	}
}
