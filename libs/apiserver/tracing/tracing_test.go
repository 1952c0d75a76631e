package tracing_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/apistack/platform/libs/apiserver/tracing"
	"github.com/apistack/platform/libs/apiserver/tracing/tracingtest"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

// Tracing is off, and no exporter exists, unless an OTLP endpoint is named: the other
// variables alone, or an endpoint with the SDK disabled or no exporter, are not enough.
// The process environment does not count when Getenv is given: a test's or a service's
// getenv decides.
func TestSetupIsOffWithoutAnEndpoint(t *testing.T) {
	rcv := tracingtest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL) // must not be read: Getenv is given
	for name, kv := range map[string]map[string]string{
		"nothing set":    {},
		"other settings": {"OTEL_SERVICE_NAME": "x", "OTEL_TRACES_SAMPLER": "always_on", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		"sdk disabled":   {"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL, "OTEL_SDK_DISABLED": "true"},
		"exporter none":  {"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL, "OTEL_TRACES_EXPORTER": "none"},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := tracing.Setup(context.Background(), tracing.Options{Getenv: env(kv)})
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
			p, err := tracing.Setup(context.Background(), tracing.Options{Getenv: env(kv)})
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
			p, err := tracing.Setup(context.Background(), tracing.Options{ServiceName: "svc", Getenv: env(tc.kv(rcv.URL))})
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
	p, err := tracing.Setup(context.Background(), tracing.Options{Getenv: env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL, "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"})})
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
