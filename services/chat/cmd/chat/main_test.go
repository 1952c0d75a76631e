package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/libs/apiserver/testkit"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestServeStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var logs testkit.Buffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, nil, envOf(map[string]string{"PORT": freePort(t)}), &logs, &logs) }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "chat starting") {
		if time.Now().After(deadline) {
			t.Fatalf("never started: %s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "generated a development token") {
		t.Fatalf("development token not logged: %s", logs.String())
	}
}

func TestBuildBootstrapsAdminOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	env := envOf(map[string]string{"REDIS_URL": srv.URL(), "CHAT_ADMIN_TOKEN": "0123456789abcdef0123"})
	var ids []string
	for i := 0; i < 2; i++ { // two replicas, or one restart: the same admin
		app, err := build(context.Background(), env, &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		u, err := app.Service.Authenticate(context.Background(), "0123456789abcdef0123")
		if err != nil || u.Role != "broadcaster" {
			t.Fatalf("admin %+v %v", u, err)
		}
		ids = append(ids, u.ID)
		app.Close()
	}
	if ids[0] != ids[1] {
		t.Fatalf("admins %v", ids)
	}
}

func TestBadConfigStopsStartUp(t *testing.T) {
	err := run(context.Background(), []string{"serve"}, envOf(map[string]string{"CHAT_HISTORY": "-5"}), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "CHAT_HISTORY") {
		t.Fatalf("err = %v", err)
	}
	// Tracing's variables too.
	err = run(context.Background(), []string{"serve"}, envOf(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_SAMPLER": "sometimes"}), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "OTEL_TRACES_SAMPLER") {
		t.Fatalf("err = %v", err)
	}
	if err := run(context.Background(), []string{"dance"}, envOf(nil), &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
		t.Fatal("unknown subcommand accepted")
	}
}

func TestHealthcheck(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusOK)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	env := envOf(map[string]string{"PORT": port})
	if err := run(context.Background(), []string{"healthcheck"}, env, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	status.Store(http.StatusServiceUnavailable)
	if err := run(context.Background(), []string{"healthcheck"}, env, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
		t.Fatal("unhealthy server passed")
	}
	srv.Close()
	if err := run(context.Background(), []string{"healthcheck"}, env, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
		t.Fatal("closed server passed")
	}
}

func TestRunRefusesStrayArguments(t *testing.T) {
	for _, args := range [][]string{{"serve", "--anything"}, {"healthcheck", "x"}} {
		err := run(context.Background(), args, envOf(nil), &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "takes no arguments") {
			t.Errorf("run(%q) = %v, want an error saying it takes no arguments", args, err)
		}
	}
}

// serveChat runs the service in process with env until the test ends and
// returns its address once /readyz answers 200.
func serveChat(t *testing.T, env map[string]string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var logs testkit.Buffer
	go func() { done <- run(ctx, nil, envOf(env), &logs, &logs) }()
	t.Cleanup(func() { cancel(); <-done })
	addr := "127.0.0.1:" + env["PORT"]
	for deadline := time.Now().Add(15 * time.Second); ; {
		if res, err := http.Get("http://" + addr + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return addr
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("never ready\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
