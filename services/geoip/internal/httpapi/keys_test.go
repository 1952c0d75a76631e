package httpapi

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/ratelimit"
	"github.com/apistack/platform/libs/apiserver/redisconn"
	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/services/geoip/internal/apikeys"
	"github.com/apistack/platform/services/geoip/internal/testdb"
)

const testKey = "k-test-0123456789abcdef"

func withKeys(t testing.TB, file string) serverOption {
	set, err := apikeys.Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	return withOptions(func(o *testOptions) { o.Keys = NewKeys(set) })
}

func limited(max int) serverOption {
	return func(c *apiserver.Config[struct{}], _ *testOptions) { c.RateLimitMax, c.RateLimitWindow = max, "1h" }
}

// TestKeyedLookupErrors: how a key is read and refused, each answer in ipapi.co's body.
func TestKeyedLookupErrors(t *testing.T) {
	s := newTestServer(t, newFixtureDB(), withKeys(t, `{"keys": [{"key": "`+testKey+`", "name": "test", "limit": 2, "window": "1m"}]}`), limited(100))
	bearer := func(v string) http.Header { return http.Header{"Authorization": {v}} }
	for _, tc := range []struct {
		name   string
		req    request
		status int
		reason string
		limit  string // RateLimit-Limit
	}{
		{"query key", request{path: "/81.2.69.160/json/?key=" + testKey}, 200, "", "2"},
		{"bearer key", request{path: "/81.2.69.160/city/", header: bearer("Bearer " + testKey)}, 200, "", "2"},
		{"key over its limit", request{path: "/json/?key=" + testKey}, 429, "RateLimited", "2"},
		{"no key: the address's limit", request{path: "/81.2.69.160/json/"}, 200, "", "100"},
		{"unknown key", request{path: "/81.2.69.160/json/?key=nope"}, 403, "Invalid Key", "100"},
		{"malformed Authorization", request{path: "/81.2.69.160/json/", header: bearer("Basic abc")}, 401, "Invalid Key", "100"},
		{"two keys", request{path: "/81.2.69.160/json/?key=" + testKey, header: bearer("Bearer other-0123456789abcdef")}, 400, "Invalid Request", "100"},
		{"key twice", request{path: "/81.2.69.160/json/?key=a&key=b"}, 400, "Invalid Request", "100"},
		{"key beside a callback", request{path: "/81.2.69.160/jsonp/?callback=cb&key=nope"}, 403, "Invalid Key", "100"},
		{"bad callback", request{path: "/81.2.69.160/jsonp/?callback=1x"}, 400, "Invalid Request", "100"},
		{"bad address keeps its body", request{path: "/999.1.1.1/json/"}, 400, "Invalid IP Address", "100"},
	} {
		w := s.do(tc.req)
		if w.Code != tc.status || w.Header().Get("RateLimit-Limit") != tc.limit {
			t.Errorf("%s: %d RateLimit-Limit %q, want %d %q: %s", tc.name, w.Code, w.Header().Get("RateLimit-Limit"), tc.status, tc.limit, w.Body)
			continue
		}
		if tc.reason == "" {
			continue
		}
		got := decodeObject(t, w.Body.Bytes())
		if got["error"] != true || got["reason"] != tc.reason || got["statusCode"] != nil {
			t.Errorf("%s: body %s, want ipapi.co's with reason %q", tc.name, w.Body, tc.reason)
		}
		if tc.status == 429 && w.Header().Get("Retry-After") == "" {
			t.Errorf("%s: no Retry-After", tc.name)
		}
	}
	// Other endpoints keep the platform's body.
	if w := s.do(request{path: "/usage?key=nope"}); w.Code != 403 || !strings.Contains(w.Body.String(), `"statusCode":403`) {
		t.Errorf("/usage unknown key: %d %s", w.Code, w.Body)
	}
	w := s.do(request{path: "/usage", header: bearer("Bearer " + testKey)})
	var u UsageAnswer
	if err := json.Unmarshal(w.Body.Bytes(), &u); err != nil || w.Code != 200 || u != (UsageAnswer{Name: "test", Day: u.Day, Requests: 2, Limited: 1, Limit: 2, Window: "1m0s"}) {
		t.Errorf("/usage = %d %s", w.Code, w.Body)
	}
}

// TestKeysOffIgnoresKeys: without GEOIP_KEYS_FILE a key sent changes nothing, as before
// keys existed, and /usage knows no key.
func TestKeysOffIgnoresKeys(t *testing.T) {
	s := newTestServer(t, newFixtureDB(), limited(100))
	if w := s.get("/81.2.69.160/json/?key=" + testKey); w.Code != 200 || w.Header().Get("RateLimit-Limit") != "100" {
		t.Errorf("keyed lookup without keys: %d %q", w.Code, w.Header().Get("RateLimit-Limit"))
	}
	if w := s.get("/usage?key=" + testKey); w.Code != 403 {
		t.Errorf("/usage without keys: %d %s", w.Code, w.Body)
	}
}

