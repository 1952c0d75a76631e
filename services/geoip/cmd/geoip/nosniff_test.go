package main

import (
	"bufio"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestEveryAnswerCarriesNosniff is finding 10 of issue 13 on the real geoip
// binary: every answer, the library's (404, 405, /metrics, /docs, the rate
// limit) and geoip's own (records in every format, JSONP, the root index,
// errors, redirects), carries X-Content-Type-Options: nosniff.
func TestEveryAnswerCarriesNosniff(t *testing.T) {
	p := startGeoip(t, map[string]string{"RATE_LIMIT_MAX": "25", "RATE_LIMIT_WINDOW": "1h", "CORS_ORIGIN": "https://good.example"})
	exchange := func(raw string) *http.Response {
		t.Helper()
		conn, err := net.Dial("tcp", p.Addr)
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
	get := func(path string) string { return "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n" }
	rows := []struct {
		name, raw string
		status    int
	}{
		{"health", get("/healthz"), 200},
		{"metrics", get("/metrics"), 200},
		{"docs", get("/docs"), 302},
		{"docs page", get("/docs/index.html"), 200},
		{"doc.json", get("/docs/doc.json"), 200},
		{"openapi", get("/openapi.json"), 200},
		{"root index", get("/"), 200},
		{"unknown path", get("/nope/x/y/z"), 404},
		{"wrong method", "DELETE /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 405},
		{"json", get("/8.8.8.8/json/"), 200},
		{"jsonp", get("/8.8.8.8/jsonp/?callback=f"), 200},
		{"xml", get("/8.8.8.8/xml/"), 200},
		{"csv", get("/8.8.8.8/csv/"), 200},
		{"yaml", get("/8.8.8.8/yaml/"), 200},
		{"one field", get("/8.8.8.8/city/"), 200},
		{"caller", get("/json/"), 200},
		{"redirect", get("/8.8.8.8/json"), 301},
		{"bad address", get("/not-an-ip/json/"), 400},
		{"bad batch", "POST /batch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 3\r\n\r\n[1]", 400},
		{"preflight", "OPTIONS /batch HTTP/1.1\r\nHost: x\r\nOrigin: https://good.example\r\nAccess-Control-Request-Method: POST\r\n\r\n", 204},
		{"preflight refused", "OPTIONS /batch HTTP/1.1\r\nHost: x\r\nOrigin: https://evil.example\r\nAccess-Control-Request-Method: POST\r\n\r\n", 403},
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
	for range 30 {
		if res = exchange(get("/8.8.8.8/json/")); res.StatusCode == http.StatusTooManyRequests {
			break
		}
	}
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("rate-limited: %d, X-Content-Type-Options %q", res.StatusCode, res.Header.Get("X-Content-Type-Options"))
	}
}
