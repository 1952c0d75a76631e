package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

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
