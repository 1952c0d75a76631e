// Package web is the chat's browser client: one page of plain HTML, CSS and
// JavaScript, embedded in the binary; Mount serves it at /.
package web

import (
	"bytes"
	"embed"
	"html"
	"io/fs"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
)

// FS holds index.html, app.js, moderation.js and style.css.
//
//go:embed index.html app.js moderation.js style.css
var FS embed.FS

// csp lets the page load only its own files and open WebSockets to where it
// came from; frame-ancestors keeps it out of other sites' frames, but for
// the embedding sites Options names.
const csp = "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; frame-ancestors "

// Options configure the page.
type Options struct {
	// EmbedOrigins are the sites (scheme://host[:port], CHAT_EMBED_ORIGINS)
	// that may frame the page and hand it a platform token by postMessage.
	// Without any, the page may not be framed and takes tokens posted by
	// its own origin only.
	EmbedOrigins []string
}

// embedMeta is where index.html lists the embedding origins for app.js.
var embedMeta = []byte(`<meta name="chat-embed-origins" content="">`)

// Mount serves the client on e: / and its assets, all with relative links
// so the page works under a proxy's path prefix (/chat/). It is apart from
// live delivery (internal/realtime), which only speaks the WebSocket
// protocol the page uses.
// Each answers HEAD as it answers GET, as the library's routes do.
func Mount(e *gin.Engine, opts Options) {
	getHead := []string{http.MethodGet, http.MethodHead}
	ancestors := "'none'"
	page := read("index.html")
	if len(opts.EmbedOrigins) > 0 {
		ancestors = strings.Join(opts.EmbedOrigins, " ")
		list := `<meta name="chat-embed-origins" content="` + html.EscapeString(ancestors) + `">`
		page = bytes.Replace(page, embedMeta, []byte(list), 1)
	}
	e.Match(getHead, "/", serve(page, "text/html; charset=utf-8", csp+ancestors))
	e.Match(getHead, "/app.js", serve(read("app.js"), "text/javascript; charset=utf-8", ""))
	e.Match(getHead, "/moderation.js", serve(read("moderation.js"), "text/javascript; charset=utf-8", ""))
	e.Match(getHead, "/style.css", serve(read("style.css"), "text/css; charset=utf-8", ""))
}

func read(name string) []byte {
	b, err := fs.ReadFile(FS, name)
	if err != nil {
		panic("web: embedded client lacks " + name)
	}
	return b
}

func serve(b []byte, contentType, policy string) gin.HandlerFunc {
	return func(c *gin.Context) {
		// no-cache: a new release's page and script must not mix with an
		// old cached one.
		c.Header("Cache-Control", "no-cache")
		c.Header("X-Content-Type-Options", "nosniff")
		if policy != "" {
			c.Header("Content-Security-Policy", policy)
		}
		c.Header("Content-Length", strconv.Itoa(len(b))) // for a HEAD too
		c.Data(http.StatusOK, contentType, b)
	}
}
