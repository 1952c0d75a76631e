// Package apierr is the chat's one mapping from domain errors to answers:
// the status, reason words and field names that a REST error body and a
// WebSocket error frame both carry, so the two transports cannot drift.
package apierr

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/apistack/platform/libs/apiserver"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// Where a request's fields come from: the domain names a field ("limit"),
// an answer says where it was ("query.limit"). A WebSocket send frame
// carries what POST /messages/send's body does, so its fields are "body.".
const (
	InBody   = "body"
	InQuery  = "query"
	InParams = "params"
)

// CodeInternal is the code of an error the domain does not know (a bug):
// 500, logged, never shown.
const CodeInternal = "internal"

// Names of the fields an answer adds to the standard error body
// ({statusCode, error, message} over REST; {type, id, code, status,
// message} in a frame), the same on both transports.
const (
	FieldReason     = "reason"              // a short cause: banned, timed_out, the action, the filter kind, limit, slow_mode, send_limit
	FieldUntil      = "until"               // end of a timeout (RFC 3339), null for a ban
	FieldLimit      = "limit"               // the limit that was reached (409 reason limit)
	FieldRetryAfter = "retry_after_seconds" // whole seconds to wait (429, 503), also the Retry-After header
	FieldDetails    = "details"             // [{field, message}] (400, 422)
	// FieldConsequence is what a refusing filter did to the sender (422):
	// {action, penalty, until, strike, strikes_expire_at}.
	FieldConsequence = "consequence"
)

// Answer is what a transport sends for a domain error.
type Answer struct {
	Status  int    // HTTP status; a frame's status
	Code    string // the chat.Kind (a frame's code), or CodeInternal
	Message string
	// Details name fields where they came from ("body.message").
	Details []chat.FieldError
	// Extra holds the fields beyond the standard body, by the Field*
	// names: only those that apply.
	Extra map[string]any
	// RetryAfter is whole seconds to wait, 0 for none: the Retry-After
	// header and retry_after_seconds.
	RetryAfter int
	// Challenge asks for a bearer token (401: WWW-Authenticate: Bearer).
	Challenge bool
}

