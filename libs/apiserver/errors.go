package apiserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"

	"github.com/apistack/platform/libs/apiserver/internal/schema"
)

// FieldError is one validation problem: the field, prefixed with where it
// was found (`query.limit`, `params.id`, `body.name`), and what is wrong.
type FieldError = schema.FieldError

// Error is an error with an HTTP status. Handlers return it (or wrap it)
// to choose the answer; the body is always
// {"statusCode", "error", "message"[, "details"][, extra fields]}.
type Error struct {
	Status  int
	Message string
	Details []FieldError
	// Extra fields merged into the body, e.g. {"reason": "..."}. They
	// never replace the standard keys.
	Extra map[string]any
	// Header values set on the response, e.g. Retry-After.
	Header http.Header
	// Cause is logged, never sent.
	Cause error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%d %s: %v", e.Status, e.Message, e.Cause)
	}
	return fmt.Sprintf("%d %s", e.Status, e.Message)
}

// Unwrap returns the cause, so errors.Is/As see through.
func (e *Error) Unwrap() error { return e.Cause }

// StatusCode reports the HTTP status.
func (e *Error) StatusCode() int { return e.Status }

// With returns a copy with an extra body field.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Extra = make(map[string]any, len(e.Extra)+1)
	for k, v := range e.Extra {
		c.Extra[k] = v
	}
	c.Extra[key] = value
	return &c
}

// NewError returns an error answered with status and message.
func NewError(status int, message string) *Error {
	return &Error{Status: status, Message: message}
}

// ValidationError is the seed's ValidationError: 400 "Validation failed"
// with the given items.
func ValidationError(details ...FieldError) *Error {
	return &Error{Status: http.StatusBadRequest, Message: "Validation failed", Details: details}
}

// NotFoundError is the seed's NotFoundError: 404 with message.
func NotFoundError(message string) *Error { return NewError(http.StatusNotFound, message) }

// ForbiddenError answers 403, the role check a handler makes beyond the token.
func ForbiddenError(message string) *Error { return NewError(http.StatusForbidden, message) }

// UnauthorizedError answers 401 with WWW-Authenticate: Bearer.
func UnauthorizedError(message string) *Error {
	return &Error{Status: http.StatusUnauthorized, Message: message, Header: http.Header{"Www-Authenticate": {"Bearer"}}}
}

// ConflictError answers 409.
func ConflictError(message string) *Error { return NewError(http.StatusConflict, message) }

// BadRequestError answers 400 with a message and no details.
func BadRequestError(message string) *Error { return NewError(http.StatusBadRequest, message) }

// statusCoder is any error that knows its status (ours, or the caller's).
type statusCoder interface{ StatusCode() int }

// toError maps any error to the answer. Anything without a status is a
// 500 whose text is hidden unless exposeInternal (development).
func toError(err error, exposeInternal bool) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var sc statusCoder
	if errors.As(err, &sc) {
		status := sc.StatusCode()
		if status >= 400 && status < 500 {
			return &Error{Status: status, Message: err.Error(), Cause: err}
		}
		if status >= 500 && status < 600 {
			return internalError(status, err, exposeInternal)
		}
	}
	return internalError(http.StatusInternalServerError, err, exposeInternal)
}

func internalError(status int, err error, expose bool) *Error {
	msg := http.StatusText(status)
	if expose {
		msg = err.Error()
	}
	return &Error{Status: status, Message: msg, Cause: err}
}

// encode renders the standard body with standard keys first.
func (e *Error) encode() []byte {
	var buf bytes.Buffer
	buf.WriteString(`{"statusCode":`)
	buf.WriteString(strconv.Itoa(e.Status))
	buf.WriteString(`,"error":`)
	writeJSON(&buf, statusText(e.Status))
	buf.WriteString(`,"message":`)
	writeJSON(&buf, e.Message)
	if len(e.Details) > 0 {
		buf.WriteString(`,"details":`)
		writeJSON(&buf, e.Details)
	}
	if len(e.Extra) > 0 {
		keys := make([]string, 0, len(e.Extra))
		for k := range e.Extra {
			switch k {
			case "statusCode", "error", "message", "details":
				continue
			}
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			buf.WriteByte(',')
			writeJSON(&buf, k)
			buf.WriteByte(':')
			writeJSON(&buf, e.Extra[k])
		}
	}
	buf.WriteByte('}')
	return buf.Bytes()
}

// writeJSON appends v without HTML escaping: messages such as
// "Expected: Bearer <token>" read as written.
func writeJSON(buf *bytes.Buffer, v any) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		buf.WriteString("null")
		return
	}
	buf.Truncate(buf.Len() - 1) // Encode adds a newline
}

func statusText(status int) string {
	if t := http.StatusText(status); t != "" {
		return t
	}
	return "Error"
}
