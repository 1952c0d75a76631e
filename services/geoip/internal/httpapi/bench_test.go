package httpapi

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/testkit"
	"github.com/apistack/platform/services/geoip/internal/dbfile"
	"github.com/apistack/platform/services/geoip/internal/testdb"
	"github.com/apistack/platform/services/geoip/internal/tz"
)

// BenchmarkExplicitJSON is one /{ip}/json/ request through the whole server (library
// middleware included) on the embedded sample, with random public IPv4 addresses so the
// answer cache mostly misses, as in the load benchmark. With GEOIP_BENCH_DB naming a BIN
// (the full DB-IP one of bench/scripts/geoip-http.sh) it runs on that file too.
func BenchmarkExplicitJSON(b *testing.B) {
	dbs := []struct {
		name string
		db   func(testing.TB) DB
	}{{"sample", func(tb testing.TB) DB { return testdb.EmbeddedSample(tb) }}}
	if path := os.Getenv("GEOIP_BENCH_DB"); path != "" {
		dbs = append(dbs, struct {
			name string
			db   func(testing.TB) DB
		}{"bin", func(tb testing.TB) DB { return openBenchDB(tb, path) }})
	}
	for _, d := range dbs {
		for _, cache := range []int{-1, 1 << 16} {
			b.Run(fmt.Sprintf("db=%s/cache=%d", d.name, cache), func(b *testing.B) {
				s := newTestServer(b, d.db(b), withOptions(func(o *testOptions) { o.CacheSize = cache }), production)
				r := rand.New(rand.NewPCG(1, 2))
				paths := make([]string, 1<<16)
				for i := range paths {
					paths[i] = fmt.Sprintf("/%d.%d.%d.%d/json/", 1+r.IntN(222), r.IntN(256), r.IntN(256), r.IntN(256))
				}
				h := s.srv.Handler()
				s.get("/8.8.8.8/json/") // loads the time zone polygons, once per process
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					req := httptest.NewRequest(http.MethodGet, paths[i%len(paths)], nil)
					req.RemoteAddr = "127.0.0.1:1"
					w := httptest.NewRecorder()
					h.ServeHTTP(w, req)
					i++
				}
			})
		}
	}
}

// production runs the server as bench/scripts/geoip-http.sh does: in production (outside
// it the library also decodes every JSON answer to check it, which would dominate the
// figures) with the loopback load generator exempt from the rate limit.
func production(c *apiserver.Config[struct{}], _ *testOptions) {
	c.RateLimitAllow = []string{"127.0.0.1"}
	c.Getenv = func(k string) string {
		if k == "APP_ENV" {
			return "production"
		}
		return ""
	}
}

// openBenchDB opens a BIN as the service does, once per process.
func openBenchDB(tb testing.TB, path string) DB {
	benchDBOnce.Do(func() {
		benchDB, benchDBErr = dbfile.New(dbfile.Config{Path: path, TimeZones: tz.New(), PollInterval: -1, Logger: testkit.Logger()})
	})
	if benchDBErr != nil {
		tb.Fatal(benchDBErr)
	}
	return benchDB
}

var (
	benchDBOnce sync.Once
	benchDB     *dbfile.Manager
	benchDBErr  error
)

// BenchmarkAnswerJSON is geoip's own part of an uncached /{ip}/json/ answer, without the
// HTTP server and the library: parsing the address, the lookup, the record, its JSON and
// ETag, with the answer cache off. Its allocations are those of one uncached answer.
// random: random public IPv4 addresses, each lookup reaching memory all over the 300 MB
// file; one: the same address every time, the file's bytes it reads in the CPU's caches,
// so the difference is what the lookups wait for memory.
func BenchmarkAnswerJSON(b *testing.B) {
	path := os.Getenv("GEOIP_BENCH_DB")
	if path == "" {
		b.Skip("GEOIP_BENCH_DB (a BIN, e.g. the full DB-IP one) is not set")
	}
	s := newTestServer(b, openBenchDB(b, path), withOptions(func(o *testOptions) { o.CacheSize = -1 }), production)
	r := rand.New(rand.NewPCG(1, 2))
	random := make([]string, 1<<16)
	for i := range random {
		random[i] = fmt.Sprintf("%d.%d.%d.%d", 1+r.IntN(222), r.IntN(256), r.IntN(256), r.IntN(256))
	}
	for _, c := range []struct {
		name string
		ips  []string
	}{{"random", random}, {"one", []string{"5.6.7.8"}}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				ans, err := s.api.serveExplicit(c.ips[i%len(c.ips)], formats[0], "")
				if err != nil || len(ans.Raw) == 0 || ans.Header.ETag == "" {
					b.Fatal(ans, err)
				}
				i++
			}
		})
	}
}

// BenchmarkAnswerJSONCached is BenchmarkAnswerJSON for one address asked again and again:
// the answer cache's hit path.
func BenchmarkAnswerJSONCached(b *testing.B) {
	path := os.Getenv("GEOIP_BENCH_DB")
	if path == "" {
		b.Skip("GEOIP_BENCH_DB (a BIN, e.g. the full DB-IP one) is not set")
	}
	s := newTestServer(b, openBenchDB(b, path), production)
	b.ReportAllocs()
	for b.Loop() {
		ans, err := s.api.serveExplicit("8.8.8.8", formats[0], "")
		if err != nil || len(ans.Raw) == 0 || ans.Header.ETag == "" {
			b.Fatal(ans, err)
		}
	}
}

// The benchmark's second floor (bench/internal/geoipfloor, AnswerHeaders) sends the headers
// of an explicit address's JSON answer with values of their length, so that both answers
// are the same bytes: this is that header set, in production, for the loopback load
// generator exempt from the rate limit, as bench/scripts/geoip-http.sh runs it. A header
// added here belongs in the floor's list too.
func TestExplicitAnswerHeadersAreTheFloors(t *testing.T) {
	s := newTestServer(t, testdb.EmbeddedSample(t), production)
	req := httptest.NewRequest(http.MethodGet, "/81.2.69.1/json/", nil)
	req.RemoteAddr = "127.0.0.1:1"
	w := httptest.NewRecorder()
	s.srv.Handler().ServeHTTP(w, req)
	want := map[string]string{ // header: its value, or its shape
		"Content-Type": "application/json; charset=utf-8", "X-Content-Type-Options": "nosniff",
		"Cache-Control": "public, max-age=3600", "X-Request-Id": "id", "Etag": "etag",
	}
	got := w.Result().Header
	if w.Code != http.StatusOK || len(got) != len(want) {
		t.Fatalf("status %d, headers %v; want exactly %v", w.Code, got, want)
	}
	for k, v := range want {
		g := got.Get(k)
		switch v {
		case "id":
			if len(g) < 14 || g[12] != '-' {
				t.Errorf("%s: %q, want 12 hex digits, '-', a counter", k, g)
			}
		case "etag":
			if len(g) != 27 || g[0] != '"' || g[9] != '-' {
				t.Errorf("%s: %q, want \"<8 hex>-<16 hex>\"", k, g)
			}
		default:
			if g != v {
				t.Errorf("%s: %q, want %q", k, g, v)
			}
		}
	}
}
