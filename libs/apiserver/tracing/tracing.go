// Package tracing sends OpenTelemetry traces of a service over OTLP: a server span per
// request, continued from an incoming W3C traceparent, and its Redis calls as child spans.
// It is off, and costs nothing, unless OTEL_EXPORTER_OTLP_ENDPOINT (or the traces one) is set.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"os"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// instrumentation names the spans this package makes (the OTLP scope).
const instrumentation = "github.com/apistack/platform/libs/apiserver/tracing"

// Options configure Setup; every field is optional.
type Options struct {
	// ServiceName is service.name when OTEL_SERVICE_NAME is not set ("api").
	ServiceName string
	// ServiceVersion is service.version (none when empty).
	ServiceVersion string
	// Logger receives the exporter's failures (a collector that cannot be reached),
	// through OpenTelemetry's process-wide error handler. Default: slog's default.
	Logger *slog.Logger
	// Getenv reads the variables that turn tracing on and shape it (default os.Getenv):
	// OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_ENDPOINT and
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL and
	// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG,
	// OTEL_SERVICE_NAME. The SDK reads the others itself from the process environment
	// (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION, _CERTIFICATE, OTEL_BSP_*,
	// OTEL_RESOURCE_ATTRIBUTES).
	Getenv func(string) string
}

// Provider is the tracing of a process: the SDK's tracer provider with its OTLP exporter.
// A nil *Provider is tracing off, and every method is safe to call on it.
type Provider struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	// redis is tp seen by Redis instrumentation: spans only under a request's.
	redis trace.TracerProvider
	desc  string
}

// Setup reads the OTEL_* variables and returns the provider they describe, or nil (and no
// exporter) when no OTLP endpoint is set, OTEL_SDK_DISABLED is true or OTEL_TRACES_EXPORTER
// is none. An invalid value is an error that names its variable. The exporter connects
// lazily: a collector that is down delays nothing but its own spans.
func Setup(ctx context.Context, o Options) (*Provider, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg, err := readEnv(getenv)
	if err != nil || cfg.endpoint == "" {
		return nil, err
	}
	var exp sdktrace.SpanExporter
	switch cfg.protocol {
	case "grpc":
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(cfg.endpoint))
	default:
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(cfg.endpoint))
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter for %s: %w", cfg.endpoint, err)
	}
	name := o.ServiceName
	if name == "" {
		name = "api"
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", name)}
	if o.ServiceVersion != "" {
		attrs = append(attrs, attribute.String("service.version", o.ServiceVersion))
	}
	// Later detectors win: OTEL_RESOURCE_ATTRIBUTES may name the service, and
	// OTEL_SERVICE_NAME beats it, as the specification says.
	detect := []resource.Option{resource.WithTelemetrySDK(), resource.WithAttributes(attrs...), resource.WithFromEnv()}
	if cfg.serviceName != "" {
		detect = append(detect, resource.WithAttributes(attribute.String("service.name", cfg.serviceName)))
	}
	res, err := resource.New(ctx, detect...)
	if err != nil {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("tracing: OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	if v, ok := res.Set().Value("service.name"); ok {
		name = v.AsString()
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("tracing: span export failed", "err", err)
	}))
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithSampler(cfg.sampler),
		sdktrace.WithResource(res),
	)
	return &Provider{
		tp:     tp,
		tracer: tp.Tracer(instrumentation),
		prop:   propagation.TraceContext{},
		redis:  childOnly{tp: tp},
		desc:   fmt.Sprintf("otlp %s %s, sampler %s, service %s", cfg.protocol, redactURL(cfg.endpoint), cfg.samplerDesc, name),
	}, nil
}

// String describes the tracing for the start-up log: "off", or the exporter, sampler and
// service name.
func (p *Provider) String() string {
	if p == nil {
		return "off"
	}
	return p.desc
}

// TracerProvider is the SDK's provider, for an application's own spans
// (otel.SetTracerProvider makes it the global one); nil when tracing is off.
func (p *Provider) TracerProvider() trace.TracerProvider {
	if p == nil {
		return nil
	}
	return p.tp
}

// Shutdown exports the spans still queued and stops the exporter, within ctx: the server
// calls it last in Stop, on the graceful-stop deadline. Later spans are dropped.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	if err := p.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: flush spans: %w", err)
	}
	return nil
}

