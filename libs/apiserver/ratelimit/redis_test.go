package ratelimit

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver/testkit"
)

// newMiniRedis starts miniredis on the fake clock and a limiter over it.
func newMiniRedis(t *testing.T, clock *testkit.Clock, cfg RedisConfig) (*Redis, *miniredis.Miniredis) {
	t.Helper()
	mr := miniredis.RunT(t)
	mr.SetTime(clock.Now())
	client, err := NewRedisClient("redis://"+mr.Addr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	cfg.Clock = clock.Now
	r, err := NewRedis(client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r, mr
}

func TestRedisMatchesMemory(t *testing.T) {
	for _, deny := range []bool{true, false} {
		for _, tt := range scenarios {
			name := tt.name
			if !deny {
				name += " without deny cache"
			}
			t.Run(name, func(t *testing.T) {
				clock := newFakeClock()
				r, mr := newMiniRedis(t, clock, RedisConfig{DisableDenyCache: !deny})
				for i, s := range tt.steps {
					clock.Advance(s.advance)
					mr.SetTime(clock.Now())
					got, err := r.Allow(context.Background(), s.key, scenarioLimit)
					if err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
					// redis_rate computes in float seconds: allow a
					// millisecond of slack and Remaining one lower.
					if got.Allowed != s.allowed || got.Limit != 3 ||
						got.Remaining > s.remaining || got.Remaining < s.remaining-1 ||
						!near(got.RetryAfter, s.retryAfter) || !near(got.ResetAfter, s.resetAfter) {
						t.Fatalf("step %d (%s): got %+v, want %+v", i, s.key, got, s)
					}
				}
			})
		}
	}
}

func near(a, b time.Duration) bool { return (a - b).Abs() <= time.Millisecond }

func TestRedisKeyPrefix(t *testing.T) {
	clock := newFakeClock()
	r, mr := newMiniRedis(t, clock, RedisConfig{KeyPrefix: "geoip:"})
	if _, err := r.Allow(context.Background(), "global:1.2.3.4", Limit{Max: 5, Window: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if keys := mr.Keys(); len(keys) != 1 || keys[0] != "rate:geoip:global:1.2.3.4" {
		t.Fatalf("keys in Redis = %q, want [rate:geoip:global:1.2.3.4]", keys)
	}
}

func TestRedisDenyCacheAnswersWithoutRedisUntilRetryTime(t *testing.T) {
	clock := newFakeClock()
	r, mr := newMiniRedis(t, clock, RedisConfig{})
	ctx := context.Background()
	l := Limit{Max: 2, Window: time.Minute}
	for range 2 {
		if res, err := r.Allow(ctx, "k", l); err != nil || !res.Allowed {
			t.Fatalf("Allow = %+v, %v; want allowed", res, err)
		}
	}
	if res, err := r.Allow(ctx, "k", l); err != nil || res.Allowed {
		t.Fatalf("third Allow = %+v, %v; want denied", res, err)
	}
	mr.Close() // from now on, any question to Redis fails

	clock.Advance(29 * time.Second)
	res, err := r.Allow(ctx, "k", l)
	if err != nil || res.Allowed || !near(res.RetryAfter, time.Second) {
		t.Fatalf("while denied: Allow = %+v, %v; want a local denial with RetryAfter 1s", res, err)
	}
	// The same key under another limit is a different question.
	if _, err := r.Allow(ctx, "k", Limit{Max: 100, Window: time.Minute}); err == nil {
		t.Fatal("a denial under one limit was reused for another")
	}
	clock.Advance(time.Second)
	if _, err := r.Allow(ctx, "k", l); err == nil {
		t.Fatal("after RetryAfter the limiter did not ask Redis again")
	}
}

func TestRedisWithoutDenyCacheAlwaysAsks(t *testing.T) {
	clock := newFakeClock()
	r, mr := newMiniRedis(t, clock, RedisConfig{DisableDenyCache: true})
	ctx := context.Background()
	l := Limit{Max: 1, Window: time.Minute}
	_, _ = r.Allow(ctx, "k", l)
	if res, err := r.Allow(ctx, "k", l); err != nil || res.Allowed {
		t.Fatalf("Allow = %+v, %v; want denied", res, err)
	}
	mr.Close()
	if _, err := r.Allow(ctx, "k", l); err == nil {
		t.Fatal("denial answered locally with the deny cache disabled")
	}
}

func TestNewRedisRefusesClientWithoutContextTimeouts(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer client.Close()
	_, err := NewRedis(client, RedisConfig{})
	if err == nil || !strings.Contains(err.Error(), "ContextTimeoutEnabled") {
		t.Fatalf("NewRedis error = %v, want one about ContextTimeoutEnabled", err)
	}
}

func TestNewRedisClientRejectsBadURL(t *testing.T) {
	if _, err := NewRedisClient("http://localhost", 0); err == nil || !strings.Contains(err.Error(), "REDIS_URL") {
		t.Fatalf("error = %v, want one naming REDIS_URL", err)
	}
}

// A Redis that accepts connections and never answers must not hold a
// request longer than the limiter's timeout, whatever the client's own
// read timeout.
func TestRedisHungServerTimesOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // hold it open, say nothing
		}
	}()
	for _, pipeline := range []bool{false, true} {
		client := redis.NewClient(&redis.Options{
			Addr: ln.Addr().String(), ContextTimeoutEnabled: true,
			ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second, MaxRetries: -1,
		})
		r, err := NewRedis(client, RedisConfig{Timeout: 50 * time.Millisecond, DisableAutoPipeline: !pipeline})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = r.Allow(context.Background(), "k", Limit{Max: 1, Window: time.Second})
		elapsed := time.Since(start)
		if err == nil {
			t.Errorf("autopipeline=%v: no error from a hung Redis", pipeline)
		}
		// Generous bound for a loaded machine, yet below the client's own
		// 5 s read timeout, which would apply without the limiter's.
		if elapsed > 4*time.Second {
			t.Errorf("autopipeline=%v: Allow took %v against a hung Redis", pipeline, elapsed)
		}
		// Close waits for the abandoned call to hit the client's read
		// timeout; the test need not.
		go client.Close()
	}
}

func TestRedisPing(t *testing.T) {
	clock := newFakeClock()
	r, mr := newMiniRedis(t, clock, RedisConfig{})
	if err := r.Ping(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	mr.Close()
	if err := r.Ping(context.Background()); err == nil {
		t.Fatal("Ping succeeded with Redis down")
	}
}
