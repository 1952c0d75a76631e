package apiserver_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/testkit"
)

// perRequest are the headers that differ between two answers to the same request.
var perRequest = []string{"Date", "X-Request-Id"}

func do(t *testing.T, client *http.Client, method, url, xff string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

// TestHeadAnswersAsGetOnBuiltins: HEAD on the built-in routes answers what
// GET answers (status, headers, Content-Length where GET has one) without a
// body, is counted by the metrics under its own method, and is not limited.
func TestHeadAnswersAsGetOnBuiltins(t *testing.T) {
	s, err := apiserver.New(apiserver.Config[struct{}]{
		Getenv:          func(string) string { return "" },
		Logger:          testkit.Logger(),
		RateLimitMax:    1,
		RateLimitWindow: "1h",
		TrustedProxies:  []string{"127.0.0.1", "::1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	// A document larger than net/http's 2 KB buffer, which it would chunk.
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/items", Description: strings.Repeat("Lists items. ", 300)},
		func(c *apiserver.Context[struct{}], in *listIn) (listOut, error) { return listOut{}, nil })
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	// No redirects followed, no gzip asked for (Go's client asks for it on GET only).
	client := &http.Client{
		Transport:     &http.Transport{DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/openapi.json", "/docs", "/docs/",
		"/docs/index.html", "/docs/swagger-ui.css", "/docs/doc.json"} {
		get, body := do(t, client, "GET", ts.URL+path, "")
		head, headBody := do(t, client, "HEAD", ts.URL+path, "")
		if get.StatusCode/100 != 2 && get.StatusCode != http.StatusFound {
			t.Errorf("GET %s: %d", path, get.StatusCode)
		}
		if head.StatusCode != get.StatusCode || len(headBody) != 0 {
			t.Errorf("HEAD %s: %d with %d body bytes; GET answered %d", path, head.StatusCode, len(headBody), get.StatusCode)
			continue
		}
		for k := range mergeKeys(get.Header, head.Header) {
			if slices.Contains(perRequest, k) || k == "Content-Length" && path == "/metrics" {
				continue // the counters of /metrics change between the two
			}
			if g, h := get.Header.Values(k), head.Header.Values(k); !slices.Equal(g, h) {
				t.Errorf("%s header %s: GET %q, HEAD %q", path, k, g, h)
			}
		}
		if get.ContentLength >= 0 && int64(len(body)) != get.ContentLength {
			t.Errorf("GET %s: %d bytes, Content-Length %d", path, len(body), get.ContentLength)
		}
	}
	if _, cl := do(t, client, "GET", ts.URL+"/openapi.json", ""); len(cl) < 4096 {
		t.Fatalf("the document is %d bytes: the test wants one larger than net/http's buffer", len(cl))
	}
	if head, _ := do(t, client, "HEAD", ts.URL+"/openapi.json", ""); head.ContentLength < 4096 {
		t.Errorf("HEAD /openapi.json: Content-Length %d", head.ContentLength)
	}
	// Built-ins are not rate limited, whatever the method.
	for range 3 {
		if res, _ := do(t, client, "HEAD", ts.URL+"/healthz", "203.0.113.9"); res.StatusCode != http.StatusOK {
			t.Fatalf("HEAD /healthz from a limited client: %d", res.StatusCode)
		}
	}
	_, metrics := do(t, client, "GET", ts.URL+"/metrics", "")
	if want := `http_requests_total{code="200",method="HEAD",route="/healthz"} 4`; !strings.Contains(string(metrics), want) {
		t.Errorf("metrics lack %s", want)
	}
}

// TestHeadCountsAgainstTheRateLimit: a HEAD on a GET endpoint costs what the
// GET costs, so it is counted and limited as one.
func TestHeadCountsAgainstTheRateLimit(t *testing.T) {
	s, err := apiserver.New(apiserver.Config[struct{}]{
		Getenv:          func(string) string { return "" },
		Logger:          testkit.Logger(),
		RateLimitMax:    2,
		RateLimitWindow: "1h",
		TrustedProxies:  []string{"127.0.0.1", "::1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/items"},
		func(c *apiserver.Context[struct{}], in *listIn) (listOut, error) { return listOut{}, nil })
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	for i, want := range []int{200, 200, 429} {
		res, body := do(t, http.DefaultClient, "HEAD", ts.URL+"/items", "203.0.113.7")
		if res.StatusCode != want || len(body) != 0 {
			t.Fatalf("HEAD %d: %d with %d body bytes, want %d", i+1, res.StatusCode, len(body), want)
		}
	}
	if res, _ := do(t, http.DefaultClient, "GET", ts.URL+"/items", "203.0.113.7"); res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("GET after two HEADs: %d, want 429", res.StatusCode)
	}
}

func mergeKeys(a, b http.Header) map[string]bool {
	m := map[string]bool{}
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return m
}