// ForceFlush exports the spans queued so far, within ctx.
func (p *Provider) ForceFlush(ctx context.Context) error {
	if p == nil {
		return nil
	}
	return p.tp.ForceFlush(ctx)
}

// envConfig is what the variables read through Options.Getenv say.
type envConfig struct {
	endpoint    string // the traces URL; "" when tracing is off
	protocol    string // grpc or http/protobuf
	sampler     sdktrace.Sampler
	samplerDesc string
	serviceName string
}

const (
	protoHTTP = "http/protobuf"
	protoGRPC = "grpc"
)

func readEnv(getenv func(string) string) (envConfig, error) {
	var c envConfig
	var errs []error
	bad := func(name, value, want string) {
		errs = append(errs, fmt.Errorf("%s=%q: %s", name, value, want))
	}
	if v := getenv("OTEL_SDK_DISABLED"); v != "" {
		switch strings.ToLower(v) {
		case "true":
			return c, nil
		case "false":
		default:
			bad("OTEL_SDK_DISABLED", v, "must be true or false")
		}
	}
	switch v := getenv("OTEL_TRACES_EXPORTER"); strings.ToLower(v) {
	case "", "otlp":
	case "none":
		return c, nil
	default:
		bad("OTEL_TRACES_EXPORTER", v, "must be otlp or none (the only exporter built in)")
	}
	protoVar := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	c.protocol = getenv(protoVar)
	if c.protocol == "" {
		protoVar = "OTEL_EXPORTER_OTLP_PROTOCOL"
		c.protocol = getenv(protoVar)
	}
	switch c.protocol {
	case "":
		c.protocol = protoHTTP
	case protoHTTP, protoGRPC:
	default:
		bad(protoVar, c.protocol, "must be http/protobuf or grpc (http/json is not supported)")
	}
	if v := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); v != "" {
		// The signal's own URL is used as it is, path included.
		if err := checkEndpoint(v); err != nil {
			bad("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", v, err.Error())
		}
		c.endpoint = v
	} else if v := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); v != "" {
		if err := checkEndpoint(v); err != nil {
			bad("OTEL_EXPORTER_OTLP_ENDPOINT", v, err.Error())
		}
		c.endpoint = v
		if c.protocol == protoHTTP {
			// The base URL of every signal: traces go to its /v1/traces.
			c.endpoint = strings.TrimRight(v, "/") + "/v1/traces"
		}
	}
	c.sampler, c.samplerDesc = sampler(getenv, bad)
	c.serviceName = getenv("OTEL_SERVICE_NAME")
	if err := errors.Join(errs...); err != nil {
		return envConfig{}, err
	}
	return c, nil
}

func checkEndpoint(v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be a URL like http://collector:4318")
	}
	return nil
}

// sampler is OTEL_TRACES_SAMPLER with its argument, as the specification names them;
// parentbased_always_on by default.
func sampler(getenv func(string) string, bad func(name, value, want string)) (sdktrace.Sampler, string) {
	name, arg := getenv("OTEL_TRACES_SAMPLER"), getenv("OTEL_TRACES_SAMPLER_ARG")
	ratio := func() float64 {
		if arg == "" {
			return 1
		}
		f, err := strconv.ParseFloat(arg, 64)
		if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
			bad("OTEL_TRACES_SAMPLER_ARG", arg, "must be a number from 0 to 1, like 0.1")
			return 1
		}
		return f
	}
	switch strings.ToLower(name) {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), "parentbased_always_on"
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), "parentbased_always_off"
	case "parentbased_traceidratio":
		r := ratio()
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(r)), "parentbased_traceidratio " + strconv.FormatFloat(r, 'g', -1, 64)
	case "always_on":
		return sdktrace.AlwaysSample(), "always_on"
	case "always_off":
		return sdktrace.NeverSample(), "always_off"
	case "traceidratio":
		r := ratio()
		return sdktrace.TraceIDRatioBased(r), "traceidratio " + strconv.FormatFloat(r, 'g', -1, 64)
	}
	bad("OTEL_TRACES_SAMPLER", name, "must be always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio")
	return sdktrace.AlwaysSample(), ""
}

// redactURL drops a user and password from an endpoint written into the log.
func redactURL(v string) string {
	u, err := url.Parse(v)
	if err != nil {
		return v
	}
	u.User = nil
	u.RawQuery = ""
	return u.String()
}
