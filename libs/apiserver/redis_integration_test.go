package apiserver_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/ratelimit"
	"github.com/apistack/platform/libs/apiserver/redisconn"
	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/libs/apiserver/testkit"
)

func redisServer(t *testing.T, redisURL string, failClosed bool) *httptest.Server {
	t.Helper()
	s, err := apiserver.New(apiserver.Config[struct{}]{
		Getenv:              func(string) string { return "" },
		Logger:              testkit.Logger(),
		RedisURL:            redisURL,
		RateLimitMax:        5,
		RateLimitWindow:     "1m",
		RateLimitFailClosed: &failClosed,
		// The test stands in for a proxy so it can speak for several clients.
		TrustedProxies: []string{"127.0.0.1", "::1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/items"},
		func(c *apiserver.Context[struct{}], in *listIn) (listOut, error) {
			return listOut{Limit: in.Limit}, nil
		})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
}

func get(t *testing.T, url string) (int, string) { return getAs(t, url, "203.0.113.1") }

// getAs sends the request on behalf of client (through X-Forwarded-For,
// which the servers believe from loopback).
func getAs(t *testing.T, url, client string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("X-Forwarded-For", client)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func metricValue(t *testing.T, base, name string) string {
	t.Helper()
	_, body := get(t, base+"/metrics")
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, name+" ") {
			return strings.TrimPrefix(line, name+" ")
		}
	}
	return ""
}

// TestRedisLimitIsSharedAcrossInstances: two servers on one Redis with a
// limit of 5 answer 5 requests in total, whichever is asked; with Redis
// stopped they keep serving (fail open) and count the errors; with Redis
// back, limiting resumes.
func TestRedisLimitIsSharedAcrossInstances(t *testing.T) {
	rds := redistest.Start(t)
	a, b := redisServer(t, rds.URL(), false), redisServer(t, rds.URL(), false)
	ok := 0
	for i := 0; i < 10; i++ {
		base := a.URL
		if i%2 == 1 {
			base = b.URL
		}
		code, body := get(t, base+"/items")
		switch code {
		case 200:
			ok++
		case 429:
			if !strings.Contains(body, "Rate limit exceeded") {
				t.Errorf("429 body = %s", body)
			}
		default:
			t.Fatalf("request %d: %d %s", i, code, body)
		}
	}
	if ok != 5 {
		t.Fatalf("%d requests passed across two instances, want 5", ok)
	}

	rds.Stop()
	// The exhausted client stays denied from the replica's memory of
	// Redis' answer (nothing but time can lift it); a new client passes.
	if code, _ := get(t, a.URL+"/items"); code != 429 {
		t.Errorf("exhausted client with Redis down = %d, want 429 (remembered denial)", code)
	}
	for i := 0; i < 7; i++ {
		if code, body := getAs(t, a.URL+"/items", "203.0.113.2"); code != 200 {
			t.Fatalf("with Redis down (fail open) got %d %s", code, body)
		}
	}
	if v := metricValue(t, a.URL, "ratelimit_backend_errors_total"); v == "" || v == "0" {
		t.Fatalf("ratelimit_backend_errors_total = %q, want > 0", v)
	}
	if code, _ := get(t, a.URL+"/healthz"); code != 200 {
		t.Errorf("healthz with Redis down = %d", code)
	}
	// Failing open, the instance serves without Redis: it stays ready, or
	// a Redis outage would take every replica out of its load balancer.
	if code, body := get(t, a.URL+"/readyz"); code != 200 || strings.Contains(body, "redis") {
		t.Errorf("readyz with Redis down, failing open = %d %s, want 200 without a redis check", code, body)
	}

	rds.Start()
	// The data went with the server (no persistence): the counters start
	// again, and limiting resumes within 5 requests.
	deadline := time.Now().Add(10 * time.Second)
	limited := false
	for !limited && time.Now().Before(deadline) {
		code, _ := getAs(t, b.URL+"/items", "203.0.113.3")
		limited = code == 429
	}
	if !limited {
		t.Fatal("limiting did not resume after Redis came back")
	}
}

func TestRedisDownFailClosed(t *testing.T) {
	rds := redistest.Start(t)
	a := redisServer(t, rds.URL(), true)
	if code, _ := get(t, a.URL+"/items"); code != 200 {
		t.Fatalf("first request = %d", code)
	}
	rds.Stop()
	code, body := getAs(t, a.URL+"/items", "203.0.113.9")
	if code != 503 || !strings.Contains(body, "Rate limiter unavailable") {
		t.Fatalf("fail closed with Redis down: %d %s", code, body)
	}
	// Requests are refused: the instance is not ready either.
	if code, body := get(t, a.URL+"/readyz"); code != 503 || !strings.Contains(body, `"redis":"unavailable"`) {
		t.Errorf("readyz with Redis down, failing closed = %d %s, want 503 naming redis", code, body)
	}
}

