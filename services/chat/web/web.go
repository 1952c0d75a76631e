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
// protocol the page uses.
// Each answers HEAD as it answers GET, as the library's routes do.
func Mount(e *gin.Engine) {
	getHead := []string{http.MethodGet, http.MethodHead}
	e.Match(getHead, "/", serve("index.html", "text/html; charset=utf-8"))
	e.Match(getHead, "/app.js", serve("app.js", "text/javascript; charset=utf-8"))
	e.Match(getHead, "/style.css", serve("style.css", "text/css; charset=utf-8"))
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
		c.Header("Content-Length", strconv.Itoa(len(b))) // for a HEAD too
		c.Data(http.StatusOK, contentType, b)
	}
}
