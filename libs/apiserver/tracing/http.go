package tracing

import (
	"context"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Request describes a request to Middleware, from what the server knows about it.
type Request struct {
	// Route is the route template gin matched ("/items/:id"), as the server labels it in
	// metrics and logs; "" for a request that matched none.
	Route func(c *gin.Context) string
	// Client is the caller's address as the server resolves it (TRUSTED_PROXIES).
	Client func(r *http.Request) string
	// Skip, when set, says which requests get no span (probes and scrapes, which
	// would fill the collector with traces nobody reads).
	Skip func(c *gin.Context) bool
}

// Middleware starts a server span per request, continued from the request's W3C
// traceparent, named "METHOD route" (only the method when no route matched: raw paths
// would make every address a span name) and ended with the response's status: a 5xx
// marks the span as an error. Handlers see the span in c.Request.Context(), so their
// Redis calls become its children. It goes before the server's own middleware, so the
// status it records is the final one, a recovered panic's 500 included.
//
// A request the sampler leaves out costs what it must: no name or attributes are built,
// and unless it continues a caller's trace (whose id the access log then names) its
// context is left as it was.
func (p *Provider) Middleware(req Request) gin.HandlerFunc {
	return func(c *gin.Context) {
		if req.Skip != nil && req.Skip(c) {
			c.Next()
			return
		}
		r := c.Request
		ctx := r.Context()
		// The header looked up by its canonical key: Extract's Header.Get would
		// canonicalise "traceparent" again, an allocation on every request.
		continued := false
		if _, ok := r.Header["Traceparent"]; ok {
			ctx = p.prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
			continued = trace.SpanContextFromContext(ctx).IsValid()
		}
		method, known := spanMethod(r.Method)
		ctx, span := p.tracer.Start(ctx, method, serverSpan)
		if !span.IsRecording() {
			if continued {
				c.Request = r.WithContext(ctx)
			}
			c.Next()
			return
		}
		// Set once, at the end, with the status: the span copies them in one go.
		attrs := make([]attribute.KeyValue, 0, 10)
		attrs = append(attrs,
			attribute.String("http.request.method", methodAttr(r.Method, known)),
			attribute.String("url.path", r.URL.Path),
			attribute.String("url.scheme", scheme(r)),
			attribute.String("client.address", req.Client(r)),
			attribute.String("network.protocol.version", protocolVersion(r)))
		if ua := r.UserAgent(); ua != "" {
			attrs = append(attrs, attribute.String("user_agent.original", ua))
		}
		if route := req.Route(c); route != "" {
			span.SetName(method + " " + route)
			attrs = append(attrs, attribute.String("http.route", route))
		}
		c.Request = r.WithContext(ctx)
		defer func() {
			status := c.Writer.Status()
			attrs = append(attrs, attribute.Int("http.response.status_code", status))
			if status >= 500 {
				// Server spans: only the server's own failures are errors, a client's 4xx is not.
				attrs = append(attrs, attribute.String("error.type", strconv.Itoa(status)))
				span.SetStatus(codes.Error, http.StatusText(status))
			}
			span.SetAttributes(attrs...)
			span.End()
		}()
		c.Next()
	}
}

var serverSpan = trace.WithSpanKind(trace.SpanKindServer)

// RecordError adds err to the request's span as an exception event (for a 5xx: the
// cause the log line has, which the answer never shows). Without a span it does nothing.
func RecordError(ctx context.Context, err error) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.RecordError(err)
	}
}

// TraceID is the trace id of the span in ctx, in hex as a traceparent writes it; "" when
// there is none. The access log line carries it, to find a logged request's trace.
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.HasTraceID() {
		return ""
	}
	return sc.TraceID().String()
}

// spanMethod is the method as a span name may hold it: a client can send any token, and
// span names must stay few ("HTTP" for the rest, as the conventions say).
func spanMethod(m string) (string, bool) {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m, true
	}
	return "HTTP", false
}

func methodAttr(m string, known bool) string {
	if known {
		return m
	}
	return "_OTHER"
}

func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

func protocolVersion(r *http.Request) string {
	switch {
	case r.ProtoMajor == 1 && r.ProtoMinor == 1:
		return "1.1"
	case r.ProtoMajor == 2:
		return "2"
	case r.ProtoMajor == 1 && r.ProtoMinor == 0:
		return "1.0"
	case r.ProtoMajor == 3:
		return "3"
	}
	return strconv.Itoa(r.ProtoMajor) + "." + strconv.Itoa(r.ProtoMinor)
}
