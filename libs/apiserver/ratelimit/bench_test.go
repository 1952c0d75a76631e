package ratelimit

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver/redistest"
)

// BenchmarkAllow measures the per-request cost of each limiter under
// parallel load (b.RunParallel; 16 goroutines per CPU so that blocking
// Redis calls overlap as they do under an HTTP server) in one run:
//
//	allowed:  every request is within its limit (10 000 clients, a limit
//	          they never reach): every Redis call is a round trip.
//	flood:    100 clients far above their limit (1 per hour): the traffic
//	          a limiter exists for; Redis denials are remembered locally.
//	mixed:    10% of requests from flooding clients, 90% within limits.
//
// Redis backends run against a real redis-server on loopback, sharing the
// machine's CPUs with the benchmark.
func BenchmarkAllow(b *testing.B) {
	srv := redistest.Start(b)
	backends := []struct {
		name string
		make func(b *testing.B) Limiter
	}{
		{"memory", func(b *testing.B) Limiter { return NewMemory(MemoryConfig{}) }},
		{"redis", func(b *testing.B) Limiter { return benchRedis(b, srv, RedisConfig{}) }},
		{"redis-noautopipeline", func(b *testing.B) Limiter { return benchRedis(b, srv, RedisConfig{DisableAutoPipeline: true}) }},
		{"redis-nodenycache", func(b *testing.B) Limiter { return benchRedis(b, srv, RedisConfig{DisableDenyCache: true}) }},
	}
	// Keys are built before the timer starts so that the figures are the
	// limiter's cost, not fmt's.
	keys := func(prefix string, n int) []string {
		k := make([]string, n)
		for i := range k {
			k[i] = fmt.Sprintf("global:%s.%d.%d", prefix, i/256, i%256)
		}
		return k
	}
	within := Limit{Max: 1 << 30, Window: time.Hour}
	over := Limit{Max: 1, Window: time.Hour} // denied from the second request on
	calm, flooders := keys("10.0", 10_000), keys("10.1", 100)
	scenarios := []struct {
		name string
		key  func(i int) (string, Limit)
	}{
		{"allowed", func(i int) (string, Limit) { return calm[i%len(calm)], within }},
		{"flood", func(i int) (string, Limit) { return flooders[i%len(flooders)], over }},
		{"mixed", func(i int) (string, Limit) {
			if i%10 == 0 {
				return flooders[(i/10)%len(flooders)], over
			}
			return calm[i%len(calm)], within
		}},
	}
	for _, sc := range scenarios {
		for _, be := range backends {
			b.Run(sc.name+"/"+be.name, func(b *testing.B) {
				lim := be.make(b)
				ctx := context.Background()
				// A fresh prefix per run keeps runs from seeing each other's
				// counters in the shared Redis.
				lim = prefixed{lim, fmt.Sprint(time.Now().UnixNano(), ":")}
				var worker atomic.Int64
				var denied, failed atomic.Int64
				b.SetParallelism(parallelism)
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					// Each goroutine starts at its own offset and counts
					// locally: no shared counter to contend on.
					i := int(worker.Add(1)) * 7919
					var d, f int64
					for pb.Next() {
						i++
						key, l := sc.key(i)
						res, err := lim.Allow(ctx, key, l)
						if err != nil {
							f++
						} else if !res.Allowed {
							d++
						}
					}
					denied.Add(d)
					failed.Add(f)
				})
				b.ReportMetric(float64(denied.Load())/float64(b.N), "denied/op")
				// Timeouts happen on an overloaded machine; they are
				// reported, not fatal, so that one slow second does not
				// void a run.
				b.ReportMetric(float64(failed.Load())/float64(b.N), "errors/op")
			})
		}
	}
}

// parallelism is goroutines per CPU in RunParallel.
const parallelism = 16

// prefixed adds a per-run prefix to keys. It is applied to every backend,
// memory included, so the string concatenation costs the same everywhere.
type prefixed struct {
	Limiter
	prefix string
}

func (p prefixed) Allow(ctx context.Context, key string, l Limit) (Result, error) {
	return p.Limiter.Allow(ctx, p.prefix+key, l)
}

// BenchmarkHTTP puts each limiter in front of a trivial handler on a real
// loopback HTTP server and drives it with parallel keep-alive clients: the
// per-request cost as a service sees it, where the HTTP round trip is paid
// by both backends. Every request is within its limit (the worst case for
// Redis: one Redis round trip per request).
func BenchmarkHTTP(b *testing.B) {
	srv := redistest.Start(b)
	backends := []struct {
		name string
		make func(b *testing.B) Limiter
	}{
		{"memory", func(b *testing.B) Limiter { return NewMemory(MemoryConfig{}) }},
		{"redis", func(b *testing.B) Limiter { return benchRedis(b, srv, RedisConfig{}) }},
		{"redis-noautopipeline", func(b *testing.B) Limiter { return benchRedis(b, srv, RedisConfig{DisableAutoPipeline: true}) }},
	}
	within := Limit{Max: 1 << 30, Window: time.Hour}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			lim := be.make(b)
			run := fmt.Sprint(time.Now().UnixNano(), ":")
			var failed atomic.Int64
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				res, err := lim.Allow(r.Context(), run+r.Header.Get("X-Client"), within)
				if err != nil {
					failed.Add(1)
				}
				w.Header().Set("RateLimit-Remaining", strconv.Itoa(res.Remaining))
				if !res.Allowed {
					w.WriteHeader(http.StatusTooManyRequests)
				}
				_, _ = io.WriteString(w, `{"ok":true}`)
			})
			ts := httptest.NewServer(h)
			defer ts.Close()
			tr := &http.Transport{MaxIdleConnsPerHost: 256}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			var worker atomic.Int64
			b.SetParallelism(parallelism)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				id := strconv.Itoa(int(worker.Add(1)))
				i := 0
				for pb.Next() {
					i++
					req, _ := http.NewRequest(http.MethodGet, ts.URL, nil)
					req.Header.Set("X-Client", "10.0."+id+"."+strconv.Itoa(i%256))
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
			b.ReportMetric(float64(failed.Load())/float64(b.N), "errors/op")
		})
	}
}

func benchRedis(b *testing.B, srv *redistest.Server, cfg RedisConfig) Limiter {
	// A longer timeout than in production: the benchmark measures
	// throughput on a shared 2-CPU machine, where a call can wait for
	// the CPU longer than 100 ms.
	// One connection per concurrent caller (32), so callers never queue for
	// one; the go-redis default is 10 per CPU.
	client, err := NewRedisClient(srv.URL()+"?pool_size=64", 2*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = client.Close() })
	r, err := NewRedis(client, cfg)
	if err != nil {
		b.Fatal(err)
	}
	return r
}
