// Package web is the chat's browser client: one page of plain HTML, CSS and
// JavaScript, embedded in the binary; Mount serves it at /.
package web

import (
	"embed"
	"io/fs"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
)

// FS holds index.html, app.js and style.css.
//
//go:embed index.html app.js style.css
var FS embed.FS

// csp lets the page load only its own files and open WebSockets to where it
// came from; frame-ancestors keeps it out of other sites' frames.
const csp = "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; frame-ancestors 'none'"

// Mount serves the client on e: / and its assets, all with relative links
// so the page works under a proxy's path prefix (/chat/). It is apart from
// live delivery (internal/realtime), which only speaks the WebSocket
// protocol the page uses. Each file answers HEAD as it answers GET, without
// the body (gin routes HEAD only where it is registered: 405 otherwise).
func Mount(e *gin.Engine) {
	for path, file := range map[string]struct{ name, contentType string }{
		"/":          {"index.html", "text/html; charset=utf-8"},
		"/app.js":    {"app.js", "text/javascript; charset=utf-8"},
		"/style.css": {"style.css", "text/css; charset=utf-8"},
	} {
		h := serve(file.name, file.contentType)
		e.GET(path, h)
		e.HEAD(path, h)
	}
}

func serve(name, contentType string) gin.HandlerFunc {
	b, err := fs.ReadFile(FS, name)
	if err != nil {
		panic("web: embedded client lacks " + name)
	}
	return func(c *gin.Context) {
		// no-cache: a new release's page and script must not mix with an
		// old cached one.
		c.Header("Cache-Control", "no-cache")
		c.Header("X-Content-Type-Options", "nosniff")
		if name == "index.html" {
			c.Header("Content-Security-Policy", csp)
		}
		// Stated, so a HEAD says it too: net/http computes none for a HEAD.
		c.Header("Content-Length", strconv.Itoa(len(b)))
		c.Data(http.StatusOK, contentType, b)
	}
}