// Internal is the answer to an error that is no domain error.
var Internal = Answer{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal error"}

// The messages of a 503 never name the cause (a Redis call): that is
// logged. A write whose outcome is unknown must not promise that nothing
// changed: it may have been made, or be made yet.
const (
	unavailableMessage    = "The chat store is unavailable; nothing was changed. Retry shortly."
	outcomeUnknownMessage = "The chat store did not answer in time: the change may have been made. " +
		"Retry a send with the same Idempotency-Key (it is stored once); read other changes back before repeating them."
	keysUnavailableMessage = "The identity provider's signing keys are unavailable, so the token could not be checked; nothing was changed. Retry shortly."
)

// For maps err, or the domain error it wraps, to its answer; ok is false
// for an error the domain does not know, which the caller logs and answers
// as Internal. in says where the request's fields came from (InBody, ...).
//
//	invalid      400 details
//	unauthorized 401 WWW-Authenticate: Bearer (no, unknown or deleted user's token)
//	forbidden    403 reason; until: the end of a timeout, null for a ban
//	not_found    404
//	history_gone 410
//	conflict     409 reason; limit when a quota was reached
//	blocked      422 reason = filter kind; details on body.message; consequence
//	unprocessable 422 reason (an idempotency key used with another message)
//	slow_mode    429 reason slow_mode or send_limit; retry_after_seconds, Retry-After
//	unavailable  503 retry_after_seconds 1, Retry-After: 1; nothing was changed,
//	             unless reason outcome_unknown: the write may have been made;
//	             reason identity_keys_unavailable: a platform token could not
//	             be checked (the identity provider's keys), not the store
//
// A context deadline or cancellation that is no domain error (a request's,
// which expired, or whose client went away, while the store worked) is a
// store call ended before its answer, with an outcome nobody can know:
// unavailable with reason outcome_unknown, as an engine reports a write
// that got no answer, and not a bug (a 500, logged as one).
func For(err error, in string) (Answer, bool) {
	de, ok := chat.AsError(err)
	if !ok {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return For(chat.OutcomeUnknown("the request", err), in)
		}
		return Internal, false
	}
	a := Answer{Code: string(de.Kind), Message: de.Message, Extra: map[string]any{}}
	if a.Message == "" {
		a.Message = strings.ReplaceAll(string(de.Kind), "_", " ")
	}
	if de.Reason != "" {
		a.Extra[FieldReason] = de.Reason
	}
	switch de.Kind {
	case chat.KindInvalid:
		a.Status = http.StatusBadRequest
		a.Details = make([]chat.FieldError, 0, len(de.Fields))
		for _, f := range de.Fields {
			a.Details = append(a.Details, chat.FieldError{Field: FieldPath(in, f.Field), Message: f.Message})
		}
		a.Message = validationMessage(a.Details)
	case chat.KindUnauthorized:
		a.Status, a.Challenge = http.StatusUnauthorized, true
	case chat.KindForbidden:
		a.Status = http.StatusForbidden
		switch {
		case !de.Until.IsZero():
			a.Extra[FieldUntil] = de.Until.UTC().Format(time.RFC3339)
		case de.Reason == "banned":
			a.Extra[FieldUntil] = nil // no end: until a moderator unbans
		}
	case chat.KindNotFound:
		a.Status = http.StatusNotFound
	case chat.KindHistoryGone:
		a.Status = http.StatusGone
	case chat.KindConflict:
		a.Status = http.StatusConflict
		if de.Limit > 0 {
			a.Extra[FieldLimit] = de.Limit
		}
	case chat.KindBlocked:
		a.Status = http.StatusUnprocessableEntity
		a.Details = []chat.FieldError{{Field: FieldPath(InBody, "message"), Message: a.Message + "; nothing was stored"}}
		if de.Consequence != nil {
			a.Extra[FieldConsequence] = de.Consequence
		}
	case chat.KindSlowMode:
		a.Status = http.StatusTooManyRequests
		if de.Reason == "" {
			a.Extra[FieldReason] = "slow_mode"
		}
		a.RetryAfter = RetrySeconds(de.RetryAfter)
	case chat.KindUnprocessable:
		a.Status = http.StatusUnprocessableEntity
	case chat.KindUnavailable:
		a.Status, a.Message, a.RetryAfter = http.StatusServiceUnavailable, unavailableMessage, 1
		switch de.Reason {
		case chat.ReasonOutcomeUnknown:
			a.Message = outcomeUnknownMessage
		case chat.ReasonKeysUnavailable:
			a.Message = keysUnavailableMessage
		}
	default:
		return Internal, false
	}
	if a.RetryAfter > 0 {
		a.Extra[FieldRetryAfter] = a.RetryAfter
	}
	if len(a.Extra) == 0 {
		a.Extra = nil
	}
	return a, true
}

// HTTPError is For as the library's error, for REST handlers and the
// WebSocket handshake: the status, the body's fields, and the headers
// Retry-After and WWW-Authenticate. An error the domain does not know is
// returned as is: the library logs it and answers a plain 500.
func HTTPError(err error, in string) error {
	if err == nil {
		return nil
	}
	a, ok := For(err, in)
	if !ok {
		return err
	}
	e := &apiserver.Error{Status: a.Status, Message: a.Message, Extra: a.Extra, Cause: err}
	for _, d := range a.Details {
		e.Details = append(e.Details, apiserver.FieldError{Field: d.Field, Message: d.Message})
	}
	if a.RetryAfter > 0 || a.Challenge {
		e.Header = http.Header{}
	}
	if a.RetryAfter > 0 {
		e.Header.Set("Retry-After", strconv.Itoa(a.RetryAfter))
	}
	if a.Challenge {
		e.Header.Set("WWW-Authenticate", "Bearer")
	}
	return e
}

// RetrySeconds rounds a wait up to whole seconds, at least 1: Retry-After
// 0 would invite an immediate retry that fails again.
func RetrySeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// FieldPath prefixes a domain field with where it came from; a field that
// already names its place ("params.name") stays.
func FieldPath(in, field string) string {
	if field == "" {
		return in
	}
	if strings.Contains(field, ".") {
		return field
	}
	return in + "." + field
}

func validationMessage(details []chat.FieldError) string {
	parts := make([]string, 0, len(details))
	for _, d := range details {
		parts = append(parts, d.Field+" "+d.Message)
	}
	if len(parts) == 0 {
		return "Validation failed"
	}
	return "Validation failed: " + strings.Join(parts, "; ")
}
