package apiserver_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/libs/apiserver/testkit"
)

// Issue 13, finding 10.

func TestEveryAnswerCarriesNosniff(t *testing.T) {
	s := newFixture(t, nil, func(c *apiserver.Config[user]) { c.RateLimitMax = 3 })
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	for _, r := range []struct{ method, path string }{
		{"GET", "/healthz"}, {"GET", "/readyz"}, {"GET", "/metrics"}, {"GET", "/openapi.json"},
		{"GET", "/docs"}, {"GET", "/docs/index.html"}, {"GET", "/docs/doc.json"},
		{"GET", "/nope"}, {"DELETE", "/healthz"}, {"OPTIONS", "/items"},
		{"GET", "/items?limit=0"}, {"GET", "/items"}, {"GET", "/items"}, {"GET", "/items"}, // the last one is a 429
	} {
		req, _ := http.NewRequest(r.method, ts.URL+r.path, nil)
		req.Header.Set("Origin", "https://example.com")
		res, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s %s (%d): X-Content-Type-Options %q", r.method, r.path, res.StatusCode, got)
		}
	}
}

func TestDocsDocJSONIsTheOpenAPIDocument(t *testing.T) {
	s := newFixture(t, nil, nil)
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	status, body := get(t, ts.URL+"/docs/doc.json")
	if status != http.StatusOK || !strings.Contains(body, `"openapi":"3.1.0"`) {
		t.Fatalf("GET /docs/doc.json: %d %.100q", status, body)
	}
}

// ipv6Server limits every client to 2 requests, its IPv6 clients by
// prefix (bits; 0 leaves the default), and believes X-Forwarded-For from
// loopback so the test can speak for many clients.
func ipv6Server(t *testing.T, redisURL string, env map[string]string) string {
	t.Helper()
	s, err := apiserver.New(apiserver.Config[struct{}]{
		Getenv:          func(k string) string { return env[k] },
		Logger:          testkit.Logger(),
		RedisURL:        redisURL,
		RateLimitMax:    2,
		RateLimitWindow: "1h",
		TrustedProxies:  []string{"127.0.0.1", "::1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/items"},
		func(c *apiserver.Context[struct{}], in *listIn) (listOut, error) {
			return listOut{Limit: in.Limit}, nil
		})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts.URL + "/items"
}

// limitRows are requests in order and whether each is allowed.
type limitRow struct {
	client string
	ok     bool
}

func checkLimits(t *testing.T, url string, rows []limitRow) {
	t.Helper()
	for i, r := range rows {
		status, body := getAs(t, url, r.client)
		if (status == http.StatusOK) != r.ok || status != http.StatusOK && status != http.StatusTooManyRequests {
			t.Fatalf("request %d from %s: %d %s, want allowed=%v", i, r.client, status, body, r.ok)
		}
	}
}

var (
	// Default /64: addresses in one /64 share a counter.
	perSlash64 = []limitRow{
		{"2001:db8:1:2::a", true}, {"2001:db8:1:2:ffff:ffff:ffff:ffff", true},
		{"2001:db8:1:2::b", false},
		{"2001:db8:1:3::a", true}, // another /64
		// IPv4 (and IPv4-mapped IPv6) is per address.
		{"203.0.113.1", true}, {"::ffff:203.0.113.1", true}, {"203.0.113.1", false}, {"203.0.113.2", true},
	}
	perAddress = []limitRow{
		{"2001:db8:1:2::a", true}, {"2001:db8:1:2::a", true}, {"2001:db8:1:2::a", false},
		{"2001:db8:1:2::b", true},
	}
	perSlash48 = []limitRow{
		{"2001:db8:1:2::a", true}, {"2001:db8:1:3::a", true}, {"2001:db8:1:ffff::a", false},
		{"2001:db8:2::a", true},
	}
)

func TestIPv6ClientsAreLimitedPerPrefix(t *testing.T) {
	t.Run("memory, /64 by default", func(t *testing.T) { checkLimits(t, ipv6Server(t, "", nil), perSlash64) })
	t.Run("memory, /128", func(t *testing.T) {
		checkLimits(t, ipv6Server(t, "", map[string]string{"RATE_LIMIT_IPV6_PREFIX": "128"}), perAddress)
	})
	t.Run("memory, /48", func(t *testing.T) {
		checkLimits(t, ipv6Server(t, "", map[string]string{"RATE_LIMIT_IPV6_PREFIX": "/48"}), perSlash48)
	})
	rds := redistest.Start(t)
	t.Run("redis, /64 by default", func(t *testing.T) { checkLimits(t, ipv6Server(t, rds.URL(), nil), perSlash64) })
	t.Run("redis, /48", func(t *testing.T) {
		checkLimits(t, ipv6Server(t, rds.URL(), map[string]string{"RATE_LIMIT_IPV6_PREFIX": "48"}), perSlash48)
	})
}

func TestIPv6PrefixIsValidated(t *testing.T) {
	for _, v := range []string{"0", "129", "abc", "-1"} {
		_, err := apiserver.New(apiserver.Config[struct{}]{
			Getenv: func(k string) string { return map[string]string{"RATE_LIMIT_IPV6_PREFIX": v}[k] },
			Logger: testkit.Logger(),
		})
		if err == nil || !strings.Contains(err.Error(), "RATE_LIMIT_IPV6_PREFIX") {
			t.Errorf("RATE_LIMIT_IPV6_PREFIX=%s: %v", v, err)
		}
	}
}

// ClientKey is the limiter's name for a caller, which an application's own
// per-client limits use (chat's sockets per address).
func TestClientKeyIsTheLimitersName(t *testing.T) {
	for _, c := range []struct {
		prefix string // RATE_LIMIT_IPV6_PREFIX
		peer   string // X-Forwarded-For from a trusted proxy
		want   string
	}{
		{"", "2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"48", "2001:db8:1:2:3:4:5:6", "2001:db8:1::/48"},
		{"128", "2001:db8:1:2:3:4:5:6", "2001:db8:1:2:3:4:5:6"},
		{"", "203.0.113.7", "203.0.113.7"},
		{"", "::ffff:203.0.113.7", "203.0.113.7"},
	} {
		s, err := apiserver.New(apiserver.Config[struct{}]{
			Getenv:         func(k string) string { return map[string]string{"RATE_LIMIT_IPV6_PREFIX": c.prefix}[k] },
			Logger:         testkit.Logger(),
			TrustedProxies: []string{"192.0.2.1"},
		})
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest("GET", "/", nil)
		req.RemoteAddr = "192.0.2.1:4000"
		req.Header.Set("X-Forwarded-For", c.peer)
		if got := s.ClientKey(req); got != c.want {
			t.Errorf("RATE_LIMIT_IPV6_PREFIX=%q, client %s: key %q, want %q", c.prefix, c.peer, got, c.want)
		}
	}
}
