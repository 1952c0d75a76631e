package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver/redisconn"
	"github.com/apistack/platform/libs/apiserver/redistest"
)

// TestServeWiringAndMaskedSettings runs the binary with a Redis that wants a password and
// an IP2Location token: serve logs its settings with both masked, and the library keeps
// its rate-limit counters in that Redis, on the connection serve opened.
func TestServeWiringAndMaskedSettings(t *testing.T) {
	const password, token = "hunter2-redis-secret", "ip2location-token-secret"
	rds := redistest.Start(t, "--requirepass", password)
	redisURL := "redis://:" + password + "@" + rds.Addr() + "/0"
	p := startGeoip(t, map[string]string{
		"REDIS_URL": redisURL, "IP2LOCATION_TOKEN": token, "IP2LOCATION_PRODUCT": "DB1LITEBIN",
		"IP2LOCATION_DOWNLOAD_URL": "http://127.0.0.1:1/download", // never the real service from a test
		"GEOIP_UPDATE_DIR":         t.TempDir(),
	})
	res, err := http.Get(p.Base + "/8.8.8.8/country/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("RateLimit-Limit") == "" {
		t.Fatalf("lookup: %s %v", res.Status, res.Header)
	}
	rdb, err := redisconn.Open(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if keys, err := rdb.Keys(context.Background(), "rate:apiserver:geoip:global:*").Result(); err != nil || len(keys) == 0 {
		t.Fatalf("no rate-limit counter in the service's Redis: %v %v", keys, err)
	}
	time.Sleep(200 * time.Millisecond) // the updater's first (failing) download logs too
	out := p.Logs.String()
	for _, secret := range []string{password, token} {
		if strings.Contains(out, secret) {
			t.Fatalf("a secret reached the logs:\n%s", out)
		}
	}
	for _, want := range []string{`"msg":"geoip starting"`, `"redis_url":"redis://***@` + rds.Addr() + `/0"`,
		`"ip2location_token":"***"`, `"port":` + strings.TrimPrefix(p.Addr, "127.0.0.1:") + `,`, `"rate_limit_store":"redis"`} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %s:\n%s", want, out)
		}
	}
}

// TestReadinessDependsOnRedisOnlyWhenFailingClosed: with Redis stopped, a geoip whose rate
// limiter fails open (the default) keeps answering and stays ready, so a Redis outage does
// not empty its load balancer; one that fails closed refuses lookups and is not ready.
func TestReadinessDependsOnRedisOnlyWhenFailingClosed(t *testing.T) {
	status := func(url string) (int, string) {
		t.Helper()
		res, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for _, tc := range []struct {
		failClosed       string
		lookup, readyz   int
		redisInReadiness bool
	}{
		{"false", http.StatusOK, http.StatusOK, false},
		{"true", http.StatusServiceUnavailable, http.StatusServiceUnavailable, true},
	} {
		t.Run("RATE_LIMIT_FAIL_CLOSED="+tc.failClosed, func(t *testing.T) {
			rds := redistest.Start(t)
			p := startGeoip(t, map[string]string{"REDIS_URL": rds.URL(), "RATE_LIMIT_FAIL_CLOSED": tc.failClosed})
			if code, body := status(p.Base + "/readyz"); code != http.StatusOK {
				t.Fatalf("/readyz with Redis up: %d %s", code, body)
			}
			rds.Stop()
			if code, body := status(p.Base + "/8.8.8.8/country/"); code != tc.lookup {
				t.Errorf("lookup with Redis stopped: %d %s, want %d", code, body, tc.lookup)
			}
			code, body := status(p.Base + "/readyz")
			if code != tc.readyz || strings.Contains(body, `"redis"`) != tc.redisInReadiness {
				t.Errorf("/readyz with Redis stopped: %d %s, want %d (redis check listed: %v)", code, body, tc.readyz, tc.redisInReadiness)
			}
		})
	}
}
