package main

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestEveryAnswerCarriesNosniff is finding 10 of issue 13 on the chat
// server: every answer, the library's (404, /metrics, /docs), the chat's own
// (the browser page, errors) and the WebSocket route's refusals before the
// upgrade, carries X-Content-Type-Options: nosniff.
func TestEveryAnswerCarriesNosniff(t *testing.T) {
	env := map[string]string{"PORT": freePort(t), "CHAT_ADMIN_TOKEN": "nosniff-test-token-0123456789",
		"CORS_ORIGIN": "https://good.example", "CHAT_WS_MAX_SOCKETS_PER_IP": "1", "RATE_LIMIT_MAX": "40", "RATE_LIMIT_WINDOW": "1h"}
	addr := serveChat(t, env)
	// exchange sends one raw request and reads the answer's head.
	exchange := func(raw string) *http.Response {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Write([]byte(raw)); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%.40q: %v", raw, err)
		}
		res.Body.Close()
		return res
	}
	const handshake = "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	get := func(path, headers string) string {
		return "GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\n" + headers + "\r\n"
	}
	// One socket held, so the next handshake meets CHAT_WS_MAX_SOCKETS_PER_IP.
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	ws, _, err := websocket.Dial(dctx, "ws://"+addr+"/api/v1/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	rows := []struct {
		name, raw string
		status    int
	}{
		{"health", get("/healthz", ""), 200},
		{"metrics", get("/metrics", ""), 200},
		{"docs", get("/docs", ""), 302},
		{"docs page", get("/docs/index.html", ""), 200},
		{"doc.json", get("/docs/doc.json", ""), 200},
		{"openapi", get("/openapi.json", ""), 200},
		{"browser client", get("/", ""), 200},
		{"unknown path", get("/nope", ""), 404},
		{"wrong method", "DELETE /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 405},
		{"messages", get("/api/v1/messages", ""), 200},
		{"bad query", get("/api/v1/messages?limit=0", ""), 400},
		{"no token", "POST /api/v1/filters HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", 401},
		{"preflight", "OPTIONS /api/v1/messages HTTP/1.1\r\nHost: x\r\nOrigin: https://good.example\r\nAccess-Control-Request-Method: GET\r\n\r\n", 204},
		{"ws: not a handshake", get("/api/v1/ws", ""), 426},
		{"ws: bad channel", get("/api/v1/ws?channel=NO!", handshake), 400},
		{"ws: origin not allowed", get("/api/v1/ws", handshake+"Origin: https://evil.example\r\n"), 403},
		{"ws: unknown token", get("/api/v1/ws", handshake+"Authorization: Bearer not-a-known-token\r\n"), 401},
		{"ws: sockets per address", get("/api/v1/ws", handshake), 429},
	}
	for _, r := range rows {
		res := exchange(r.raw)
		if res.StatusCode != r.status {
			t.Errorf("%s: status %d, want %d", r.name, res.StatusCode, r.status)
		}
		if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s (%d): X-Content-Type-Options %q", r.name, res.StatusCode, got)
		}
	}
	// Past the rate limit, the refusal carries it too.
	var res *http.Response
	for range 40 {
		if res = exchange(get("/api/v1/ws", handshake)); res.StatusCode == http.StatusTooManyRequests && res.Header.Get("RateLimit-Remaining") == "0" {
			break
		}
	}
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("rate-limited handshake: %d, X-Content-Type-Options %q", res.StatusCode, res.Header.Get("X-Content-Type-Options"))
	}
}
