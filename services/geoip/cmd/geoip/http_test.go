package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apistack/platform/libs/apiserver"

	"github.com/apistack/platform/libs/apiserver/testkit"
	"github.com/apistack/platform/services/geoip/internal/config"
	"github.com/apistack/platform/services/geoip/internal/tz"
)

func httpEnv(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// The wired server answers lookups, reports the database and cache metrics, and is ready.
func TestHTTPServerWiring(t *testing.T) {
	// serve's order: settings, the database with its metrics on the registry, then HTTP.
	env := httpEnv(map[string]string{"TRUSTED_PROXIES": "10.0.0.0/8", "GEOIP_WATCH_INTERVAL": "1h"})
	cfg, err := config.Load(env)
	if err != nil {
		t.Fatal(err)
	}
	log := testkit.Logger()
	reg := apiserver.NewRegistry()
	db, err := openDatabase(cfg, log, reg, tz.New())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	srv, answers, err := newHTTPServer(cfg, db, nil, httpDeps{Log: log, Registry: reg})
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
	for _, name := range []string{"geoip_database_info", "go_goroutines", "geoip_answer_cache_hits_total", "geoip_answer_cache_misses_total", "http_requests_total"} {
		if !strings.Contains(metrics, name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	if _, doc := get("/openapi.json", "127.0.0.1:1", nil); !strings.Contains(doc, "DB-IP") || !strings.Contains(doc, `"/{ip}/json/"`) {
		t.Errorf("/openapi.json lacks the attribution or the endpoints")
	}
	if answers.CacheLen() == 0 {
		t.Errorf("the lookup was not cached")
	}
}
