package apiserver

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apistack/platform/libs/apiserver/internal/fieldmem"
	"github.com/gin-gonic/gin"

	"github.com/apistack/platform/libs/apiserver/tracing"
)

// RequestID returns the request's id (X-Request-ID, honoured or generated),
// read from the response header that echoes it: kept there only, as writing
// it into the request's header map too cost an allocation on most requests
// (the map is empty when a client sends no header but Host).
func RequestID(c *gin.Context) string {
	if v := c.Writer.Header()["X-Request-Id"]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// commonMiddleware runs on every request: recovery, request id, access log
// and metrics, then CORS.
func (s *Server[A]) commonMiddleware() []gin.HandlerFunc {
	if s.tracing != nil {
		// First, so that its span holds the others' work and sees the final status.
		trace := s.tracing.Middleware(tracing.Request{Route: s.traceRoute, Client: s.ClientIP, Skip: untraced})
		return []gin.HandlerFunc{trace, s.observe, s.cors()}
	}
	return []gin.HandlerFunc{s.observe, s.cors()}
}

// untraced are the built-in routes that orchestrators and Prometheus call every few
// seconds: a trace of each would bury the real ones.
func untraced(c *gin.Context) bool {
	switch c.FullPath() {
	case "/healthz", "/readyz", "/metrics":
		return true
	}
	return false
}

// traceRoute names a request's span: its route label, "" when no route matched.
func (s *Server[A]) traceRoute(c *gin.Context) string {
	if r := c.FullPath(); r != "" {
		return s.routeLabel(r)
	}
	return ""
}

// requestIDs: a random per-process prefix and a counter make ids unique
// without a crypto/rand call per request.
var (
	idPrefix  = newIDPrefix()
	idCounter atomic.Uint64
)

func newIDPrefix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newRequestID returns a header value holding a fresh id.
func newRequestID() []string {
	return headerValue(func(b []byte) []byte {
		b = append(b, idPrefix...)
		b = append(b, '-')
		return strconv.AppendUint(b, idCounter.Add(1), 36)
	})
}

// headerValue returns a one-element header value holding what write
// appends, built in one allocation (the slice, the string and its bytes
// together) for values set on every request. The slice's capacity is one,
// so an append copies it.
func headerValue(write func([]byte) []byte) []string {
	g := new(struct {
		val [1]string
		buf [32]byte // a request id: 12 hex digits, '-', at most 13 base-36 digits
	})
	b := write(g.buf[:0])
	g.val[0] = fieldmem.String(b) // b is never written again
	return g.val[:]
}

func saneRequestID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// processStart anchors request timings: time.Since of it reads only the monotonic
// clock, where time.Now also reads the wall clock, a second clock read per request that
// a duration has no use for.
var processStart = time.Now()

func (s *Server[A]) observe(c *gin.Context) {
	start := time.Since(processStart)
	// Canonical keys used directly: Header.Get/Set would re-canonicalise
	// (and allocate) on every request.
	var id string
	if v := c.Request.Header["X-Request-Id"]; len(v) == 1 && saneRequestID(v[0]) {
		id = v[0]
		c.Writer.Header()["X-Request-Id"] = v
	} else {
		v := newRequestID()
		id = v[0]
		c.Writer.Header()["X-Request-Id"] = v
	}
	// No answer is to be sniffed into another type (an error body echoing
	// input rendered as HTML, say).
	c.Writer.Header()["X-Content-Type-Options"] = nosniff
	if c.Request.ContentLength != 0 && (c.Request.Method == http.MethodGet || c.Request.Method == http.MethodHead) {
		closeUnreadBody(c) // no GET route reads a body
	}
	s.metrics.inFlight.Add(1)
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p) // the client went away; net/http handles it
			}
			s.log.Error("panic serving request", "request_id", id, "method", c.Request.Method,
				"path", c.Request.URL.Path, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			if !c.Writer.Written() {
				// In the body of the route's ErrorMap when it has one, as its other errors.
				s.answerError(c, fmt.Errorf("panic: %v", p), s.errorMaps.of(c.Request.Method, c.FullPath()))
			} else {
				c.Abort()
			}
		}
		s.metrics.inFlight.Add(-1)
		status := c.Writer.Status()
		elapsed := time.Since(processStart) - start
		series := s.metrics.seriesOf(c.FullPath(), c.Request.Method, status, s.routeLabel)
		series.s.observe(elapsed.Seconds())
		route := series.label
		level := slog.LevelInfo
		switch {
		case status >= 500:
			level = slog.LevelError
		case route == "/healthz" || route == "/readyz":
			// Orchestrators poll these every few seconds per replica; at info they
			// would bury the real traffic. A failing check still logs (5xx).
			level = slog.LevelDebug
		}
		if s.log.Enabled(c, level) {
			attrs := [...]slog.Attr{
				slog.String("request_id", id),
				slog.String("method", c.Request.Method),
				slog.String("route", route),
				slog.String("path", c.Request.URL.Path),
				slog.Int("status", status),
				slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
				slog.String("client", s.clientIP.ResolveRequest(c.Request).String()),
				slog.Int("bytes", c.Writer.Size()),
				{}, // trace_id
			}
			n := len(attrs) - 1
			if s.tracing != nil {
				if tid := tracing.TraceID(c.Request.Context()); tid != "" {
					attrs[n] = slog.String("trace_id", tid)
					n++
				}
			}
			s.log.LogAttrs(c, level, "request", attrs[:n]...)
		}
	}()
	c.Next()
}

