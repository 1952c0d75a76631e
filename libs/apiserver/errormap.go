package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/apistack/platform/libs/apiserver/internal/schema"
	"github.com/apistack/platform/libs/apiserver/tracing"
)

// ErrorMap answers every error of the operations that carry it with a body of their own
// shape instead of the standard error body: a drop-in for another API whose clients decode
// that API's errors (geoip answers ipapi.co's {"error": true, "reason", "message"}). It
// covers all the library answers on those operations, not only the handler's: input
// validation, the rate limiter's 429 and 503, authentication's 401 and 403, and 500s.
// Statuses an operation declares in ErrorBodies keep their declared body. Give several
// operations one ErrorMap to treat them as a group.
type ErrorMap struct {
	// Body returns the body for e, encoded as JSON. The status and headers (Retry-After,
	// WWW-Authenticate) stay e's. e.Message is safe to show (a 5xx's is generic in
	// production); e.Cause is not: it is logged, never to be sent.
	Body func(e *Error) any
	// Example is a value of Body's result type: its schema documents every error answer
	// of the operation in OpenAPI, and the value itself is the example.
	Example any
}

// compile checks the declaration (a programming error panics in Register) and derives
// the documented schema in the server's registry.
func (m *ErrorMap) compile(reg *schema.Registry) (*schema.Node, error) {
	if m.Body == nil || m.Example == nil {
		return nil, fmt.Errorf("ErrorMap needs Body and Example")
	}
	n, err := reg.Type(reflect.TypeOf(m.Example))
	if err != nil {
		return nil, fmt.Errorf("ErrorMap example: %w", err)
	}
	return n, nil
}

// answerError answers err and stops the chain: through m's body when m is set, else the
// standard error body. Server errors are logged either way.
func (s *Server[A]) answerError(c *gin.Context, err error, m *ErrorMap) {
	e := toError(err, !s.set.production)
	closeUnreadBody(c)
	if e.Status >= 500 {
		s.log.Error("request failed", "request_id", RequestID(c), "method", c.Request.Method,
			"path", c.Request.URL.Path, "status", e.Status, "err", err)
		if s.tracing != nil {
			tracing.RecordError(c.Request.Context(), err)
		}
	}
	for k, vs := range e.Header {
		for _, v := range vs {
			c.Writer.Header().Add(k, v)
		}
	}
	body := e.encode()
	if m != nil {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if jerr := enc.Encode(m.Body(e)); jerr == nil {
			body = bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
		} else {
			s.log.Error("error map: encode body", "request_id", RequestID(c), "err", jerr)
		}
	}
	c.Data(e.Status, "application/json; charset=utf-8", body)
	c.Abort()
}

// WriteErrorMapped answers a request with err through m (nil: the standard body), for
// routes added to Instance() directly that belong with the operations m serves: an
// unknown path in their grammar, say.
func (s *Server[A]) WriteErrorMapped(c *gin.Context, err error, m *ErrorMap) {
	s.answerError(c, err, m)
}

// routeErrorMaps are the ErrorMaps of the operations that carry one, by gin route
// ("GET /:ip/json/", one per literal route of PathValues, HEAD beside GET): the answers
// the library writes outside an endpoint's own chain, a recovered panic and a 405, find
// the map of the route the request matched there. Written only while registering.
type routeErrorMaps struct {
	byRoute map[string]*ErrorMap
	// routes is every route of the engine by method, read on the first 405 that needs
	// it (routes are all added before serving, as routeLabels assume too).
	once   sync.Once
	routes map[string][]routePattern
}

func (r *routeErrorMaps) add(method, route string, m *ErrorMap) {
	if r.byRoute == nil {
		r.byRoute = map[string]*ErrorMap{}
	}
	r.byRoute[method+" "+route] = m
}

// of is the ErrorMap of the route method+route (c.FullPath()), nil if none.
func (r *routeErrorMaps) of(method, route string) *ErrorMap {
	if len(r.byRoute) == 0 || route == "" {
		return nil
	}
	return r.byRoute[method+" "+route]
}

