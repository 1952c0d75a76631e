package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/redisconn"
	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/libs/apiserver/testkit"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// TestServeOnOneRedisConnection runs serve against a redis-server that
// wants a password: the library keeps its rate-limit counters in that
// Redis, and neither the password nor the admin token reaches the logs.
func TestServeOnOneRedisConnection(t *testing.T) {
	const password, token = "hunter2-redis-secret", "admin-token-never-logged-0123"
	rds := redistest.Start(t, "--requirepass", password)
	redisURL := "redis://:" + password + "@" + rds.Addr() + "/0"
	port := freePort(t)
	env := envOf(map[string]string{"PORT": port, "REDIS_URL": redisURL, "CHAT_ADMIN_TOKEN": token, "APP_ENV": "production"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs testkit.Buffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, nil, env, &logs, &logs) }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		res, err := http.Get("http://127.0.0.1:" + port + "/api/v1/channels/general")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("never answered: %v\n%s", err, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	rdb, err := redisconn.Open(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	keys, err := rdb.Keys(context.Background(), "rate:apiserver:chat:global:*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("no rate-limit counter in the service's Redis: %v %v", keys, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	for _, secret := range []string{password, token} {
		if strings.Contains(out, secret) {
			t.Fatalf("a secret reached the logs:\n%s", out)
		}
	}
	for _, want := range []string{`"msg":"chat starting"`, `"redis_url":"redis://***@` + rds.Addr() + `/0"`, `"admin_token":"***"`, `"rate_limit_store":"redis"`} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %s:\n%s", want, out)
		}
	}
}

// TestLibraryCountsOnTheAppsClient: the rate limiter's commands go through
// the client build opened (a hook on it sees them), not one of the
// library's own.
func TestLibraryCountsOnTheAppsClient(t *testing.T) {
	rds := redistest.Start(t)
	app, err := build(context.Background(), envOf(map[string]string{"REDIS_URL": rds.URL(), "CHAT_ADMIN_TOKEN": "0123456789abcdef0123"}), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	seen := &scriptHook{}
	app.Redis.AddHook(seen)
	// A route that touches nothing but the limiter (every route has the
	// global counter, kept by a Lua script).
	apiserver.Register(app.HTTP, apiserver.Operation{Method: http.MethodGet, URL: "/probe"},
		func(*apiserver.Context[chat.User], *struct{}) (apiserver.NoBody, error) {
			return apiserver.NoBody{}, nil
		})
	ts := httptest.NewServer(app.HTTP.Handler())
	defer ts.Close()
	res, err := http.Get(ts.URL + "/probe")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent || res.Header.Get("RateLimit-Limit") == "" {
		t.Fatalf("GET /probe: %s %v", res.Status, res.Header)
	}
	if seen.scripts.Load() == 0 {
		t.Fatal("the limiter's script did not go through the app's Redis client")
	}
}

// scriptHook counts the Lua script calls (EVAL, EVALSHA) a client sends.
type scriptHook struct{ scripts atomic.Int64 }

func (h *scriptHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *scriptHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(cmd)
		return next(ctx, cmd)
	}
}

func (h *scriptHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h.count(c)
		}
		return next(ctx, cmds)
	}
}

func (h *scriptHook) count(cmd redis.Cmder) {
	if n := strings.ToLower(cmd.Name()); n == "eval" || n == "evalsha" {
		h.scripts.Add(1)
	}
}
