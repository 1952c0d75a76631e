package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver"

	"github.com/apistack/platform/services/chat/internal/chat"
)

func TestStatusErrorMapsEveryKind(t *testing.T) {
	until := time.Date(2026, 3, 1, 12, 10, 0, 0, time.UTC)
	cases := []struct {
		err     error
		status  int
		extra   map[string]any
		header  string
		details string
	}{
		{chat.Invalid("limit", "must be 1..200"), 400, nil, "", "query.limit"},
		{&chat.Error{Kind: chat.KindUnauthorized, Message: "gone"}, 401, nil, "Bearer", ""},
		{&chat.Error{Kind: chat.KindForbidden, Message: "timed out", Reason: "timed_out", Until: until}, 403,
			map[string]any{"reason": "timed_out", "until": "2026-03-01T12:10:00Z"}, "", ""},
		{&chat.Error{Kind: chat.KindForbidden, Message: "banned", Reason: "banned"}, 403, map[string]any{"reason": "banned", "until": nil}, "", ""},
		{chat.NotFound("command"), 404, nil, "", ""},
		{&chat.Error{Kind: chat.KindConflict, Message: "taken", Reason: "name"}, 409, map[string]any{"reason": "name"}, "", ""},
		{chat.LimitReached(chat.QuotaFilters, 300), 409, map[string]any{"reason": "limit", "limit": 300}, "", ""},
		{&chat.Error{Kind: chat.KindBlocked, Message: "blocked by a links filter", Reason: "links"}, 422, map[string]any{"reason": "links"}, "", "body.message"},
		{&chat.Error{Kind: chat.KindSlowMode, RetryAfter: 2500 * time.Millisecond, Reason: "slow_mode"}, 429,
			map[string]any{"reason": "slow_mode", "retry_after_seconds": 3}, "3", ""},
		{&chat.Error{Kind: chat.KindSlowMode, RetryAfter: time.Millisecond}, 429, map[string]any{"retry_after_seconds": 1}, "1", ""},
		{chat.Unavailable("send", errors.New("dial tcp: refused")), 503, nil, "1", ""},
		{&chat.Error{Kind: chat.KindHistoryGone}, 410, nil, "", ""},
	}
	for _, c := range cases {
		wrapped := fmt.Errorf("layer: %w", c.err)
		got := StatusError(wrapped, inQuery)
		var e *apiserver.Error
		if !errors.As(got, &e) {
			t.Fatalf("%v: not an *apiserver.Error: %T", c.err, got)
		}
		if e.Status != c.status {
			t.Errorf("%v: status %d, want %d", c.err, e.Status, c.status)
		}
		if !errors.Is(got, c.err) {
			t.Errorf("%v: the cause is lost", c.err)
		}
		for k, v := range c.extra {
			if e.Extra[k] != v {
				t.Errorf("%v: %s=%v, want %v", c.err, k, e.Extra[k], v)
			}
		}
		if c.header != "" {
			h := e.Header.Get("Retry-After")
			if c.status == 401 {
				h = e.Header.Get("WWW-Authenticate")
			}
			if h != c.header {
				t.Errorf("%v: header %q, want %q", c.err, h, c.header)
			}
		}
		if c.details != "" && (len(e.Details) == 0 || e.Details[0].Field != c.details) {
			t.Errorf("%v: details %v, want field %s", c.err, e.Details, c.details)
		}
		if c.status == http.StatusServiceUnavailable && e.Message == c.err.Error() {
			t.Errorf("a 503 shows its cause: %q", e.Message)
		}
	}
	// Not a domain error: passed through for the library's logged 500.
	plain := errors.New("boom")
	if got := StatusError(plain, inBody); got != plain {
		t.Fatalf("plain error changed: %v", got)
	}
	if StatusError(nil, inBody) != nil {
		t.Fatal("nil must stay nil")
	}
}
