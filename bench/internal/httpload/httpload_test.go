package httpload

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apistack/platform/bench/internal/geoipfloor"
)

func TestRunAgainstGeoipFloorForABoundedCount(t *testing.T) {
	var conns atomic.Int64
	var mu sync.Mutex
	v6 := 0
	floor := geoipfloor.New(geoipfloor.Options{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip := strings.Split(strings.Trim(r.URL.Path, "/"), "/")[0]
		a, err := netip.ParseAddr(ip)
		if err != nil {
			http.Error(w, "bad ip "+ip, http.StatusBadRequest)
			return
		}
		if a.Is6() {
			mu.Lock()
			v6++
			mu.Unlock()
		}
		floor.ServeHTTP(w, r)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	r := NewRunner(4, 5*time.Second)
	defer r.Close()
	res, err := r.Run(context.Background(), Config{
		URL:         srv.URL + "/{ip}/json/",
		Concurrency: 4,
		Duration:    60 * time.Second,
		Requests:    300,
		V6Frac:      0.5,
		Timeout:     5 * time.Second,
		Seed:        7,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK != 300 || res.ErrorCount() != 0 {
		t.Fatalf("ok %d errors %v", res.OK, res.Errors)
	}
	if res.Latency.Count != 300 || res.Latency.P99 <= 0 || res.RPS() <= 0 {
		t.Fatalf("latency %+v rps %v", res.Latency, res.RPS())
	}
	// Every answer is read whole: the bytes counted per answer are the floor's record
	// (27 fields, about 620 bytes; addresses change the lengths of a few values).
	rec := httptest.NewRecorder()
	floor.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/8.8.8.8/json/", nil))
	want := uint64(rec.Body.Len())
	if per := res.BodyBytes / res.OK; per < want*8/10 || per > want*12/10 {
		t.Errorf("%d bytes per answer, want about the record's %d", per, want)
	}
	// net/http may dial a spare connection when a request starts just before the
	// previous one's connection is back in the idle pool; 300 requests on a handful of
	// connections still proves reuse
	if n := conns.Load(); n > 8 {
		t.Errorf("%d connections for 4 workers and 300 requests: keep-alive not reused", n)
	}
	if v6 < 100 || v6 > 200 {
		t.Errorf("%d IPv6 requests out of 300 at a 50%% mix", v6)
	}
}

func TestRunCountsStatusErrorsAndDoesNotFollowRedirects(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) % 3 {
		case 0:
			http.Redirect(w, r, "/elsewhere", http.StatusMovedPermanently)
		case 1:
			http.NotFound(w, r)
		default:
			w.Write([]byte("{}"))
		}
	}))
	defer srv.Close()
	r := NewRunner(1, time.Second)
	defer r.Close()
	res, err := r.Run(context.Background(), Config{URL: srv.URL + "/{ip}", Concurrency: 1, Duration: 30 * time.Second, Requests: 30, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK != 10 || res.Errors["status 404"] != 10 || res.Errors["status 301"] != 10 {
		t.Fatalf("ok %d errors %v", res.OK, res.Errors)
	}
}

func TestRunStopsAtItsDuration(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	r := NewRunner(2, time.Second)
	defer r.Close()
	start := time.Now()
	res, err := r.Run(context.Background(), Config{URL: srv.URL + "/{ip}", Concurrency: 2, Duration: 200 * time.Millisecond, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 30*time.Second || res.OK == 0 || res.ErrorCount() != 0 {
		t.Fatalf("ok %d errors %v after %s", res.OK, res.Errors, time.Since(start))
	}
}

func TestRunRefusesBadConfigs(t *testing.T) {
	r := NewRunner(1, time.Second)
	base := Config{URL: "http://127.0.0.1:1/{ip}", Concurrency: 1, Duration: time.Second, Timeout: time.Second}
	bad := []func(*Config){
		func(c *Config) { c.URL = "http://10.1.1.1/{ip}" },
		func(c *Config) { c.URL = "http://example.com/{ip}" },
		func(c *Config) { c.Duration = 0 },
		func(c *Config) { c.Duration = time.Hour },
		func(c *Config) { c.Concurrency = 0 },
		func(c *Config) { c.Requests = -1 },
		func(c *Config) { c.V6Frac = 2 },
	}
	for i, mut := range bad {
		c := base
		mut(&c)
		if _, err := r.Run(context.Background(), c); err == nil {
			t.Errorf("case %d accepted: %+v", i, c)
		}
	}
}

func TestRunCountsRefusedConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	r := NewRunner(1, time.Second)
	res, err := r.Run(context.Background(), Config{URL: "http://" + addr + "/{ip}", Concurrency: 1, Duration: 10 * time.Second, Requests: 3, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors["connection refused"] != 3 {
		t.Fatalf("errors %v", res.Errors)
	}
}
