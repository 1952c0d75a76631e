// Package tracing sends OpenTelemetry traces of a service over OTLP: a server span per
// request, continued from an incoming W3C traceparent, and its Redis calls as child spans.
// It is off, and costs nothing, unless OTEL_EXPORTER_OTLP_ENDPOINT (or the traces one) is set.
// The OTEL_* variables are read once, by LoadConfig, and handed to the SDK by Setup.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/credentials"
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

// Setup returns the provider c describes, or nil (and no exporter) when c is off (see
// LoadConfig). Every setting reaches the SDK explicitly, so it reads no variable behind
// c's back (where it would, for the span limits, Setup passes the SDK's defaults). The
// exporter connects lazily: a collector that is down delays nothing but its own spans.
func Setup(ctx context.Context, c Config, o Options) (*Provider, error) {
	if !c.Enabled() {
		return nil, nil
	}
	tlsCfg, err := c.tlsConfig()
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	var exp sdktrace.SpanExporter
	switch c.Protocol {
	case protoGRPC:
		opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpointURL(c.Endpoint), otlptracegrpc.WithTimeout(c.Timeout),
			otlptracegrpc.WithHeaders(c.Headers)}
		if c.Gzip {
			opts = append(opts, otlptracegrpc.WithCompressor("gzip"))
		}
		if tlsCfg != nil {
			opts = append(opts, otlptracegrpc.WithTLSCredentials(credentials.NewTLS(tlsCfg)))
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	default:
		opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(c.Endpoint), otlptracehttp.WithTimeout(c.Timeout),
			otlptracehttp.WithHeaders(c.Headers), otlptracehttp.WithCompression(otlptracehttp.NoCompression)}
		if c.Gzip {
			opts = append(opts, otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
		}
		if tlsCfg != nil {
			opts = append(opts, otlptracehttp.WithTLSClientConfig(tlsCfg))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter for %s: %w", redactURL(c.Endpoint), err)
	}
	name := o.ServiceName
	if name == "" {
		name = "api"
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", name)}
	if o.ServiceVersion != "" {
		attrs = append(attrs, attribute.String("service.version", o.ServiceVersion))
	}
	// Later attributes win: OTEL_RESOURCE_ATTRIBUTES may name the service, and
	// OTEL_SERVICE_NAME beats it, as the specification says.
	for _, k := range slices.Sorted(maps.Keys(c.Resource)) {
		attrs = append(attrs, attribute.String(k, c.Resource[k]))
	}
	if c.ServiceName != "" {
		attrs = append(attrs, attribute.String("service.name", c.ServiceName))
	}
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(attrs...))
	if err != nil {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("tracing: resource: %w", err)
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
	samp, sampDesc := c.sampler()
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(c.ScheduleDelay), sdktrace.WithExportTimeout(c.ExportTimeout),
			sdktrace.WithMaxQueueSize(c.MaxQueue), sdktrace.WithMaxExportBatchSize(c.MaxBatch)),
		sdktrace.WithSampler(samp),
		sdktrace.WithResource(res),
		sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{
			AttributeValueLengthLimit:   sdktrace.DefaultAttributeValueLengthLimit,
			AttributeCountLimit:         sdktrace.DefaultAttributeCountLimit,
			EventCountLimit:             sdktrace.DefaultEventCountLimit,
			LinkCountLimit:              sdktrace.DefaultLinkCountLimit,
			AttributePerEventCountLimit: sdktrace.DefaultAttributePerEventCountLimit,
			AttributePerLinkCountLimit:  sdktrace.DefaultAttributePerLinkCountLimit,
		}),
	)
	return &Provider{
		tp:     tp,
		tracer: tp.Tracer(instrumentation),
		prop:   propagation.TraceContext{},
		redis:  childOnly{tp: tp},
		desc:   fmt.Sprintf("otlp %s %s, sampler %s, service %s", c.Protocol, redactURL(c.Endpoint), sampDesc, name),
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

const (
	protoHTTP = "http/protobuf"
	protoGRPC = "grpc"
)

func checkEndpoint(v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be a URL like http://collector:4318")
	}
	return nil
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
