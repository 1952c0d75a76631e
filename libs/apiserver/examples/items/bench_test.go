package main

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/apistack/platform/libs/apiserver"
)

// seeded is the items example with 10 items stored and its defaults
// (metrics, the memory rate limiter with a limit the benchmark never
// reaches), as wrkbench.sh runs it.
func seeded(b *testing.B) http.Handler {
	srv, _, err := NewServer(apiserver.Config[struct{}]{
		APIToken: "bench-token-0123456789", RateLimitMax: 1 << 30,
		Getenv: func(string) string { return "" }, Logger: slog.New(slog.DiscardHandler),
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

type plainItem struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Price     float64   `json:"price"`
	Tags      []string  `json:"tags"`
	CreatedAt time.Time `json:"created_at"`
}

// plain is plaingin's handler (plaingin/main.go) on the items lib serves.
func plain(b *testing.B, lib http.Handler) http.Handler {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/items?limit=10", nil)
	req.RemoteAddr = "192.0.2.1:1"
	lib.ServeHTTP(rec, req)
	var stored struct {
		Items []plainItem `json:"items"`
		Total int         `json:"total"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &stored); err != nil || len(stored.Items) != 10 {
		b.Fatalf("items: %v %s", err, rec.Body)
	}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.GET("/items", func(c *gin.Context) {
		limit, offset := 10, 0
		if v, ok := c.GetQuery("limit"); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 100 {
				c.JSON(http.StatusBadRequest, gin.H{"message": "bad limit"})
				return
			}
			limit = n
		}
		page := stored.Items[offset:min(offset+limit, len(stored.Items))]
		c.JSON(http.StatusOK, struct {
			Items []plainItem `json:"items"`
			Total int         `json:"total"`
		}{page, len(stored.Items)})
	})
	return r
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
