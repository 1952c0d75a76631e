package apiserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/apistack/platform/libs/apiserver/internal/schema"
)

// ErrorBody declares that an operation answers Status with a body of its own shape
// instead of the standard error body: a drop-in for another API whose clients decode that
// API's errors (geoip answers ipapi.co's {"ip", "error": true, "reason"}). The handler
// returns a *BodyError with that status; OpenAPI documents Example's type for it.
type ErrorBody struct {
	Status      int    // 400-599
	Description string // what the answer means
	// Example is a value of the body's Go type: its schema is published for Status, and
	// the value itself as the example.
	Example any
}

// BodyError is an error answered with Body, encoded as JSON, on an operation that
// declares an ErrorBody for Status. Anywhere else it is answered with the standard error
// body (Status and Message): every other endpoint keeps the platform's error shape.
type BodyError struct {
	Status  int
	Body    any
	Message string // logged; the standard body's message where Body is not declared
	Header  http.Header
	Cause   error // logged, never sent
}

// NewBodyError returns an error answered with status and body.
func NewBodyError(status int, body any, message string) *BodyError {
	return &BodyError{Status: status, Body: body, Message: message}
}

func (e *BodyError) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%d %s: %v", e.Status, e.Message, e.Cause)
	}
	return fmt.Sprintf("%d %s", e.Status, e.Message)
}

// Unwrap returns the cause.
func (e *BodyError) Unwrap() error { return e.Cause }

// StatusCode reports the HTTP status.
func (e *BodyError) StatusCode() int { return e.Status }

// standard is the answer where the body is not declared.
func (e *BodyError) standard() *Error {
	msg := e.Message
	if msg == "" {
		msg = statusText(e.Status)
	}
	return &Error{Status: e.Status, Message: msg, Header: e.Header, Cause: e.Cause}
}

// errorBodies are an operation's declared error bodies, compiled at registration.
type errorBodies map[int]*schema.Node

// compileErrorBodies checks the declarations (a programming error panics in Register) and
// derives their schemas.
func compileErrorBodies(reg *schema.Registry, decl []ErrorBody) (errorBodies, error) {
	if len(decl) == 0 {
		return nil, nil
	}
	out := make(errorBodies, len(decl))
	for _, d := range decl {
		if d.Status < 400 || d.Status > 599 {
			return nil, fmt.Errorf("error body for status %d: must be 400-599", d.Status)
		}
		if _, dup := out[d.Status]; dup {
			return nil, fmt.Errorf("error body for status %d declared twice", d.Status)
		}
		if d.Example == nil {
			return nil, fmt.Errorf("error body for status %d: Example is nil (it gives the schema)", d.Status)
		}
		n, err := reg.Type(reflect.TypeOf(d.Example))
		if err != nil {
			return nil, fmt.Errorf("error body for status %d: %w", d.Status, err)
		}
		out[d.Status] = n
	}
	return out, nil
}

// fail answers a handler's error: a declared BodyError with its own body, anything else
// with the standard error body.
func (ep *endpoint[A, In, Out]) fail(c *gin.Context, err error) {
	var be *BodyError
	if !errors.As(err, &be) {
		ep.abort(c, err)
		return
	}
	if _, ok := ep.errBodies[be.Status]; !ok {
		ep.abort(c, be.standard())
		return
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if jerr := enc.Encode(be.Body); jerr != nil {
		ep.abort(c, fmt.Errorf("encode error body: %w", jerr))
		return
	}
	body := bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
	for k, vs := range be.Header {
		for _, v := range vs {
			c.Writer.Header().Add(k, v)
		}
	}
	c.Data(be.Status, "application/json; charset=utf-8", body)
	c.Abort()
}

// docErrorBodies replaces the documentation of the declared statuses. Where the library
// itself may also answer that status (a 400 from input validation, a 429), the response is
// either shape, documented as oneOf.
func (ep *endpoint[A, In, Out]) docErrorBodies(responses map[string]any) {
	for _, d := range ep.op.ErrorBodies {
		code := strconv.Itoa(d.Status)
		s := ep.errorSchemaOf()
		custom := any(ep.errBodies[d.Status].Schema)
		media := map[string]any{"schema": custom, "example": d.Example}
		if _, standardToo := responses[code]; standardToo {
			media["schema"] = map[string]any{"oneOf": []any{custom, s}}
		}
		desc := d.Description
		if desc == "" {
			desc = statusText(d.Status)
		}
		responses[code] = map[string]any{"description": desc, "content": map[string]any{"application/json": media}}
	}
}
