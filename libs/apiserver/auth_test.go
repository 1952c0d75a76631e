package apiserver_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/apistack/platform/libs/apiserver"
)

// TestBearerToken pins the exported header rule: the one authenticated
// endpoints use, and handlers with an optional token reuse.
func TestBearerToken(t *testing.T) {
	const malformed = "Invalid authorization header format. Expected: Bearer <token>"
	for _, tc := range []struct {
		header, token, message string
	}{
		{"", "", "Missing authorization header"},
		{"Bearer abc", "abc", ""},
		{"bearer abc", "abc", ""},
		{"BEARER abc", "abc", ""},
		{"Bearer", "", malformed},
		{"Bearer ", "", malformed},
		{"Bearer  abc", "", malformed},
		{"Bearer a b", "", malformed},
		{"Bearer a\tb", "", malformed},
		{"Token abc", "", malformed},
		{"Basic YWxhZGRpbjpvcGVuc2VzYW1l", "", malformed},
		{"InvalidFormat", "", malformed},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		token, err := apiserver.BearerToken(r)
		if tc.message == "" {
			if err != nil || token != tc.token {
				t.Errorf("%q: token %q, err %v; want %q", tc.header, token, err, tc.token)
			}
			continue
		}
		if err == nil || token != "" {
			t.Errorf("%q: token %q, no error; want 401 %q", tc.header, token, tc.message)
			continue
		}
		if err.Status != http.StatusUnauthorized || err.Message != tc.message || err.Header.Get("WWW-Authenticate") != "Bearer" {
			t.Errorf("%q: %d %q %v; want 401 %q with WWW-Authenticate: Bearer", tc.header, err.Status, err.Message, err.Header, tc.message)
		}
	}
}
