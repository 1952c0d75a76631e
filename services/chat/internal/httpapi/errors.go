package httpapi

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/apistack/platform/libs/apiserver"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// Where a request's fields come from, for the "details" of a 400: the
// domain names a field ("limit"), the API says where it was ("query.limit").
const (
	inBody   = "body"
	inQuery  = "query"
	inParams = "params"
)

// StatusError turns an error from chat.Service into the HTTP answer. It is
// the one place where domain errors meet statuses:
//
//	invalid      400 (details name the fields)
//	unauthorized 401 (WWW-Authenticate: Bearer)
//	forbidden    403 (reason; until: the end of a timeout, null for a ban)
//	not_found    404
//	conflict     409 (reason; limit when a quota was reached)
//	blocked      422 (reason = filter kind; details say why)
//	slow_mode    429 (Retry-After, retry_after_seconds)
//	unavailable  503 (Retry-After: 1; nothing was stored)
//	history_gone 410
//
// Anything else is returned as is: the library logs it and answers a
// plain 500. in says where the request's fields came from (body, query,
// params) so the details read like the library's own.
func StatusError(err error, in string) error {
	if err == nil {
		return nil
	}
	de, ok := chat.AsError(err)
	if !ok {
		return err
	}
	msg := de.Message
	if msg == "" {
		msg = strings.ReplaceAll(string(de.Kind), "_", " ")
	}
	switch de.Kind {
	case chat.KindInvalid:
		details := make([]apiserver.FieldError, 0, len(de.Fields))
		for _, f := range de.Fields {
			details = append(details, apiserver.FieldError{Field: fieldPath(in, f.Field), Message: f.Message})
		}
		e := apiserver.ValidationError(details...)
		e.Message = validationMessage(details)
		e.Cause = err
		return e
	case chat.KindUnauthorized:
		e := apiserver.UnauthorizedError(msg)
		e.Cause = err
		return e
	case chat.KindForbidden:
		e := &apiserver.Error{Status: http.StatusForbidden, Message: msg, Cause: err}
		if de.Reason != "" {
			e = e.With("reason", de.Reason)
		}
		switch {
		case !de.Until.IsZero():
			e = e.With("until", de.Until.UTC().Format(time.RFC3339))
		case de.Reason == "banned":
			e = e.With("until", nil) // no end: until a moderator unbans
		}
		return e
	case chat.KindNotFound:
		return &apiserver.Error{Status: http.StatusNotFound, Message: msg, Cause: err}
	case chat.KindConflict:
		e := &apiserver.Error{Status: http.StatusConflict, Message: msg, Cause: err}
		if de.Reason != "" {
			e = e.With("reason", de.Reason)
		}
		if de.Limit > 0 {
			e = e.With("limit", de.Limit)
		}
		return e
	case chat.KindBlocked:
		e := &apiserver.Error{Status: http.StatusUnprocessableEntity, Message: msg, Cause: err,
			Details: []apiserver.FieldError{{Field: fieldPath(inBody, "message"), Message: msg + "; nothing was stored"}}}
		if de.Reason != "" {
			e = e.With("reason", de.Reason)
		}
		return e
	case chat.KindSlowMode:
		secs := retrySeconds(de.RetryAfter)
		e := &apiserver.Error{Status: http.StatusTooManyRequests, Message: msg, Cause: err,
			Header: http.Header{"Retry-After": {strconv.Itoa(secs)}}}
		reason := de.Reason
		if reason == "" {
			reason = "slow_mode"
		}
		return e.With("reason", reason).With("retry_after_seconds", secs)
	case chat.KindUnavailable:
		// The cause (which Redis call failed) is logged by the library,
		// never shown.
		return &apiserver.Error{Status: http.StatusServiceUnavailable,
			Message: "The chat store is unavailable; nothing was changed. Retry shortly.",
			Header:  http.Header{"Retry-After": {"1"}}, Cause: err}
	case chat.KindHistoryGone:
		return &apiserver.Error{Status: http.StatusGone, Message: msg, Cause: err}
	}
	return err
}

// retrySeconds rounds a wait up to whole seconds, at least 1: Retry-After
// 0 would invite an immediate retry that fails again.
func retrySeconds(d time.Duration) int {
	s := int(math.Ceil(d.Seconds()))
	if s < 1 {
		s = 1
	}
	return s
}

// fieldPath prefixes a domain field with where it came from; a field that
// already names its place ("params.name") stays.
func fieldPath(in, field string) string {
	if field == "" {
		return in
	}
	if strings.Contains(field, ".") {
		return field
	}
	return in + "." + field
}

func validationMessage(details []apiserver.FieldError) string {
	parts := make([]string, 0, len(details))
	for _, d := range details {
		parts = append(parts, d.Field+" "+d.Message)
	}
	if len(parts) == 0 {
		return "Validation failed"
	}
	return "Validation failed: " + strings.Join(parts, "; ")
}

// errUnavailable is what an authenticated request gets when its token could
// not be checked because the store is down.
var errUnavailable = chat.Unavailable("authenticate", errors.New("the token could not be checked"))
