package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/apistack/platform/services/chat/web"
)

// TestMountServesThePageAndItsAssets: each file answers 200 with its type,
// no-cache and nosniff, and the page carries its Content-Security-Policy.
func TestMountServesThePageAndItsAssets(t *testing.T) {
	gin.SetMode(gin.TestMode)
	e := gin.New()
	web.Mount(e)
	srv := httptest.NewServer(e)
	defer srv.Close()
	for _, c := range []struct{ path, ctype, body string }{
		{"/", "text/html", "<html"},
		{"/app.js", "text/javascript", "WebSocket"},
		{"/style.css", "text/css", "{"},
	} {
		resp, err := http.Get(srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), c.ctype) {
			t.Errorf("GET %s = %d %q, want 200 %s", c.path, resp.StatusCode, resp.Header.Get("Content-Type"), c.ctype)
		}
		if !strings.Contains(strings.ToLower(string(b)), strings.ToLower(c.body)) {
			t.Errorf("GET %s: body lacks %q", c.path, c.body)
		}
		if resp.Header.Get("Cache-Control") != "no-cache" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: headers %v", c.path, resp.Header)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); (c.path == "/") != strings.Contains(csp, "default-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q", c.path, csp)
		}
	}
}

// TestHeadAnswersAsGetDoes: HEAD on the page and its assets answers what
// GET does (status, type, length and the other headers) without the body,
// where it answered 405.
func TestHeadAnswersAsGetDoes(t *testing.T) {
	gin.SetMode(gin.TestMode)
	e := gin.New()
	e.HandleMethodNotAllowed = true // as the server library's engine does
	web.Mount(e)
	srv := httptest.NewServer(e)
	defer srv.Close()
	for _, path := range []string{"/", "/app.js", "/style.css"} {
		get, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(io.LimitReader(get.Body, 1<<20))
		get.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		head, err := http.Head(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		rest, _ := io.ReadAll(head.Body)
		head.Body.Close()
		if head.StatusCode != http.StatusOK || len(rest) != 0 {
			t.Fatalf("HEAD %s = %d with %d body bytes, want 200 and no body", path, head.StatusCode, len(rest))
		}
		if head.ContentLength != int64(len(body)) || get.ContentLength != int64(len(body)) {
			t.Errorf("%s: Content-Length %d on HEAD, %d on GET, want %d", path, head.ContentLength, get.ContentLength, len(body))
		}
		for _, h := range []string{"Content-Type", "Cache-Control", "X-Content-Type-Options", "Content-Security-Policy"} {
			if head.Header.Get(h) != get.Header.Get(h) {
				t.Errorf("%s: %s %q on HEAD, %q on GET", path, h, head.Header.Get(h), get.Header.Get(h))
			}
		}
	}
}
