package apiserver_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/apistack/platform/libs/apiserver"
)

type benchItem struct {
	ID    string  `json:"id"`
	Name  string  `json:"name" minLength:"1" maxLength:"100"`
	Price float64 `json:"price" minimum:"0"`
}

type benchList struct {
	Items []benchItem `json:"items"`
	Total int         `json:"total" minimum:"0"`
}

type benchIn struct {
	Limit  int `query:"limit" minimum:"1" maximum:"100" default:"10"`
	Offset int `query:"offset" minimum:"0" default:"0"`
}

var benchItems = func() []benchItem {
	items := make([]benchItem, 100)
	for i := range items {
		items[i] = benchItem{ID: strconv.Itoa(i + 1), Name: "Item " + strconv.Itoa(i+1), Price: float64(i) * 1.25}
	}
	return items
}()

func page(limit, offset int) benchList {
	end := min(offset+limit, len(benchItems))
	if offset > end {
		offset = end
	}
	return benchList{Items: benchItems[offset:end], Total: len(benchItems)}
}

// librarySrv is GET /items declared through the library. logLevel "info"
// writes an access line per request (to io.Discard); "warn" does not.
func librarySrv(b *testing.B, logLevel string, metrics bool, limit *apiserver.RateLimit) http.Handler {
	s, err := apiserver.New(apiserver.Config[struct{}]{
		Getenv:         func(string) string { return "" },
		Env:            "production",
		RateLimitMax:   1 << 30,
		MetricsEnabled: &metrics,
		Logger:         slog.New(slog.NewJSONHandler(discard{}, &slog.HandlerOptions{Level: level(logLevel)})),
	})
	if err != nil {
		b.Fatal(err)
	}
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/items", RateLimit: limit},
		func(c *apiserver.Context[struct{}], in *benchIn) (benchList, error) {
			return page(in.Limit, in.Offset), nil
		})
	return s.Handler()
}

// tracedSrv is librarySrv("warn", true, nil) with tracing on, sampling ratio of new
// traces, exporting to a loopback collector that accepts and drops every batch.
func tracedSrv(b *testing.B, ratio string) http.Handler {
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	b.Cleanup(collector.Close)
	vars := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL, "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": ratio}
	s, err := apiserver.New(apiserver.Config[struct{}]{
		Getenv:       func(k string) string { return vars[k] },
		Env:          "production",
		RateLimitMax: 1 << 30,
		Logger:       slog.New(slog.NewJSONHandler(discard{}, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Stop(context.Background()) })
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/items"},
		func(c *apiserver.Context[struct{}], in *benchIn) (benchList, error) {
			return page(in.Limit, in.Offset), nil
		})
	return s.Handler()
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func level(s string) slog.Level {
	if s == "info" {
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

// plainGin is the same endpoint written by hand on gin: parse, check
// bounds, answer 400 with a message, encode with c.JSON.
func plainGin() http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.GET("/items", func(c *gin.Context) {
		limit, offset := 10, 0
		if v, ok := c.GetQuery("limit"); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 100 {
				c.JSON(http.StatusBadRequest, gin.H{"statusCode": 400, "error": "Bad Request", "message": "limit must be an integer from 1 to 100"})
				return
			}
			limit = n
		}
		if v, ok := c.GetQuery("offset"); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				c.JSON(http.StatusBadRequest, gin.H{"statusCode": 400, "error": "Bad Request", "message": "offset must be a non-negative integer"})
				return
			}
			offset = n
		}
		c.JSON(http.StatusOK, page(limit, offset))
	})
	return r
}

// BenchmarkItems compares GET /items?limit=10&offset=0 through the library
// with the hand-written gin handler, in one run (docs/benchmarks.md).
func BenchmarkItems(b *testing.B) {
	cases := []struct {
		name string
		h    http.Handler
	}{
		{"plain-gin", plainGin()},
		{"library-bare", librarySrv(b, "warn", false, apiserver.NoRateLimit)},
		{"library", librarySrv(b, "warn", true, nil)},
		{"library-accesslog", librarySrv(b, "info", true, nil)},
		{"library-traced-0pct", tracedSrv(b, "0")},
		{"library-traced-10pct", tracedSrv(b, "0.1")},
		{"library-traced-100pct", tracedSrv(b, "1")},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				req := httptest.NewRequest("GET", "/items?limit=10&offset=0", nil)
				req.RemoteAddr = "192.0.2.1:1234"
				for pb.Next() {
					// The library keeps the request id in the request's
					// headers; a reused request would carry the last one.
					delete(req.Header, "X-Request-Id")
					rec := httptest.NewRecorder()
					c.h.ServeHTTP(rec, req)
					if rec.Code != 200 {
						b.Fatalf("status %d: %s", rec.Code, rec.Body)
					}
				}
			})
		})
	}
}

