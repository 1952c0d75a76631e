package apiserver_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/redisconn"
	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/libs/apiserver/testkit"
	"github.com/apistack/platform/libs/apiserver/tracing"
	"github.com/apistack/platform/libs/apiserver/tracing/tracingtest"
)

const (
	parentTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	parentSpan  = "00f067aa0ba902b7"
	traceparent = "00-" + parentTrace + "-" + parentSpan + "-01"
)

type itemIn struct {
	ID string `path:"id"`
}

type itemOut struct {
	ID string `json:"id"`
}

// tracedServer is a started server with tracing to rcv and its rate-limit counters in
// Redis: the library's own client (rdb nil, REDIS_URL) or the caller's.
func tracedServer(t *testing.T, rcv *tracingtest.Receiver, redisURL string, rdb redis.UniversalClient, tp *tracing.Provider, log *slog.Logger) *apiserver.Server[struct{}] {
	t.Helper()
	vars := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL, "PORT": "0"}
	cfg := apiserver.Config[struct{}]{
		Getenv:      func(k string) string { return vars[k] },
		Logger:      log,
		Redis:       rdb,
		ServiceName: "items",
		Tracing:     tp,
	}
	if rdb == nil {
		cfg.RedisURL = redisURL
	}
	s, err := apiserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	apiserver.Register(s, apiserver.Operation{Method: http.MethodGet, URL: "/items/:id"},
		func(c *apiserver.Context[struct{}], in *itemIn) (itemOut, error) {
			if in.ID == "fail" {
				return itemOut{}, errors.New("disk on fire")
			}
			return itemOut{ID: in.ID}, nil
		})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s
}

func getTraced(t *testing.T, url string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("traceparent", traceparent)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

func serverSpan(spans []tracingtest.Span, name string) (tracingtest.Span, bool) {
	for _, sp := range spans {
		if sp.GetName() == name && sp.ParentID() == parentSpan {
			return sp, true
		}
	}
	return tracingtest.Span{}, false
}

func childrenOf(spans []tracingtest.Span, parent tracingtest.Span) []tracingtest.Span {
	var out []tracingtest.Span
	for _, sp := range spans {
		if sp.ParentID() == parent.SpanID() && sp.TraceID() == parent.TraceID() {
			out = append(out, sp)
		}
	}
	return out
}

// A request carrying a traceparent gets a server span in that trace, under the caller's
// span, named by its route template; the rate limiter's Redis check is its child, and
// the access log line carries the trace id. Both ways the limiter reaches Redis: the
// library's own client (batched, where the limiter's span is the Redis call) and a
// service's client that tracing instrumented (each command a span under it). Stop
// flushes: the spans are there when it returns, well before the batcher's 5 s schedule.
func TestTracingContinuesTheCallersTrace(t *testing.T) {
	srv := redistest.Start(t)
	for _, own := range []bool{true, false} {
		name := map[bool]string{true: "library's redis client", false: "service's redis client"}[own]
		t.Run(name, func(t *testing.T) {
			rcv := tracingtest.Start(t)
			var logs testkit.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			var rdb redis.UniversalClient
			var tp *tracing.Provider
			if !own {
				var err error
				tc, err := tracing.LoadConfig(func(k string) string { return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL}[k] })
				if err != nil {
					t.Fatal(err)
				}
				if tp, err = tracing.Setup(context.Background(), tc, tracing.Options{ServiceName: "items"}); err != nil {
					t.Fatal(err)
				}
				if rdb, err = redisconn.OpenWith(srv.URL(), redisconn.Options{NoRetry: true}); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = rdb.Close() })
				if err := tp.InstrumentRedis(rdb); err != nil {
					t.Fatal(err)
				}
			}
			s := tracedServer(t, rcv, srv.URL(), rdb, tp, log)
			base := "http://" + s.Addr()
			if code := getTraced(t, base+"/items/42"); code != http.StatusOK {
				t.Fatalf("status %d", code)
			}
			if !strings.Contains(logs.String(), "trace_id="+parentTrace) {
				t.Errorf("access log without trace_id=%s:\n%s", parentTrace, logs.String())
			}
			if err := s.Stop(context.Background()); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			spans := rcv.Spans()
			sp, ok := serverSpan(spans, "GET /items/:id")
			if !ok {
				t.Fatalf("no span \"GET /items/:id\" under the caller's span; received %s", tracingtest.Describe(spans))
			}
			if sp.TraceID() != parentTrace || sp.Service != "items" || sp.GetKind().String() != "SPAN_KIND_SERVER" {
				t.Errorf("server span: trace %s service %q kind %s", sp.TraceID(), sp.Service, sp.GetKind())
			}
			for k, want := range map[string]string{"http.route": "/items/:id", "http.request.method": "GET", "http.response.status_code": "200", "url.path": "/items/42"} {
				if got := sp.Attr(k); got != want {
					t.Errorf("server span %s = %q, want %q", k, got, want)
				}
			}
			kids := childrenOf(spans, sp)
			if len(kids) != 1 || kids[0].Attr("db.system") != "redis" || kids[0].GetName() != "ratelimit" {
				t.Fatalf("children of the server span: %s; want the rate limiter's Redis check", tracingtest.Describe(kids))
			}
			cmds := childrenOf(spans, kids[0])
			if !own && (len(cmds) == 0 || cmds[0].GetName() != "evalsha" && cmds[0].GetName() != "eval") {
				t.Fatalf("the service's client: commands under the limiter's span: %s; want the GCRA script", tracingtest.Describe(cmds))
			}
			for _, c := range cmds {
				if strings.Contains(c.Attr("db.statement"), "rate:") {
					t.Errorf("command span %s writes its arguments out: %q", c.GetName(), c.Attr("db.statement"))
				}
			}
		})
	}
}

