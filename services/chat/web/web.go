// Package web is the chat's browser side, embedded in the binary: the page
// at /, the browser client client.js (an ES module, typed by client.d.ts)
// that the page, the embed and any site use, and the embed at
// /embed/{channel} (with ?overlay=1, an overlay for OBS's browser source).
package web

import (
	"bytes"
	"embed"
	"html"
	"io/fs"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
)

// FS holds the page (index.html, app.js, moderation.js, style.css), the
// client (client.js, client.d.ts) and the embed (embed.html, embed.js,
// embed.css).
//
//go:embed index.html app.js moderation.js style.css client.js client.d.ts embed.html embed.js embed.css
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
		page = bytes.Replace(page, embedMeta, embedMetaFor(opts.EmbedOrigins), 1)
	}
	e.Match(getHead, "/", serve(page, "text/html; charset=utf-8", csp+ancestors))
	// The embed has the page's policy: its own files, sockets, frames by
	// the embedding origins only.
	embedPage := serve(bytes.Replace(read("embed.html"), embedMeta, embedMetaFor(opts.EmbedOrigins), 1), "text/html; charset=utf-8", csp+ancestors)
	e.Match(getHead, "/embed/:channel", func(c *gin.Context) {
		if !channelName.MatchString(c.Param("channel")) {
			c.AbortWithStatusJSON(http.StatusBadRequest, errorBody{StatusCode: http.StatusBadRequest, Error: "Bad Request",
				Message: "the embed's path names a channel: 1..32 of a-z, 0-9, '-' and '_', starting with a letter or digit"})
			return
		}
		embedPage(c)
	})
	e.Match(getHead, "/client.js", serve(read("client.js"), "text/javascript; charset=utf-8", ""))
	e.Match(getHead, "/client.d.ts", serve(read("client.d.ts"), "text/plain; charset=utf-8", ""))
	e.Match(getHead, "/embed.js", serve(read("embed.js"), "text/javascript; charset=utf-8", ""))
	e.Match(getHead, "/embed.css", serve(read("embed.css"), "text/css; charset=utf-8", ""))
	e.Match(getHead, "/app.js", serve(read("app.js"), "text/javascript; charset=utf-8", ""))
	e.Match(getHead, "/moderation.js", serve(read("moderation.js"), "text/javascript; charset=utf-8", ""))
	e.Match(getHead, "/style.css", serve(read("style.css"), "text/css; charset=utf-8", ""))
}

// embedMetaFor is the meta tag listing the embedding origins.
func embedMetaFor(origins []string) []byte {
	return []byte(`<meta name="chat-embed-origins" content="` + html.EscapeString(strings.Join(origins, " ")) + `">`)
}

// channelName is the API's rule for a channel name (the case is folded
// by the server when the embed connects).
var channelName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`)

// errorBody is the service's error body.
type errorBody struct {
	StatusCode int    `json:"statusCode"`
	Error      string `json:"error"`
	Message    string `json:"message"`
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
