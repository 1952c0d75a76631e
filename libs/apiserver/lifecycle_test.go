package apiserver_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/testkit"
)

type slowOut struct {
	Done bool `json:"done"`
}

// TestGracefulShutdownDrainsInFlight sends SIGTERM while a slow request is
// in flight: the request finishes, readiness turns false first, new
// connections are refused, and shutdown hooks run.
func TestGracefulShutdownDrainsInFlight(t *testing.T) {
	s, err := apiserver.New(apiserver.Config[struct{}]{
		Getenv:          func(k string) string { return map[string]string{"PORT": "0"}[k] },
		Logger:          testkit.Logger(),
		ShutdownTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{})
	release := make(chan struct{})
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/slow"},
		func(c *apiserver.Context[struct{}], _ *struct{}) (slowOut, error) {
			close(entered)
			<-release
			return slowOut{Done: true}, nil
		})
	var hookRan atomic.Bool
	s.OnShutdown(func() error { hookRan.Store(true); return nil })
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err == nil {
		t.Error("a second Start succeeded")
	}
	undo := s.SetupGracefulShutdown()
	defer undo()
	base := "http://" + s.Addr()

	type result struct {
		status int
		body   string
		err    error
	}
	slow := make(chan result, 1)
	go func() {
		res, err := http.Get(base + "/slow")
		if err != nil {
			slow <- result{err: err}
			return
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		slow <- result{status: res.StatusCode, body: string(b)}
	}()
	<-entered

	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The listener closes before the drain ends: wait until new
	// connections are refused while the slow request is still held.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := http.Get(base + "/healthz")
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("server still accepts connections 5s after SIGTERM")
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case <-s.Done():
		t.Fatal("server stopped while a request was in flight")
	default:
	}
	close(release)
	r := <-slow
	if r.err != nil || r.status != 200 || r.body != `{"done":true}` {
		t.Fatalf("in-flight request: %+v", r)
	}
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("server did not stop after the drain")
	}
	if !hookRan.Load() {
		t.Error("shutdown hook did not run")
	}
}

func TestReadinessTurnsFalseOnStop(t *testing.T) {
	s, err := apiserver.New(apiserver.Config[struct{}]{Getenv: func(string) string { return "" }, Logger: testkit.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	failing := false
	s.AddReadinessCheck("dep", func(context.Context) error {
		if failing {
			return io.ErrUnexpectedEOF
		}
		return nil
	})
	get := func() int {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		return rec.Code
	}
	if c := get(); c != 200 {
		t.Fatalf("ready = %d", c)
	}
	failing = true
	if c := get(); c != 503 {
		t.Fatalf("with a failing check ready = %d, want 503", c)
	}
	failing = false
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := get(); c != 503 {
		t.Fatalf("after Stop ready = %d, want 503", c)
	}
}

// TestCallerSuppliedEngine: with Config.Engine, routes attach to the
// caller's engine, Start does not listen and Stop does not close it.
func TestCallerSuppliedEngine(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	engine := gin.New()
	engine.GET("/own", func(c *gin.Context) { c.String(200, "mine") })
	s, err := apiserver.New(apiserver.Config[struct{}]{Engine: engine, Getenv: func(string) string { return "" }, Logger: testkit.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/items"},
		func(c *apiserver.Context[struct{}], in *listIn) (listOut, error) {
			return listOut{Limit: in.Limit}, nil
		})
	if s.Instance() != engine {
		t.Fatal("Instance is not the caller's engine")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if s.Addr() != "" {
		t.Fatalf("Start listened on %s with a caller-supplied engine", s.Addr())
	}
	ts := httptest.NewServer(engine)
	defer ts.Close()
	for path, want := range map[string]int{"/own": 200, "/items?limit=3": 200, "/items?limit=0": 400, "/docs/index.html": 200, "/openapi.json": 200} {
		res, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("GET %s = %d, want %d", path, res.StatusCode, want)
		}
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(ts.URL + "/own")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("the caller's server stopped with ours: %v", err)
	}
	res.Body.Close()
}
