package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apistack/platform/services/geoip/internal/dbfile"
	"github.com/apistack/platform/services/geoip/internal/sample"
)

func httpEnv(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestHTTPOptions(t *testing.T) {
	tests := []struct {
		env     map[string]string
		maxAge  time.Duration
		size    int
		wantErr string
	}{
		{env: nil},
		{env: map[string]string{"GEOIP_CACHE_MAX_AGE": "10m", "GEOIP_CACHE_SIZE": "1000"}, maxAge: 10 * time.Minute, size: 1000},
		{env: map[string]string{"GEOIP_CACHE_SIZE": "0"}, size: -1},
		{env: map[string]string{"GEOIP_CACHE_MAX_AGE": "soon"}, wantErr: "GEOIP_CACHE_MAX_AGE"},
		{env: map[string]string{"GEOIP_CACHE_MAX_AGE": "10ms"}, wantErr: "GEOIP_CACHE_MAX_AGE"},
		{env: map[string]string{"GEOIP_CACHE_SIZE": "-5"}, wantErr: "GEOIP_CACHE_SIZE"},
		{env: map[string]string{"GEOIP_CACHE_SIZE": "many"}, wantErr: "GEOIP_CACHE_SIZE"},
	}
	for _, tt := range tests {
		opts, err := httpOptions(httpEnv(tt.env))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: error %v, want one naming %s", tt.env, err, tt.wantErr)
			}
			continue
		}
		if err != nil || opts.MaxAge != tt.maxAge || opts.CacheSize != tt.size {
			t.Errorf("%v: %+v, %v; want max-age %s, size %d", tt.env, opts, err, tt.maxAge, tt.size)
		}
	}
}

// The wired server answers lookups, reports the database and cache metrics, and is ready.
func TestHTTPServerWiring(t *testing.T) {
	db, err := dbfile.New(dbfile.Config{Fallback: sample.Open, PollInterval: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	srv, api, err := newHTTPServer(db, nil, httpEnv(map[string]string{"TRUSTED_PROXIES": "10.0.0.0/8"}), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	get := func(path, peer string, hdr http.Header) (int, string) {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.RemoteAddr = peer
		for k, v := range hdr {
			req.Header[k] = v
		}
		w := httptest.NewRecorder()
		srv.Handler().ServeHTTP(w, req)
		b, _ := io.ReadAll(w.Body)
		return w.Code, string(b)
	}
	if code, body := get("/8.8.8.8/country/", "127.0.0.1:1", nil); code != 200 || body != "US" {
		t.Errorf("/8.8.8.8/country/: %d %q", code, body)
	}
	if code, body := get("/ip/", "10.1.1.1:1", http.Header{"X-Forwarded-For": {"8.8.8.8"}}); code != 200 || body != "8.8.8.8" {
		t.Errorf("TRUSTED_PROXIES not applied: %d %q", code, body)
	}
	if code, body := get("/readyz", "127.0.0.1:1", nil); code != 200 || !strings.Contains(body, `"database":"ok"`) {
		t.Errorf("/readyz: %d %s", code, body)
	}
	_, metrics := get("/metrics", "127.0.0.1:1", nil)
	for _, name := range []string{"geoip_database_info", "geoip_answer_cache_hits_total", "geoip_answer_cache_misses_total", "http_requests_total"} {
		if !strings.Contains(metrics, name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	if _, doc := get("/openapi.json", "127.0.0.1:1", nil); !strings.Contains(doc, "DB-IP") || !strings.Contains(doc, `"/{ip}/json/"`) {
		t.Errorf("/openapi.json lacks the attribution or the endpoints")
	}
	if api.CacheLen() == 0 {
		t.Errorf("the lookup was not cached")
	}
}
