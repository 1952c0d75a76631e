package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver/proctest"
	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/libs/apiserver/testkit"
)

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	port, err := proctest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// TestServeAnswersTheAPI runs the binary's serve on a free port, on both
// engines, and talks to it over HTTP: the wiring from environment to
// endpoints.
func TestServeAnswersTheAPI(t *testing.T) {
	for _, engine := range []string{"memory", "redis"} {
		t.Run(engine, func(t *testing.T) {
			port := freePort(t)
			env := map[string]string{"PORT": port, "CHAT_ADMIN_TOKEN": "serve-test-token-0123456789", "CHAT_SEND_LIMIT": "3/1h"}
			if engine == "redis" {
				env["REDIS_URL"] = redistest.Start(t).URL()
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			var logs testkit.Buffer
			go func() { done <- run(ctx, nil, envOf(env), &logs, &logs) }()
			base := "http://127.0.0.1:" + port
			deadline := time.Now().Add(15 * time.Second)
			for {
				res, err := http.Get(base + "/readyz")
				if err == nil {
					res.Body.Close()
					if res.StatusCode == 200 {
						break
					}
				}
				if time.Now().After(deadline) {
					cancel()
					t.Fatalf("never ready: %v\n%s", err, logs.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			do := func(method, path, body string) (int, string) {
				t.Helper()
				req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+env["CHAT_ADMIN_TOKEN"])
				if body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer res.Body.Close()
				b, _ := io.ReadAll(res.Body)
				return res.StatusCode, string(b)
			}
			if code, body := do("POST", "/api/v1/messages/send", `{"message":"hello from serve"}`); code != 201 {
				t.Fatalf("send: %d %s", code, body)
			}
			code, body := do("GET", "/api/v1/messages", "")
			var page struct {
				Messages []struct{ Text string } `json:"messages"`
			}
			if err := json.Unmarshal([]byte(body), &page); code != 200 || err != nil || len(page.Messages) != 1 || page.Messages[0].Text != "hello from serve" {
				t.Fatalf("messages: %d %s", code, body)
			}
			// A user: limited by CHAT_SEND_LIMIT, unlike the broadcaster.
			code, body = do("POST", "/api/v1/users", `{"name":"limited"}`)
			var u struct{ Token string }
			if err := json.Unmarshal([]byte(body), &u); code != 201 || err != nil || u.Token == "" {
				t.Fatalf("create user: %d %s", code, body)
			}
			statuses := []int{}
			for i := 0; i < 4; i++ {
				req, _ := http.NewRequest("POST", base+"/api/v1/messages/send", bytes.NewReader([]byte(`{"message":"x"}`)))
				req.Header.Set("Authorization", "Bearer "+u.Token)
				req.Header.Set("Content-Type", "application/json")
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				statuses = append(statuses, res.StatusCode)
			}
			if got := fmtInts(statuses); got != "201 201 201 429" {
				t.Fatalf("CHAT_SEND_LIMIT=3/1h: statuses %s", got)
			}
			if code, body := do("GET", "/openapi.json", ""); code != 200 || !strings.Contains(body, "/api/v1/messages/send") || !strings.Contains(body, "manage_commands") {
				t.Fatalf("openapi: %d", code)
			}
			// Live delivery is mounted: the browser client at / and the socket's docs.
			if code, body := do("GET", "/", ""); code != 200 || !strings.Contains(strings.ToLower(body), "<html") {
				t.Fatalf("GET /: %d", code)
			}
			if _, body := do("GET", "/openapi.json", ""); !strings.Contains(body, "/api/v1/ws") {
				t.Fatal("/api/v1/ws is not declared")
			}
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("serve did not stop")
			}
		})
	}
}

func fmtInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, " ")
}

func TestBadSendLimitStopsStartUp(t *testing.T) {
	env := envOf(map[string]string{"PORT": freePort(t), "CHAT_SEND_LIMIT": "lots"})
	err := run(context.Background(), []string{"serve"}, env, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "CHAT_SEND_LIMIT") {
		t.Fatalf("err = %v", err)
	}
}