// BenchmarkItemsInterleaved runs the same requests as BenchmarkItems on one
// goroutine, alternating between the handlers every 200 requests, and
// reports each one's time per request and the library's throughput relative
// to plain gin (x-plain metrics). On a shared machine whose speed drifts
// from second to second, sequential sub-benchmarks compare different
// machines; alternating keeps every handler under the same conditions.
func BenchmarkItemsInterleaved(b *testing.B) {
	cases := []struct {
		name string
		h    http.Handler
		took time.Duration
	}{
		{name: "plain-gin", h: plainGin()},
		{name: "library-bare", h: librarySrv(b, "warn", false, apiserver.NoRateLimit)},
		{name: "library", h: librarySrv(b, "warn", true, nil)},
		{name: "library-traced-10pct", h: tracedSrv(b, "0.1")},
	}
	req := httptest.NewRequest("GET", "/items?limit=10&offset=0", nil)
	req.RemoteAddr = "192.0.2.1:1234"
	const slice = 200
	b.ReportAllocs()
	n := 0
	for n < b.N {
		for i := range cases {
			c := &cases[i]
			start := time.Now()
			for range slice {
				delete(req.Header, "X-Request-Id")
				rec := httptest.NewRecorder()
				c.h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("%s: status %d: %s", c.name, rec.Code, rec.Body)
				}
			}
			c.took += time.Since(start)
		}
		n += slice
	}
	for _, c := range cases {
		b.ReportMetric(float64(c.took.Nanoseconds())/float64(n), c.name+"-ns/req")
	}
	for _, c := range cases[1:] {
		b.ReportMetric(float64(cases[0].took)/float64(c.took), c.name+"-x-plain")
	}
}

// BenchmarkItemsHTTP is the same comparison over real HTTP on loopback
// with keep-alive connections: the throughput a client sees, where the
// server's own overhead (connection handling, parsing) is counted too.
func BenchmarkItemsHTTP(b *testing.B) {
	cases := []struct {
		name string
		h    http.Handler
	}{
		{"plain-gin", plainGin()},
		{"library-bare", librarySrv(b, "warn", false, apiserver.NoRateLimit)},
		{"library", librarySrv(b, "warn", true, nil)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ts := httptest.NewServer(c.h)
			defer ts.Close()
			tr := &http.Transport{MaxIdleConnsPerHost: 64}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			url := ts.URL + "/items?limit=10&offset=0"
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					res, err := client.Get(url)
					if err != nil {
						b.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if res.StatusCode != 200 {
						b.Fatalf("status %d", res.StatusCode)
					}
				}
			})
		})
	}
}

// BenchmarkItemsHTTPInterleaved is BenchmarkItemsHTTP with the targets
// alternating every 400 requests (8 keep-alive clients, 50 requests each),
// reporting each one's time per request and the library's throughput
// relative to plain gin (x-plain), as BenchmarkItemsInterleaved does in
// process.
func BenchmarkItemsHTTPInterleaved(b *testing.B) {
	cases := []struct {
		name string
		url  string
		took time.Duration
	}{
		{name: "plain-gin"}, {name: "library-bare"}, {name: "library"}, {name: "library-traced-10pct"},
	}
	for i, h := range []http.Handler{plainGin(), librarySrv(b, "warn", false, apiserver.NoRateLimit), librarySrv(b, "warn", true, nil), tracedSrv(b, "0.1")} {
		ts := httptest.NewServer(h)
		b.Cleanup(ts.Close)
		cases[i].url = ts.URL + "/items?limit=10&offset=0"
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	b.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	const clients, each = 8, 50
	get := func(url string) error {
		res, err := client.Get(url)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			return fmt.Errorf("status %d", res.StatusCode)
		}
		return nil
	}
	for _, c := range cases { // warm the connections
		for range clients {
			if err := get(c.url); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for n < b.N {
		for i := range cases {
			c := &cases[i]
			start := time.Now()
			var wg sync.WaitGroup
			errs := make(chan error, clients)
			for range clients {
				wg.Go(func() {
					for range each {
						if err := get(c.url); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			c.took += time.Since(start)
			select {
			case err := <-errs:
				b.Fatalf("%s: %v", c.name, err)
			default:
			}
		}
		n += clients * each
	}
	for _, c := range cases {
		b.ReportMetric(float64(c.took.Nanoseconds())/float64(n), c.name+"-ns/req")
	}
	for _, c := range cases[1:] {
		b.ReportMetric(float64(cases[0].took)/float64(c.took), c.name+"-x-plain")
	}
}
