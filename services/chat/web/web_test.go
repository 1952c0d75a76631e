package web_test

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
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
	web.Mount(e, web.Options{})
	srv := httptest.NewServer(e)
	defer srv.Close()
	for _, c := range []struct{ path, ctype, body string }{
		{"/", "text/html", "<html"},
		{"/app.js", "text/javascript", "client.js"},
		{"/client.js", "text/javascript", "WebSocket"},
		{"/client.d.ts", "text/plain", "ChatClient"},
		{"/embed.js", "text/javascript", "ChatClient"},
		{"/embed.css", "text/css", "overlay"},
		{"/embed/general", "text/html", "<html"},
		{"/moderation.js", "text/javascript", "setRole"},
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
		if csp := resp.Header.Get("Content-Security-Policy"); (c.path == "/" || strings.HasPrefix(c.path, "/embed/")) != strings.Contains(csp, "default-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q", c.path, csp)
		}
		head, err := http.Head(srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		hb, _ := io.ReadAll(head.Body)
		head.Body.Close()
		if head.StatusCode != http.StatusOK || len(hb) != 0 || head.ContentLength != int64(len(b)) ||
			head.Header.Get("Content-Type") != resp.Header.Get("Content-Type") {
			t.Errorf("HEAD %s = %d, Content-Length %d, %d body bytes, %q; want GET's 200, %d, none, %q", c.path,
				head.StatusCode, head.ContentLength, len(hb), head.Header.Get("Content-Type"), len(b), resp.Header.Get("Content-Type"))
		}
	}
}

// TestEmbedOriginsMayFrameThePage: the listed origins are the page's
// frame-ancestors and reach app.js; without any the page is not framed.
func TestEmbedOriginsMayFrameThePage(t *testing.T) {
	gin.SetMode(gin.TestMode)
	for _, tc := range []struct {
		origins   []string
		ancestors string
		meta      string
	}{
		{nil, "frame-ancestors 'none'", `content=""`},
		{[]string{"https://a.example", "https://b.example:8443"}, "frame-ancestors https://a.example https://b.example:8443", `content="https://a.example https://b.example:8443"`},
	} {
		e := gin.New()
		web.Mount(e, web.Options{EmbedOrigins: tc.origins})
		w := httptest.NewRecorder()
		e.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		if csp := w.Header().Get("Content-Security-Policy"); !strings.HasSuffix(csp, tc.ancestors) {
			t.Errorf("%v: Content-Security-Policy %q", tc.origins, csp)
		}
		if !strings.Contains(w.Body.String(), `<meta name="chat-embed-origins" `+tc.meta+`>`) {
			t.Errorf("%v: page lacks the origins: %s", tc.origins, w.Body.String())
		}
	}
}

// TestPageInsertsNoMarkup: the page's scripts never parse text as HTML
// (every server text goes in as text), and the page has no inline script
// or event handler, which its Content-Security-Policy would block.
func TestPageInsertsNoMarkup(t *testing.T) {
	markup := regexp.MustCompile(`(innerHTML|outerHTML)\s*[:=]|insertAdjacentHTML|document\.write|createContextualFragment|\beval\(|new Function\(`)
	for _, name := range []string{"app.js", "moderation.js", "client.js", "embed.js"} {
		b, err := fs.ReadFile(web.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		if m := markup.Find(b); m != nil {
			t.Errorf("%s inserts markup or runs text: %q", name, m)
		}
	}
	inline := regexp.MustCompile(`(?i)\son[a-z]+\s*=|<script>|<script[^>]*>[^<]|javascript:|\sstyle\s*=`)
	for _, name := range []string{"index.html", "embed.html"} {
		page, err := fs.ReadFile(web.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		if m := inline.Find(page); m != nil {
			t.Errorf("%s has inline script or style: %q", name, m)
		}
	}
}

// TestEmbedRefusesABadChannel: the embed's path names a channel by the
// API's rule; anything else is the error body, 400.
func TestEmbedRefusesABadChannel(t *testing.T) {
	gin.SetMode(gin.TestMode)
	e := gin.New()
	web.Mount(e, web.Options{})
	for _, path := range []string{"/embed/-x", "/embed/" + strings.Repeat("a", 33), "/embed/a%20b"} {
		w := httptest.NewRecorder()
		e.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), `"statusCode":400`) ||
			!strings.Contains(w.Body.String(), `"error":"Bad Request"`) {
			t.Errorf("GET %s = %d %s, want the 400 error body", path, w.Code, w.Body.String())
		}
	}
}
