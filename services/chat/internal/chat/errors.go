package chat

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kind classifies a domain error so that transports map it to a status in
// one place, internal/apierr (400 invalid, 401, 403, 404, 409, 410,
// 422 blocked or unprocessable, 429, 503), for REST and WebSocket alike.
type Kind string

// Error kinds.
const (
	KindInvalid       Kind = "invalid"       // a field failed validation (HTTP 400)
	KindUnauthorized  Kind = "unauthorized"  // no or unknown token (HTTP 401)
	KindForbidden     Kind = "forbidden"     // role too low, banned, timed out (HTTP 403)
	KindNotFound      Kind = "not_found"     // HTTP 404
	KindConflict      Kind = "conflict"      // already exists / state forbids (HTTP 409)
	KindBlocked       Kind = "blocked"       // a filter blocked the message (HTTP 422)
	KindUnprocessable Kind = "unprocessable" // well-formed but cannot be done as asked (HTTP 422)
	KindSlowMode      Kind = "slow_mode"     // wait RetryAfter before sending (HTTP 429)
	KindUnavailable   Kind = "unavailable"   // the store cannot be reached (HTTP 503)
	KindHistoryGone   Kind = "history_gone"  // a cursor left the history window
)

// FieldError names one invalid input field.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is the one error type of the domain. Kind says what happened; the
// other fields carry what a client needs to react (which fields, until when,
// how long to wait, why a message was blocked).
type Error struct {
	Kind    Kind
	Message string
	// Fields lists the invalid inputs (KindInvalid).
	Fields []FieldError
	// Until is when a timeout ends (KindForbidden for a timed-out user);
	// zero for a permanent ban.
	Until time.Time
	// RetryAfter is how long to wait (KindSlowMode).
	RetryAfter time.Duration
	// Limit is the limit that was reached (KindConflict, Reason "limit").
	Limit int
	// Reason is a short machine-readable cause, e.g. the filter kind that
	// blocked a message, "banned" or "timed_out".
	Reason string
	// Consequence is what a refused message did to its sender (KindBlocked).
	Consequence *Consequence
	// Err is the underlying cause, kept for logs and errors.Is.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Message)
	if e.Message == "" {
		b.WriteString(string(e.Kind))
	}
	for _, f := range e.Fields {
		fmt.Fprintf(&b, "; %s: %s", f.Field, f.Message)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, chat.ErrNotFound) match any error of that kind.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Err == nil && t.Kind == e.Kind
}

// Sentinels for errors.Is; they match any *Error of the same kind.
var (
	ErrInvalid       = &Error{Kind: KindInvalid}
	ErrUnauthorized  = &Error{Kind: KindUnauthorized}
	ErrForbidden     = &Error{Kind: KindForbidden}
	ErrNotFound      = &Error{Kind: KindNotFound}
	ErrConflict      = &Error{Kind: KindConflict}
	ErrBlocked       = &Error{Kind: KindBlocked}
	ErrUnprocessable = &Error{Kind: KindUnprocessable}
	ErrSlowMode      = &Error{Kind: KindSlowMode}
	ErrUnavailable   = &Error{Kind: KindUnavailable}
	ErrHistoryGone   = &Error{Kind: KindHistoryGone}
)

// KindOf returns the Kind of err, or "" for an error the domain does not
// know (a transport turns that into a logged 500).
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

// AsError returns err's *Error, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// NotFound builds a KindNotFound error: "<what> not found".
func NotFound(what string) error {
	return &Error{Kind: KindNotFound, Message: what + " not found"}
}

// Conflict builds a KindConflict error.
func Conflict(msg string) error { return &Error{Kind: KindConflict, Message: msg} }

// Forbidden builds a KindForbidden error.
func Forbidden(msg string) error { return &Error{Kind: KindForbidden, Message: msg} }

// Invalid builds a KindInvalid error for one field.
func Invalid(field, msg string) error {
	return &Error{Kind: KindInvalid, Message: "invalid input", Fields: []FieldError{{Field: field, Message: msg}}}
}

// Unavailable wraps a storage failure that changed nothing (the backend
// could not be reached, or refused the command); transports answer 503.
func Unavailable(op string, err error) error {
	return &Error{Kind: KindUnavailable, Message: "store unavailable during " + op, Err: err}
}

// ReasonOutcomeUnknown is the Reason of an Unavailable error whose write
// may have been made: it was sent, and no answer came (a timeout, a
// connection lost mid-way). The client cannot be told "nothing changed".
const ReasonOutcomeUnknown = "outcome_unknown"

// OutcomeUnknown wraps the failure of a write that reached, or may have
// reached, the backend without an answer: it may run there later. It is of
// KindUnavailable (503, try again), with Reason ReasonOutcomeUnknown: a
// send retried with the same idempotency key returns the first result, and
// any other write should be read back before it is repeated.
func OutcomeUnknown(op string, err error) error {
	return &Error{Kind: KindUnavailable, Reason: ReasonOutcomeUnknown, Message: "no answer from the store during " + op, Err: err}
}

// ReasonKeysUnavailable is the Reason of an Unavailable error that is no
// store's: the identity provider's signing keys (CHAT_JWKS_URL) have not
// been fetched, so a platform token could not be checked. Nothing was
// changed; the client retries shortly.
const ReasonKeysUnavailable = "identity_keys_unavailable"

// KeysUnavailable wraps a platform token that could not be checked
// because the identity provider's keys are not at hand.
func KeysUnavailable(err error) error {
	return &Error{Kind: KindUnavailable, Reason: ReasonKeysUnavailable, Message: "identity provider keys unavailable", Err: err}
}

// validation collects field errors so a client learns every problem at once.
type validation struct{ fields []FieldError }

func (v *validation) add(field, format string, args ...any) {
	v.fields = append(v.fields, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

func (v *validation) err() error {
	if len(v.fields) == 0 {
		return nil
	}
	return &Error{Kind: KindInvalid, Message: "invalid input", Fields: v.fields}
}