// abortWithError writes the standard error body and stops the chain.
func (s *Server[A]) abortWithError(c *gin.Context, err error) { s.answerError(c, err, nil) }

// WriteError answers a request with err as the standard error body, for
// routes added to Instance() directly.
func (s *Server[A]) WriteError(c *gin.Context, err error) { s.abortWithError(c, err) }

var corsExposed = strings.Join([]string{"X-Request-ID", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After", "ETag", "Location"}, ", ")

// cors answers preflights and sets Access-Control-* headers. With "*" no
// credentials are allowed; with explicit origins the matching origin is
// echoed and credentials are allowed.
func (s *Server[A]) cors() gin.HandlerFunc {
	wildcard := false
	allowed := map[string]bool{}
	for _, o := range s.set.corsOrigins {
		if o == "*" {
			wildcard = true
		}
		allowed[strings.TrimRight(o, "/")] = true
	}
	return func(c *gin.Context) {
		origin := c.GetHeader("Origin")
		if origin == "" {
			c.Next()
			return
		}
		h := c.Writer.Header()
		h.Add("Vary", "Origin")
		switch {
		case wildcard:
			h.Set("Access-Control-Allow-Origin", "*")
		case allowed[origin]:
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
		default:
			// Not an allowed origin: no CORS headers, so the browser blocks
			// the response; a preflight is refused.
			if c.Request.Method == http.MethodOptions && c.GetHeader("Access-Control-Request-Method") != "" {
				closeUnreadBody(c) // a preflight's answer reads no body
				c.AbortWithStatus(http.StatusForbidden)
				return
			}
			c.Next()
			return
		}
		if c.Request.Method == http.MethodOptions && c.GetHeader("Access-Control-Request-Method") != "" {
			h.Add("Vary", "Access-Control-Request-Method")
			h.Add("Vary", "Access-Control-Request-Headers")
			h.Set("Access-Control-Allow-Methods", "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS")
			if req := c.GetHeader("Access-Control-Request-Headers"); req != "" {
				h.Set("Access-Control-Allow-Headers", req)
			} else {
				h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Request-ID")
			}
			h.Set("Access-Control-Max-Age", "600")
			closeUnreadBody(c) // a preflight's answer reads no body
			c.AbortWithStatus(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", corsExposed)
		c.Next()
	}
}

// routeMiddleware is what an endpoint runs before binding: rate limit,
// then auth (so an unauthenticated caller learns nothing about the
// schema, and cannot spend the limit check). The server's deadlines hold
// throughout, for every route: a connection is allowed to live long only
// once it has passed them (see Operation.NoTimeouts).
func (s *Server[A]) routeMiddleware(op *Operation, route string) []gin.HandlerFunc {
	if il := s.identityLimitOf(op); il != nil {
		// Auth first, then the principal's limit (identity.go).
		return []gin.HandlerFunc{s.identityMiddleware(op, op.Method+" "+route, il)}
	}
	var hs []gin.HandlerFunc
	if lim := s.rateLimitMiddleware(op.RateLimit, op.Method+" "+route, op.ErrorMap); lim != nil {
		hs = append(hs, lim)
	}
	if op.Authenticated {
		hs = append(hs, s.authMiddleware(op.ErrorMap))
	}
	return hs
}

// LiftTimeouts clears the server's read and write deadlines for this
// request, for a long-lived answer (a stream, a long poll) that does not
// hijack the connection. Call it only once the request has been checked
// (rate limit, auth, input). A body that was announced and not read keeps
// its expired read deadline (see closeUnreadBody). A WebSocket upgrade
// needs no call: net/http clears the deadlines when the handshake is
// accepted and the connection hijacked.
func LiftTimeouts(c *gin.Context) {
	rc := http.NewResponseController(c.Writer)
	if !unreadBody(c) {
		_ = rc.SetReadDeadline(time.Time{})
	}
	_ = rc.SetWriteDeadline(time.Time{})
}

// bodyReadKey marks a request whose body the library has read to its end.
const bodyReadKey = "apiserver.bodyRead"

func unreadBody(c *gin.Context) bool {
	return c.Request.ContentLength != 0 && !c.GetBool(bodyReadKey)
}

// closeUnreadBody is for a request that announced a body nobody will
// read: the connection is closed after the answer, at once. Otherwise
// net/http reads the body to reuse the connection (when writing the
// answer, and again when closing the request), and a client announcing
// Content-Length: 100 that sends nothing holds the socket until the read
// deadline, or forever once it is lifted.
func closeUnreadBody(c *gin.Context) {
	if !unreadBody(c) {
		return
	}
	c.Writer.Header()["Connection"] = connectionClose
	_ = http.NewResponseController(c.Writer).SetReadDeadline(time.Now())
}

var (
	connectionClose = []string{"close"}
	nosniff         = []string{"nosniff"}
)
