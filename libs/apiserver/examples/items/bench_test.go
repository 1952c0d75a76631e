package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/examples/items/plaingin/floor"
	"github.com/apistack/platform/libs/apiserver/testkit"
)

// seeded is the items example with 10 items stored and its defaults
// (metrics, the memory rate limiter with a limit the benchmark never
// reaches), as wrkbench.sh runs it.
func seeded(b testing.TB) http.Handler {
	srv, _, err := NewServer(apiserver.Config[struct{}]{
		APIToken: "bench-token-0123456789", RateLimitMax: 1 << 30,
		Getenv: func(string) string { return "" }, Logger: testkit.Logger(),
	})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	for i := range 10 {
		req := httptest.NewRequest("POST", "/items", strings.NewReader(`{"name":"Widget `+strconv.Itoa(i)+`","price":`+strconv.Itoa(i)+`.5,"tags":["tools","blue"]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer bench-token-0123456789")
		req.RemoteAddr = "192.0.2.1:1"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 201 {
			b.Fatalf("seed: %d %s", rec.Code, rec.Body)
		}
	}
	return h
}

// plain is the floor (plaingin/floor, what wrkbench.sh measures against)
// serving the items lib serves.
func plain(b testing.TB, lib http.Handler) http.Handler {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/items?limit=10", nil)
	req.RemoteAddr = "192.0.2.1:1"
	lib.ServeHTTP(rec, req)
	var stored floor.List
	if err := json.Unmarshal(rec.Body.Bytes(), &stored); err != nil || len(stored.Items) != 10 {
		b.Fatalf("items: %v %s", err, rec.Body)
	}
	return floor.Handler(stored)
}

// BenchmarkListInterleaved alternates the items example and plain gin
// every 200 requests in process and reports the library's throughput
// relative to plain gin (x-plain); profile with -cpuprofile.
func BenchmarkListInterleaved(b *testing.B) {
	lib := seeded(b)
	cases := []struct {
		name string
		h    http.Handler
		took time.Duration
	}{{name: "plain-gin", h: plain(b, lib)}, {name: "items-example", h: lib}}
	req := httptest.NewRequest("GET", "/items?limit=10", nil)
	req.RemoteAddr = "192.0.2.1:1"
	w := &sink{h: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 200 {
		for k := range cases {
			c := &cases[k]
			start := time.Now()
			for j := 0; j < 200; j++ {
				clear(w.h)
				c.h.ServeHTTP(w, req)
			}
			c.took += time.Since(start)
		}
	}
	b.ReportMetric(float64(cases[0].took)/float64(cases[1].took), "x-plain")
}

type sink struct {
	h    http.Header
	code int
}

func (s *sink) Header() http.Header         { return s.h }
func (s *sink) Write(p []byte) (int, error) { return len(p), nil }
func (s *sink) WriteHeader(code int)        { s.code = code }

// TestFloorAnswersAsTheExample: the floor the benchmarks compare against
// does the same work, byte for byte: the same page, the same offsets, a
// 400 where the example answers 400.
func TestFloorAnswersAsTheExample(t *testing.T) {
	lib := seeded(t)
	fl := plain(t, lib)
	for _, q := range []string{"limit=10", "offset=0", "limit=100", "limit=3&offset=4", "offset=9", "offset=50", "limit=0", "limit=101", "offset=-1"} {
		get := func(h http.Handler) *httptest.ResponseRecorder {
			req := httptest.NewRequest("GET", "/items?"+q, nil)
			req.RemoteAddr = "192.0.2.1:1"
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec
		}
		want, got := get(lib), get(fl)
		if got.Code != want.Code {
			t.Errorf("%s: floor %d, example %d", q, got.Code, want.Code)
		}
		if want.Code == http.StatusOK && got.Body.String() != want.Body.String() {
			t.Errorf("%s: floor answers\n%s\nthe example\n%s", q, got.Body, want.Body)
		}
	}
}
