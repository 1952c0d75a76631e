package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestLookupErrorsOnTheBinary: through the real binary, the errors of a lookup route
// that no handler answers (another method's 405, an unknown field's 404) are ipapi.co's
// body, and the platform's own routes keep the library's.
func TestLookupErrorsOnTheBinary(t *testing.T) {
	p := startGeoip(t, nil)
	for _, tc := range []struct {
		method, path string
		status       int
		ipapi        bool
	}{
		{"POST", "/8.8.8.8/json/", 405, true},
		{"PUT", "/city/", 405, true},
		{"DELETE", "/8.8.8.8/country/", 405, true},
		{"GET", "/8.8.8.8/nosuchfield/", 404, true},
		{"POST", "/healthz", 405, false},
		{"GET", "/usage", 401, false},
	} {
		req, _ := http.NewRequest(tc.method, p.Base+tc.path, strings.NewReader(`{"ip":"8.8.8.8"}`))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		name := tc.method + " " + tc.path
		switch {
		case res.StatusCode != tc.status:
			t.Errorf("%s: %d %s, want %d", name, res.StatusCode, b, tc.status)
		case tc.ipapi && (body["error"] != true || body["reason"] == nil || body["statusCode"] != nil):
			t.Errorf("%s: %s, want ipapi.co's body", name, b)
		case !tc.ipapi && body["statusCode"] != float64(tc.status):
			t.Errorf("%s: %s, want the library's body", name, b)
		}
	}
}
