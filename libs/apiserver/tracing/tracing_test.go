package tracing_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/apistack/platform/libs/apiserver/tracing"
	"github.com/apistack/platform/libs/apiserver/tracing/tracingtest"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

// setup loads the configuration through getenv and sets tracing up from it, as a service does.
func setup(getenv func(string) string, o tracing.Options) (*tracing.Provider, error) {
	c, err := tracing.LoadConfig(getenv)
	if err != nil {
		return nil, err
	}
	return tracing.Setup(context.Background(), c, o)
}

// Tracing is off, and no exporter exists, unless an OTLP endpoint is named: the other
// variables alone, or an endpoint with the SDK disabled or no exporter, are not enough.
// The process environment does not count when a getenv is given: a test's or a service's
// getenv decides.
func TestSetupIsOffWithoutAnEndpoint(t *testing.T) {
	rcv := tracingtest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL) // must not be read: a getenv is given
	for name, kv := range map[string]map[string]string{
		"nothing set":    {},
		"other settings": {"OTEL_SERVICE_NAME": "x", "OTEL_TRACES_SAMPLER": "always_on", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		"sdk disabled":   {"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL, "OTEL_SDK_DISABLED": "true"},
		"exporter none":  {"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL, "OTEL_TRACES_EXPORTER": "none"},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := setup(env(kv), tracing.Options{})
			if err != nil || p != nil {
				t.Fatalf("Setup = %v, %v; want nil, nil", p, err)
			}
			// Everything is callable on the nil provider.
			if p.String() != "off" || p.TracerProvider() != nil || p.Shutdown(context.Background()) != nil ||
				p.InstrumentRedis(nil) != nil || p.Limiter(nil) != nil {
				t.Fatal("nil provider methods")
			}
		})
	}
	if n := rcv.Exports(); n != 0 {
		t.Fatalf("%d exports with tracing off", n)
	}
}

// Invalid values stop start-up with a message naming the variable.
func TestSetupRejectsInvalidValues(t *testing.T) {
	base := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
	for _, tc := range []struct{ key, value string }{
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://collector"},
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"},
		{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "udp"},
		{"OTEL_TRACES_SAMPLER", "sometimes"},
		{"OTEL_TRACES_SAMPLER_ARG", "1.5"},
		{"OTEL_TRACES_SAMPLER_ARG", "ten percent"},
		{"OTEL_TRACES_EXPORTER", "zipkin"},
		{"OTEL_SDK_DISABLED", "maybe"},
		{"OTEL_EXPORTER_OTLP_HEADERS", "api-key"},
		{"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "k=%zz"},
		{"OTEL_EXPORTER_OTLP_TIMEOUT", "10s"},
		{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "0"},
		{"OTEL_EXPORTER_OTLP_COMPRESSION", "zstd"},
		{"OTEL_EXPORTER_OTLP_CLIENT_KEY", "/key.pem"},
		{"OTEL_RESOURCE_ATTRIBUTES", "=x"},
		{"OTEL_BSP_SCHEDULE_DELAY", "-1"},
		{"OTEL_BSP_EXPORT_TIMEOUT", "soon"},
		{"OTEL_BSP_MAX_QUEUE_SIZE", "0"},
		{"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4096"},
	} {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			kv := map[string]string{tc.key: tc.value}
			for k, v := range base {
				if _, ok := kv[k]; !ok {
					kv[k] = v
				}
			}
			if strings.HasPrefix(tc.key, "OTEL_TRACES_SAMPLER_ARG") {
				kv["OTEL_TRACES_SAMPLER"] = "parentbased_traceidratio"
			}
			p, err := setup(env(kv), tracing.Options{})
			if err == nil {
				_ = p.Shutdown(context.Background())
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.key+"=") {
				t.Fatalf("error %q does not name %s", err, tc.key)
			}
		})
	}
}

// A span reaches a real OTLP receiver over each protocol, at the URL the variables name:
// the base endpoint's /v1/traces over HTTP, the traces endpoint as it is, gRPC's host.
// The service name is OTEL_SERVICE_NAME, else Options.ServiceName. Shutdown flushes
// what the batcher still holds (its schedule is 5 s, far beyond the wait).
func TestSpansReachTheReceiver(t *testing.T) {
	for _, tc := range []struct {
		name    string
		grpc    bool
		kv      func(url string) map[string]string
		service string
	}{
		{"http base endpoint", false, func(u string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": u + "/"}
		}, "svc"},
		{"http traces endpoint", false, func(u string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": u + "/v1/traces", "OTEL_SERVICE_NAME": "named"}
		}, "named"},
		{"grpc", true, func(u string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": u, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
		}, "svc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rcv := tracingtest.Start(t)
			if tc.grpc {
				rcv = tracingtest.StartGRPC(t)
			}
			p, err := setup(env(tc.kv(rcv.URL)), tracing.Options{ServiceName: "svc"})
			if err != nil || p == nil {
				t.Fatalf("Setup: %v, %v", p, err)
			}
			_, span := p.TracerProvider().Tracer("test").Start(context.Background(), "work")
			span.End()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := p.Shutdown(ctx); err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
			spans := rcv.Spans()
			if len(spans) != 1 || spans[0].GetName() != "work" || spans[0].Service != tc.service {
				t.Fatalf("received %s; want one span \"work\" of %s", tracingtest.Describe(spans), tc.service)
			}
		})
	}
}