// ofOtherMethods is the ErrorMap for a 405: gin answers it when path matches a route of
// another method, and the answer takes the body of that route's operation. Each
// method's route is chosen as gin's tree chooses it (a static segment before a
// parameter, a parameter before a catch-all), so that a path served by an unmapped route
// of that method keeps the standard body.
func (r *routeErrorMaps) ofOtherMethods(engine *gin.Engine, method, path string) *ErrorMap {
	if len(r.byRoute) == 0 {
		return nil
	}
	r.once.Do(func() {
		r.routes = map[string][]routePattern{}
		for _, ri := range engine.Routes() {
			r.routes[ri.Method] = append(r.routes[ri.Method], newRoutePattern(ri.Path))
		}
	})
	for _, m := range methodOrder {
		if m == method {
			continue
		}
		var best *routePattern
		for i := range r.routes[m] {
			p := &r.routes[m][i]
			if p.match(path) && (best == nil || p.before(best)) {
				best = p
			}
		}
		if best != nil {
			if em := r.byRoute[m+" "+best.route]; em != nil {
				return em
			}
		}
	}
	return nil
}

// methodOrder is the order ofOtherMethods tries the methods in: the first whose route
// carries an ErrorMap gives the body.
var methodOrder = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
	http.MethodPatch, http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace}

// routePattern is a gin route split into segments.
type routePattern struct {
	route string
	segs  []string
	// kinds ranks each segment as gin's tree does: 0 static, 1 parameter, 2 catch-all.
	kinds []uint8
}

func newRoutePattern(route string) routePattern {
	p := routePattern{route: route, segs: strings.Split(route, "/")}
	p.kinds = make([]uint8, len(p.segs))
	for i, s := range p.segs {
		switch {
		case strings.ContainsRune(s, '*'):
			p.kinds[i] = 2
		case strings.ContainsRune(s, ':'):
			p.kinds[i] = 1
		}
	}
	return p
}

// match reports whether gin's route p would serve path.
func (p *routePattern) match(path string) bool {
	rest := path
	for i, seg := range p.segs {
		if p.kinds[i] == 2 {
			// /*name holds the rest of the path, its slashes included.
			prefix, _, _ := strings.Cut(seg, "*")
			return strings.HasPrefix(rest, prefix)
		}
		part, tail, more := strings.Cut(rest, "/")
		switch p.kinds[i] {
		case 0:
			if part != seg {
				return false
			}
		case 1:
			prefix, _, _ := strings.Cut(seg, ":")
			if len(part) <= len(prefix) || !strings.HasPrefix(part, prefix) {
				return false // a parameter is never empty
			}
		}
		if i == len(p.segs)-1 {
			return !more
		}
		if !more {
			return false
		}
		rest = tail
	}
	return false
}

// before reports whether gin prefers p to q when both match a path: at the first
// segment where they differ in kind, the more literal one.
func (p *routePattern) before(q *routePattern) bool {
	for i := 0; i < len(p.kinds) && i < len(q.kinds); i++ {
		if p.kinds[i] != q.kinds[i] {
			return p.kinds[i] < q.kinds[i]
		}
	}
	return false
}

// abort answers an error of the endpoint, through its ErrorMap if it has one.
func (ep *endpoint[A, In, Out]) abort(c *gin.Context, err error) {
	ep.s.answerError(c, err, ep.op.ErrorMap)
}

// errorContent is the documented content of the operation's error answers.
func (ep *endpoint[A, In, Out]) errorContent() map[string]any {
	if m := ep.op.ErrorMap; m != nil {
		return map[string]any{"application/json": map[string]any{"schema": ep.errMapNode.Schema, "example": m.Example}}
	}
	return map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/ErrorResponse"}}}
}

// errorSchemaOf is the schema of the operation's error answers (for a oneOf).
func (ep *endpoint[A, In, Out]) errorSchemaOf() any {
	if ep.op.ErrorMap != nil {
		return ep.errMapNode.Schema
	}
	return map[string]any{"$ref": "#/components/schemas/ErrorResponse"}
}
