package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver"
)

// call makes one request over loopback and returns its status, headers and body.
func call(t *testing.T, method, url, body string, header http.Header) (int, http.Header, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, b
}

// inProduction hides internal error text, as a deployed server does.
func inProduction(c *apiserver.Config[struct{}], _ *testOptions) { c.Env = "production" }

// TestEveryLookupErrorIsIPAPIs: every error status a lookup route can answer, over real
// HTTP, has ipapi.co's body (error, reason, message and nothing else), whatever part
// answers it: the handler, the library's validation, keys, the limiter, a recovered
// panic, gin's 405 and the unknown-field 404; a HEAD of each has its status and no body.
// The platform's other routes keep the library's body. In production a 500 does not
// show the cause or the panic.
func TestEveryLookupErrorIsIPAPIs(t *testing.T) {
	db := newFixtureDB()
	keyFile := `{"keys": [{"key": "` + testKey + `", "name": "test", "limit": 1, "window": "1h"}]}`
	s := newTestServer(t, db, withKeys(t, keyFile), limited(1000), inProduction,
		trustedProxies("127.0.0.1/32")) // the caller's routes look up X-Forwarded-For
	ts := httptest.NewServer(s.srv.Handler())
	defer ts.Close()
	ipapi := func(t *testing.T, name string, status int, reason string, h http.Header, body []byte) {
		t.Helper()
		var got map[string]any
		if err := json.Unmarshal(body, &got); err != nil || len(got) != 3 || got["error"] != true || got["reason"] != reason {
			t.Errorf("%s: %d %s, want ipapi.co's body with reason %q", name, status, body, reason)
		}
		if msg, _ := got["message"].(string); msg == "" || strings.Contains(msg, "fixture") || strings.Contains(msg, "disk") {
			t.Errorf("%s: message %q: empty, or the cause shown in production", name, msg)
		}
		if ct := h.Get("Content-Type"); ct != "application/json; charset=utf-8" {
			t.Errorf("%s: Content-Type %q", name, ct)
		}
	}
	bearer := http.Header{"Authorization": {"Basic abc"}}
	jsonBody := http.Header{"Content-Type": {"application/json"}}
	type errCase struct {
		name, method, path, body string
		header                   http.Header
		status                   int
		reason                   string
	}
	cases := []errCase{
		{"bad callback", "GET", "/81.2.69.160/jsonp/?callback=1x", "", nil, 400, "Invalid Request"},
		{"malformed Authorization", "GET", "/json/", "", bearer, 401, "Invalid Key"},
		{"unknown key", "GET", "/81.2.69.160/city/?key=nope", "", nil, 403, "Invalid Key"},
		{"unknown field", "GET", "/81.2.69.160/nosuchfield/", "", nil, 404, "Not Found"},
		{"POST to a lookup", "POST", "/81.2.69.160/json/", `{"a":1}`, jsonBody, 405, "Method Not Allowed"},
		{"POST with a large body", "POST", "/81.2.69.160/xml/", strings.Repeat("x", 2<<20), nil, 405, "Method Not Allowed"},
		{"PUT to a field", "PUT", "/81.2.69.160/city/", "", nil, 405, "Method Not Allowed"},
		{"DELETE of the caller's", "DELETE", "/json/", "", nil, 405, "Method Not Allowed"},
		{"OPTIONS of the caller's field", "OPTIONS", "/country/", "", nil, 405, "Method Not Allowed"},
	}
	for _, tc := range cases {
		for _, method := range []string{tc.method, "HEAD"} {
			if method == "HEAD" && tc.method != "GET" {
				continue // HEAD is a lookup of its own
			}
			status, h, body := call(t, method, ts.URL+tc.path, tc.body, tc.header)
			name := method + " " + tc.name
			if status != tc.status {
				t.Errorf("%s: %d %s, want %d", name, status, body, tc.status)
				continue
			}
			if method == "HEAD" {
				if len(body) != 0 {
					t.Errorf("%s: a body on HEAD", name)
				}
				continue
			}
			ipapi(t, name, status, tc.reason, h, body)
			if status == 405 && h.Get("Allow") == "" {
				t.Errorf("%s: no Allow", name)
			}
		}
	}

	// 500: the database fails, then the handler panics (recovered by the library).
	db.setFail(errBroken)
	status, h, body := call(t, "GET", ts.URL+"/81.2.69.1/json/", "", nil)
	if status != 500 {
		t.Errorf("database error: %d %s", status, body)
	} else {
		ipapi(t, "database error", status, "Internal Error", h, body)
	}
	db.setFail(nil)
	db.mu.Lock()
	db.panics = true
	db.mu.Unlock()
	for _, path := range []string{"/81.2.69.2/json/", "/81.2.69.3/city/", "/81.2.69.4/csv/", "/json/", "/city/"} {
		status, h, body := call(t, "GET", ts.URL+path, "", http.Header{"X-Forwarded-For": {"81.2.69.5"}})
		if status != 500 {
			t.Errorf("panic on %s: %d %s", path, status, body)
			continue
		}
		ipapi(t, "panic on "+path, status, "Internal Error", h, body)
		if strings.Contains(string(body), "panic") {
			t.Errorf("panic on %s: shown in production: %s", path, body)
		}
	}
	db.mu.Lock()
	db.panics = false
	db.mu.Unlock()

	// 429: the key's limit of one.
	for i, want := range []int{200, 429} {
		status, h, body := call(t, "GET", ts.URL+"/81.2.69.160/json/?key="+testKey, "", nil)
		if status != want {
			t.Errorf("keyed lookup %d: %d %s", i, status, body)
		} else if want == 429 {
			ipapi(t, "429", status, "RateLimited", h, body)
		}
	}

	// The platform's other routes keep the library's body.
	for _, tc := range []struct{ method, path string }{{"POST", "/usage"}, {"GET", "/batch"}, {"POST", "/healthz"}, {"GET", "/no/such/route"}} {
		status, _, body := call(t, tc.method, ts.URL+tc.path, "", nil)
		if status < 400 || !strings.Contains(string(body), `"statusCode":`) {
			t.Errorf("%s %s: %d %s, want the library's body", tc.method, tc.path, status, body)
		}
	}
}

// TestLimiterDownIsIPAPIs: the limiter's 503 (Redis unreachable, failing closed) on a
// lookup is in ipapi.co's body too.
func TestLimiterDownIsIPAPIs(t *testing.T) {
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, ContextTimeoutEnabled: true})
	defer down.Close()
	closed := true
	s := newTestServer(t, newFixtureDB(), func(c *apiserver.Config[struct{}], _ *testOptions) {
		c.Redis, c.RateLimitFailClosed, c.Env = down, &closed, "production"
	})
	ts := httptest.NewServer(s.srv.Handler())
	defer ts.Close()
	for _, path := range []string{"/81.2.69.160/json/", "/city/"} {
		status, h, body := call(t, "GET", ts.URL+path, "", nil)
		var got ErrorBody
		if err := json.Unmarshal(body, &got); status != 503 || err != nil || !got.Error || got.Reason != "Service Unavailable" || h.Get("Retry-After") == "" {
			t.Errorf("%s with the limiter down: %d %s, Retry-After %q; want 503 in ipapi.co's body", path, status, body, h.Get("Retry-After"))
		}
	}
}
