package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/libs/apiserver/testkit"
	"github.com/apistack/platform/libs/apiserver/tracing/tracingtest"
)

// A chat send from a caller's trace is followed into the service: its server span is in
// the caller's trace, named by the route, and the store's Redis commands and the rate
// limiter's check are its children. The access line names the trace; stopping the
// service flushes the spans.
func TestSendIsTracedIntoRedis(t *testing.T) {
	const (
		traceID = "0af7651916cd43dd8448eb211c80319c"
		parent  = "b7ad6b7169203331"
		token   = "trace-test-admin-token-0123456789"
	)
	rcv := tracingtest.Start(t)
	port := freePort(t)
	env := envOf(map[string]string{"PORT": port, "CHAT_ADMIN_TOKEN": token, "REDIS_URL": redistest.Start(t).URL(),
		"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs testkit.Buffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, nil, env, &logs, &logs) }()
	base := "http://127.0.0.1:" + port
	deadline := time.Now().Add(15 * time.Second)
	for {
		res, err := http.Get(base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("never ready: %v\n%s", err, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/messages/send", strings.NewReader(`{"message":"traced hello"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-"+parent+"-01")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("send: status %d", res.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "trace_id="+traceID) {
		t.Errorf("no access line with the trace id:\n%s", logs.String())
	}
	spans := rcv.Spans()
	var send *tracingtest.Span
	for i, sp := range spans {
		if sp.GetName() == "POST /api/v1/messages/send" && sp.TraceID() == traceID && sp.ParentID() == parent {
			send = &spans[i]
		}
	}
	if send == nil {
		t.Fatalf("no span for the send in the caller's trace; received %s", tracingtest.Describe(spans))
	}
	if send.Service != "chat" || send.Attr("http.response.status_code") != "201" {
		t.Errorf("send span: service %q status %q", send.Service, send.Attr("http.response.status_code"))
	}
	var limiter bool
	var commands []string
	for _, sp := range spans {
		if sp.ParentID() != send.SpanID() {
			continue
		}
		if sp.GetName() == "ratelimit" {
			limiter = true
		} else if sp.Attr("db.system") == "redis" {
			commands = append(commands, sp.GetName())
			if strings.Contains(sp.Attr("db.statement"), "traced hello") {
				t.Errorf("span %s writes the message out", sp.GetName())
			}
		}
	}
	if !limiter || len(commands) == 0 {
		t.Fatalf("under the send: rate limiter %t, store commands %q; received %s", limiter, commands, tracingtest.Describe(spans))
	}
	for _, sp := range spans {
		if sp.ParentID() == "" && sp.Attr("db.system") == "redis" {
			t.Errorf("Redis command %s outside any request made a trace of its own", sp.GetName())
		}
	}
}