// A handler's error is a 5xx span with the error status and the cause as an exception
// event (which the answer never shows); an unknown path's span is named by its method
// only, whatever the path; health probes and metrics scrapes make no span.
func TestTracingRecordsFailuresAndUnmatchedRoutes(t *testing.T) {
	rcv := tracingtest.Start(t)
	s := tracedServer(t, rcv, "", nil, nil, testkit.Logger())
	base := "http://" + s.Addr()
	if code := getTraced(t, base+"/items/fail"); code != http.StatusInternalServerError {
		t.Fatalf("status %d", code)
	}
	if code := getTraced(t, base+"/no/such/path/203.0.113.9"); code != http.StatusNotFound {
		t.Fatalf("status %d", code)
	}
	for _, probe := range []string{"/healthz", "/readyz", "/metrics"} {
		if code := getTraced(t, base+probe); code != http.StatusOK {
			t.Fatalf("%s: status %d", probe, code)
		}
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	spans := rcv.Spans()
	failed, ok := serverSpan(spans, "GET /items/:id")
	if !ok {
		t.Fatalf("received %s", tracingtest.Describe(spans))
	}
	if failed.GetStatus().GetCode().String() != "STATUS_CODE_ERROR" || failed.Attr("http.response.status_code") != "500" {
		t.Errorf("failed request: status %s, code %s", failed.GetStatus().GetCode(), failed.Attr("http.response.status_code"))
	}
	var cause string
	for _, ev := range failed.GetEvents() {
		if ev.GetName() == "exception" {
			for _, kv := range ev.GetAttributes() {
				if kv.GetKey() == "exception.message" {
					cause = kv.GetValue().GetStringValue()
				}
			}
		}
	}
	if !strings.Contains(cause, "disk on fire") {
		t.Errorf("exception event message %q, want the handler's error", cause)
	}
	unmatched, ok := serverSpan(spans, "GET")
	if !ok {
		t.Fatalf("no span \"GET\" for the unmatched path; received %s", tracingtest.Describe(spans))
	}
	if unmatched.Attr("http.route") != "" || unmatched.GetStatus().GetCode().String() == "STATUS_CODE_ERROR" {
		t.Errorf("unmatched: route %q status %s", unmatched.Attr("http.route"), unmatched.GetStatus().GetCode())
	}
	if len(spans) != 2 {
		t.Errorf("probes and scrapes traced too: %s", tracingtest.Describe(spans))
	}
}

// Without an endpoint a traceparent is not continued, nothing is exported and the access
// line has no trace_id, even with the process environment naming a collector: the
// server's Getenv decides.
func TestTracingOffByDefault(t *testing.T) {
	rcv := tracingtest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	var logs testkit.Buffer
	s, err := apiserver.New(apiserver.Config[struct{}]{
		Getenv: func(string) string { return "" },
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/openapi.json", nil)
	req.Header.Set("traceparent", traceparent)
	s.Handler().ServeHTTP(httptest.NewRecorder(), req)
	_ = s.Stop(context.Background())
	if strings.Contains(logs.String(), "trace_id") {
		t.Errorf("trace_id logged with tracing off:\n%s", logs.String())
	}
	if n := rcv.Exports(); n != 0 {
		t.Fatalf("%d exports with tracing off", n)
	}
}

// A collector that never answers cannot hold Stop past ShutdownTimeout: the flush is
// abandoned at the deadline and reported.
func TestTracingFlushIsBoundedByShutdownTimeout(t *testing.T) {
	hang := make(chan struct{})
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(collector.Close)
	t.Cleanup(func() { close(hang) })
	s, err := apiserver.New(apiserver.Config[struct{}]{
		Getenv:          func(k string) string { return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL}[k] },
		Logger:          testkit.Logger(),
		ShutdownTimeout: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Handler().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	start := time.Now()
	err = s.Stop(context.Background())
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Stop took %s with ShutdownTimeout 300ms", took)
	}
	if err == nil || !strings.Contains(err.Error(), "flush spans") {
		t.Fatalf("Stop = %v, want the abandoned flush reported", err)
	}
}
