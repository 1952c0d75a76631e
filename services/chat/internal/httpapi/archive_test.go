package httpapi_test

import (
	"strings"
	"testing"
)

// TestReplayWithoutAnArchive: replay by time says plainly that this
// deployment keeps no archive, and checks its parameters first.
func TestReplayWithoutAnArchive(t *testing.T) {
	s := newStack(t, engine{name: "memory"}, stackOptions{})
	const path = "/api/v1/channels/general/messages"
	m := errorBody(t, s.call("GET", path+"?from=2026-12-06T20:14:00Z&to=2026-12-06T20:15:00Z", "", nil), 404)
	if m["reason"] != "no_archive" {
		t.Fatalf("reason %v, want no_archive: %v", m["reason"], m)
	}
	for q, field := range map[string]string{
		"?to=2026-12-06T20:15:00Z":                                     "from",
		"?from=yesterday&to=2026-12-06T20:15:00Z":                      "from",
		"?from=2026-12-06T20:15:00Z&to=2026-12-06T20:14:00Z":           "to",
		"?from=2026-10-01T00:00:00Z&to=2026-12-06T20:14:00Z":           "to",
		"?from=2026-12-06T20:14:00Z&to=2026-12-06T20:15:00Z&limit=201": "limit",
	} {
		r := s.call("GET", path+q, "", nil)
		errorBody(t, r, 400)
		if !strings.Contains(string(r.Raw), field) {
			t.Errorf("%s: the error does not name %s: %s", q, field, r.Raw)
		}
	}
}