// The sampler is the one OTEL_TRACES_SAMPLER names: at a ratio of 0 no new trace is
// sampled, while a sampled parent is still followed under the parent-based one.
func TestSamplerFromTheEnvironment(t *testing.T) {
	rcv := tracingtest.Start(t)
	p, err := setup(env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL, "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"}), tracing.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.String(), "parentbased_traceidratio 0") {
		t.Errorf("String() = %q, want the sampler named", p.String())
	}
	tr := p.TracerProvider().Tracer("test")
	for range 50 {
		_, span := tr.Start(context.Background(), "root")
		span.End()
	}
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, Remote: true})
	_, span := tr.Start(trace.ContextWithRemoteSpanContext(context.Background(), parent), "child")
	span.End()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if spans := rcv.Spans(); len(spans) != 1 || spans[0].GetName() != "child" {
		t.Fatalf("received %s; want only the sampled parent's child", tracingtest.Describe(spans))
	}
}

// Every variable is read once, by LoadConfig, and reaches the exporter from the Config:
// the headers (signal's own over the general ones), gzip, the resource attributes under
// OTEL_SERVICE_NAME, the batcher's delay. The process environment says otherwise and is
// not read, so nothing reads it behind the Config.
func TestConfigReachesTheExporter(t *testing.T) {
	rcv := tracingtest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-from-process=1")
	t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "none")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "3600000")
	c, err := tracing.LoadConfig(env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":       rcv.URL,
		"OTEL_EXPORTER_OTLP_HEADERS":        "x-general=1",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-api-key=s%3Dcret, x-team = blue ",
		"OTEL_EXPORTER_OTLP_COMPRESSION":    "gzip",
		"OTEL_RESOURCE_ATTRIBUTES":          "service.name=from-attrs,deployment.environment=test%20env",
		"OTEL_SERVICE_NAME":                 "from-name",
		"OTEL_BSP_SCHEDULE_DELAY":           "50",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"x-api-key": "s=cret", "x-team": "blue"}
	if len(c.Headers) != 2 || c.Headers["x-api-key"] != want["x-api-key"] || c.Headers["x-team"] != want["x-team"] {
		t.Fatalf("headers %v, want %v (the traces ones replace the general ones)", c.Headers, want)
	}
	p, err := tracing.Setup(context.Background(), c, tracing.Options{ServiceName: "svc"})
	if err != nil || p == nil {
		t.Fatalf("Setup: %v, %v", p, err)
	}
	defer func() { _ = p.Shutdown(context.Background()) }()
	_, span := p.TracerProvider().Tracer("test").Start(context.Background(), "work")
	span.End()
	// The batcher's 50 ms delay, not the process's hour, sends it without a flush.
	spans := rcv.Wait(t, 5*time.Second, func(s []tracingtest.Span) bool { return len(s) == 1 })
	if spans[0].Service != "from-name" {
		t.Errorf("service %q, want OTEL_SERVICE_NAME over OTEL_RESOURCE_ATTRIBUTES", spans[0].Service)
	}
	h := rcv.Header()
	if h.Get("X-Api-Key") != "s=cret" || h.Get("X-Team") != "blue" || h.Get("X-General") != "" || h.Get("X-From-Process") != "" {
		t.Errorf("export headers %v", h)
	}
	if h.Get("Content-Encoding") != "gzip" {
		t.Errorf("Content-Encoding %q, want gzip", h.Get("Content-Encoding"))
	}
}

// The start-up line shows every setting in force, and never a header's value.
func TestConfigLogValueMasksHeaders(t *testing.T) {
	c, err := tracing.LoadConfig(env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "https://user:pw@collector:4318/?token=x",
		"OTEL_EXPORTER_OTLP_HEADERS":  "authorization=Bearer%20s3cret",
		"OTEL_BSP_MAX_QUEUE_SIZE":     "4096",
		"OTEL_TRACES_SAMPLER":         "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25",
	}))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	slog.New(slog.NewTextHandler(&b, nil)).Info("start", "tracing", c)
	line := b.String()
	for _, want := range []string{"tracing.endpoint=https://collector:4318/v1/traces", `tracing.headers="authorization=***"`,
		"tracing.bsp_max_queue_size=4096", `tracing.sampler="traceidratio 0.25"`, "tracing.timeout=10s"} {
		if !strings.Contains(line, want) {
			t.Errorf("start-up line lacks %s:\n%s", want, line)
		}
	}
	for _, secret := range []string{"s3cret", "pw", "token"} {
		if strings.Contains(line, secret) {
			t.Errorf("start-up line shows %q:\n%s", secret, line)
		}
	}
	off, err := tracing.LoadConfig(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}))
	if err != nil || off.Enabled() || off.LogValue().String() != "off" {
		t.Errorf("disabled: %+v, %v", off, err)
	}
}