// TestKeysDocumented: /docs names both ways to send a key, as optional, and the 429 and
// every error of a lookup in ipapi.co's shape.
func TestKeysDocumented(t *testing.T) {
	s := newTestServer(t, newFixtureDB(), withKeys(t, `{"keys": []}`))
	var doc map[string]any
	if err := json.Unmarshal(s.get("/openapi.json").Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	schemes := doc["components"].(map[string]any)["securitySchemes"].(map[string]any)
	if q := schemes["apiKey"].(map[string]any); q["in"] != "query" || q["name"] != "key" {
		t.Errorf("apiKey scheme = %v", q)
	}
	if b := schemes["bearerKey"].(map[string]any); b["scheme"] != "bearer" {
		t.Errorf("bearerKey scheme = %v", b)
	}
	op := doc["paths"].(map[string]any)["/{ip}/json/"].(map[string]any)["get"].(map[string]any)
	if sec, _ := json.Marshal(op["security"]); string(sec) != `[{"apiKey":[]},{"bearerKey":[]},{}]` {
		t.Errorf("security = %s", sec)
	}
	r429, _ := json.Marshal(op["responses"].(map[string]any)["429"])
	if !strings.Contains(string(r429), "ErrorBody") || !strings.Contains(string(r429), "Retry-After") {
		t.Errorf("429 = %s", r429)
	}
}

// BenchmarkKeyedLookup compares a lookup with an API key (?key=, limited per key) with
// the same lookup without one (limited per address) through the whole server in
// production mode, both counted by the limiter: in memory, and on a real Redis (the
// deployment with replicas). One address, so the answer comes from the cache and the
// limiting is most of what differs. The two are interleaved in batches of 32 requests,
// so a machine's changing load falls on both alike; it reports each one's median batch
// (ns per request) and the median of the batches' keyed/anonymous ratios. Target (issue
// 29): at most 1.05.
func BenchmarkKeyedLookup(b *testing.B) {
	for _, store := range []string{"memory", "redis"} {
		for _, addrs := range []string{"fixed", "random"} {
			b.Run("store="+store+"/addr="+addrs, func(b *testing.B) { benchKeyed(b, store, addrs == "random") })
		}
	}
}

// benchKeyed runs BenchmarkKeyedLookup on one store; random: a new public address per
// request and no answer cache, so every answer is built (the other end from a cache hit).
func benchKeyed(b *testing.B, store string, random bool) {
	opts := []serverOption{
		withKeys(b, `{"keys": [{"key": "`+testKey+`", "name": "bench", "limit": 100000000, "window": "1h"}]}`),
		func(c *apiserver.Config[struct{}], o *testOptions) {
			c.RateLimitMax, c.RateLimitWindow = 1<<30, "1h"
			c.Getenv = func(k string) string {
				if k == "APP_ENV" {
					return "production"
				}
				return ""
			}
			if random {
				o.CacheSize = -1
			}
			if store == "redis" {
				rds := redistest.Start(b)
				client, err := redisconn.OpenWith(rds.URL(), redisconn.Options{Timeout: ratelimit.DefaultRedisTimeout})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = client.Close() })
				c.Redis = client
			}
		},
	}
	s := newTestServer(b, testdb.EmbeddedSample(b), opts...)
	h := s.srv.Handler()
	s.get("/8.8.8.8/json/") // time zones and the answer cache, once
	// The requests are made once: parsing the longer URL is the client's cost. Both
	// variants ask the same addresses in the same order.
	n := 1
	if random {
		n = 4096
	}
	r := rand.New(rand.NewPCG(1, 2))
	anonReqs, keyedReqs := make([]*http.Request, n), make([]*http.Request, n)
	for i := range n {
		path := "/8.8.8.8/json/"
		if random {
			path = fmt.Sprintf("/%d.%d.%d.%d/json/", 1+r.IntN(222), r.IntN(256), r.IntN(256), r.IntN(256))
		}
		anonReqs[i] = httptest.NewRequest(http.MethodGet, path, nil)
		keyedReqs[i] = httptest.NewRequest(http.MethodGet, path+"?key="+testKey, nil)
		anonReqs[i].RemoteAddr, keyedReqs[i].RemoteAddr = "203.0.113.1:1", "203.0.113.1:1"
	}
	next := 0
	batch := func(reqs []*http.Request, from int) time.Duration {
		start := time.Now()
		for j := range 32 {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, reqs[(from+j)%len(reqs)])
			if w.Code != http.StatusOK {
				b.Fatalf("%d %s", w.Code, w.Body)
			}
		}
		return time.Since(start) / 32
	}
	var anon, keyed, ratios []float64
	for i := 0; b.Loop(); i++ {
		// Alternate which goes first, so neither always follows the other.
		var a, k time.Duration
		if i%2 == 0 {
			a, k = batch(anonReqs, next), batch(keyedReqs, next)
		} else {
			k, a = batch(keyedReqs, next), batch(anonReqs, next)
		}
		next += 32
		anon, keyed = append(anon, float64(a)), append(keyed, float64(k))
		ratios = append(ratios, float64(k)/float64(a))
	}
	b.ReportMetric(median(anon), "anon-ns/req")
	b.ReportMetric(median(keyed), "keyed-ns/req")
	b.ReportMetric(median(ratios), "keyed/anon")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// TestQueryKey: ?key= is read as url.ParseQuery reads it, wherever it stands among the
// other parameters, and given twice it is refused.
func TestQueryKey(t *testing.T) {
	for _, tc := range []struct {
		raw, key string
		found    bool
		fails    bool
	}{
		{"", "", false, false},
		{"callback=cb", "", false, false},
		{"key=abc", "abc", true, false},
		{"callback=cb&key=a%2Bb", "a+b", true, false},
		{"key=abc&callback=cb", "abc", true, false},
		{"&&key=abc&", "abc", true, false},
		{"monkey=abc", "", false, false},
		{"xkey=1&key=2", "2", true, false},
		{"key=", "", true, false},
		{"key=a&key=b", "", false, true},
		{"key=%zz", "", false, true},
	} {
		key, found, err := queryKey(tc.raw)
		if key != tc.key || found != tc.found || (err != nil) != tc.fails {
			t.Errorf("queryKey(%q) = %q %v %v, want %q %v, error %v", tc.raw, key, found, err, tc.key, tc.found, tc.fails)
		}
	}
}
