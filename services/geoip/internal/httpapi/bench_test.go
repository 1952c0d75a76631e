package httpapi

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkExplicitJSON is one /{ip}/json/ request through the whole server (library
// middleware included) on the embedded sample, with random public IPv4 addresses so the
// answer cache mostly misses, as in the load benchmark.
func BenchmarkExplicitJSON(b *testing.B) {
	for _, cache := range []int{-1, 1 << 16} {
		b.Run(fmt.Sprintf("cache=%d", cache), func(b *testing.B) {
			s := newTestServer(b, embeddedSample(b), withOptions(func(o *Options) { o.CacheSize = cache }))
			r := rand.New(rand.NewPCG(1, 2))
			paths := make([]string, 4096)
			for i := range paths {
				paths[i] = fmt.Sprintf("/%d.%d.%d.%d/json/", 1+r.IntN(222), r.IntN(256), r.IntN(256), r.IntN(256))
			}
			h := s.srv.Handler()
			s.get("/8.8.8.8/json/") // loads the time zone polygons, once per process
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, paths[i%len(paths)], nil)
				req.RemoteAddr = "127.0.0.1:1"
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				i++
			}
		})
	}
}
