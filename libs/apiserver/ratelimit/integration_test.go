package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/libs/apiserver/testkit"
)

// Integration tests against a real redis-server (skipped when it is not
// installed, unless REQUIRE_REDIS=1).

func newReplica(t *testing.T, url string, cfg RedisConfig, gcfg GuardConfig) *Guard {
	t.Helper()
	// Outages here are refused connections, which fail at once; the long
	// timeout only keeps a loaded test machine from timing out a call that
	// Redis then executes, which would consume a request the test did not
	// count.
	client, err := NewRedisClient(url, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	cfg.Timeout = 5 * time.Second
	r, err := NewRedis(client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	gcfg.Logger = testkit.Logger()
	return NewGuard(r, gcfg)
}

func TestIntegrationReplicasShareOneLimit(t *testing.T) {
	srv := redistest.Start(t)
	for _, pipeline := range []bool{false, true} {
		name := "plain"
		if pipeline {
			name = "autopipeline"
		}
		t.Run(name, func(t *testing.T) {
			// Two limiters with two connection pools: two replicas.
			a := newReplica(t, srv.URL(), RedisConfig{DisableAutoPipeline: !pipeline}, GuardConfig{})
			b := newReplica(t, srv.URL(), RedisConfig{DisableAutoPipeline: !pipeline}, GuardConfig{})
			ctx, l := context.Background(), Limit{Max: 5, Window: time.Hour}
			key := "global:203.0.113.7:" + name
			allowed := 0
			for i := range 10 {
				replica := a
				if i%2 == 1 {
					replica = b
				}
				res, err := replica.Allow(ctx, key, l)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if res.Allowed {
					allowed++
				} else if res.RetryAfter <= 0 {
					t.Fatalf("request %d denied without RetryAfter: %+v", i, res)
				}
				if i >= 5 && res.Allowed {
					t.Fatalf("request %d allowed after 5 across both replicas", i)
				}
			}
			if allowed != 5 {
				t.Fatalf("%d requests allowed in total, want 5", allowed)
			}
		})
	}
}

func TestIntegrationRedisOutage(t *testing.T) {
	t.Run("autopipeline", func(t *testing.T) { testRedisOutage(t, RedisConfig{}) })
	t.Run("plain", func(t *testing.T) { testRedisOutage(t, RedisConfig{DisableAutoPipeline: true}) })
}

func testRedisOutage(t *testing.T, cfg RedisConfig) {
	srv := redistest.Start(t)
	open := newReplica(t, srv.URL(), cfg, GuardConfig{})
	closed := newReplica(t, srv.URL(), cfg, GuardConfig{FailClosed: true})
	ctx, l := context.Background(), Limit{Max: 5, Window: time.Hour}

	// Healthy: both limit.
	for _, g := range []*Guard{open, closed} {
		if err := g.Ping(ctx); err != nil {
			t.Fatalf("Ping with Redis up: %v", err)
		}
	}
	for range 5 {
		if res, err := open.Allow(ctx, "before", l); err != nil || !res.Allowed {
			t.Fatalf("before the outage: %+v, %v", res, err)
		}
	}
	if res, err := open.Allow(ctx, "before", l); err != nil || res.Allowed {
		t.Fatalf("6th request before the outage: %+v, %v; want denied", res, err)
	}

	srv.Stop()
	for i := range 3 {
		res, err := open.Allow(ctx, "during", l)
		if !errors.Is(err, ErrBackend) || !res.Allowed {
			t.Fatalf("fail open, request %d with Redis down: %+v, %v; want allowed with ErrBackend", i, res, err)
		}
		res, err = closed.Allow(ctx, "during", l)
		if !errors.Is(err, ErrBackend) || res.Allowed || res.RetryAfter <= 0 {
			t.Fatalf("fail closed, request %d with Redis down: %+v, %v; want denied with ErrBackend", i, res, err)
		}
	}
	if n := testutil.ToFloat64(open); n != 3 {
		t.Fatalf("fail-open ratelimit_backend_errors_total = %v, want 3", n)
	}
	if n := testutil.ToFloat64(closed); n != 3 {
		t.Fatalf("fail-closed ratelimit_backend_errors_total = %v, want 3", n)
	}
	if open.Ping(ctx) == nil {
		t.Fatal("Ping succeeded with Redis down")
	}

	srv.Start()
	// Connections broken by the restart may fail once each; limiting must
	// come back within a few attempts, with no sleeping-based guess.
	deadline := time.Now().Add(30 * time.Second)
	for open.Ping(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatal("Redis did not answer after the restart")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for n, g := range []*Guard{open, closed} {
		key := fmt.Sprint("after:", n) // the replicas share counters: one key each
		allowed := 0
		for i := 0; i < 20 && allowed < 5; i++ {
			res, err := g.Allow(ctx, key, l)
			if err == nil && res.Allowed {
				allowed++
			}
			if err != nil {
				t.Logf("after the restart, attempt %d: %v", i, err)
			}
		}
		if allowed != 5 {
			t.Fatalf("after the restart: %d allowed, want 5", allowed)
		}
		res, err := g.Allow(ctx, key, l)
		if err != nil || res.Allowed {
			t.Fatalf("after the restart, 6th request: %+v, %v; want a Redis denial", res, err)
		}
	}
}