// TestCallerRedisClient: with Config.Redis the counters live on the
// caller's client (REDIS_URL, here pointing nowhere, is not opened), /readyz
// pings it (failing closed), and Stop leaves it open for its owner to close.
func TestCallerRedisClient(t *testing.T) {
	failClosed := true
	rds := redistest.Start(t)
	client, err := redisconn.Open(rds.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	s, err := apiserver.New(apiserver.Config[struct{}]{
		Getenv:              func(k string) string { return map[string]string{"REDIS_URL": "redis://127.0.0.1:1/0"}[k] },
		Logger:              testkit.Logger(),
		Redis:               client,
		ServiceName:         "mine",
		RateLimitFailClosed: &failClosed,
	})
	if err != nil {
		t.Fatal(err)
	}
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/items"},
		func(c *apiserver.Context[struct{}], in *listIn) (listOut, error) {
			return listOut{Limit: in.Limit}, nil
		})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	if code, body := get(t, ts.URL+"/items"); code != 200 {
		t.Fatalf("GET /items: %d %s", code, body)
	}
	ctx := context.Background()
	keys, err := client.Keys(ctx, "rate:apiserver:mine:global:*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("counter keys in the caller's Redis: %v %v", keys, err)
	}
	if code, body := get(t, ts.URL+"/readyz"); code != 200 || !strings.Contains(body, "redis") {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := client.Ping(ctx).Err(); err != nil {
		t.Fatalf("Stop closed the caller's client: %v", err)
	}
}

// countingProxy forwards TCP to addr and counts the client connections
// open through it: what a client holds on a Redis that does not answer.
type countingProxy struct {
	ln   net.Listener
	open atomic.Int64
}

func newCountingProxy(t *testing.T, addr string) *countingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			p.open.Add(1)
			go func() { _, _ = io.Copy(c, up); c.Close() }()
			go func() {
				_, _ = io.Copy(up, c) // ends when the client closes its side
				p.open.Add(-1)
				up.Close()
				c.Close()
			}()
		}
	}()
	return p
}

// TestCallerRedisClientHungRedis: on a caller's client, a Redis that
// stops answering costs a request the limiter's 100 ms, and the limiter's
// call gives its connection up then, not after the client's own read
// timeout and retries: a store's client (3 s, retried) as well as one made
// for the limiter (redisconn.Options.Timeout), which keeps go-redis's
// autopipeliner, whose batches run on their own context.
func TestCallerRedisClientHungRedis(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts redisconn.Options
	}{
		{"store client", redisconn.Options{}},
		{"limiter client", redisconn.Options{Timeout: ratelimit.DefaultRedisTimeout}},
	} {
		t.Run(tc.name, func(t *testing.T) { testHungRedis(t, tc.opts) })
	}
}

func testHungRedis(t *testing.T, opts redisconn.Options) {
	rds := redistest.Start(t)
	proxy := newCountingProxy(t, rds.Addr())
	client, err := redisconn.OpenWith("redis://"+proxy.ln.Addr().String()+"/0", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { go client.Close() }() // Close would wait for an abandoned call
	s, err := apiserver.New(apiserver.Config[struct{}]{
		Getenv: func(string) string { return "" },
		Logger: testkit.Logger(),
		Redis:  client,
	})
	if err != nil {
		t.Fatal(err)
	}
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/items"},
		func(c *apiserver.Context[struct{}], in *listIn) (listOut, error) {
			return listOut{Limit: in.Limit}, nil
		})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	if code, body := get(t, ts.URL+"/items"); code != 200 {
		t.Fatalf("GET /items: %d %s", code, body)
	}
	rds.Pause()
	start := time.Now()
	code, body := get(t, ts.URL+"/items")
	elapsed := time.Since(start)
	if code != 200 {
		t.Fatalf("GET /items with Redis hung (fail open): %d %s", code, body)
	}
	// Generous for a loaded machine, yet below the client's 3 s.
	if elapsed > 1500*time.Millisecond {
		t.Errorf("GET /items took %v with Redis hung", elapsed)
	}
	deadline := start.Add(2 * time.Second)
	for proxy.open.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := proxy.open.Load(); n > 0 {
		t.Fatalf("%v after the request, %d connection(s) still wait on the hung Redis", time.Since(start), n)
	}
}
