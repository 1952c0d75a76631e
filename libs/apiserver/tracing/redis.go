package tracing

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"

	"github.com/apistack/platform/libs/apiserver/ratelimit"
)

// InstrumentRedis makes every command of client, run on a request's context, a child span
// of the request's (redisotel), with db.system "redis". Call it once, before the client is
// shared. Commands are named, never written out: their arguments are chat messages,
// tokens and keys. Commands
// outside any request (a background loop, a blocking read) make no span, which would
// otherwise each start a trace of its own. With tracing off it does nothing.
func (p *Provider) InstrumentRedis(client redis.UniversalClient) error {
	if p == nil || client == nil {
		return nil
	}
	err := redisotel.InstrumentTracing(client,
		redisotel.WithTracerProvider(p.redis),
		redisotel.WithDBStatement(false),
		redisotel.WithCallerEnabled(false), // a stack walk per command
		redisotel.WithCommandFilter(redisotel.DefaultCommandFilter))
	if err != nil {
		return fmt.Errorf("tracing: redis: %w", err)
	}
	return nil
}

// Limiter wraps a rate limiter whose counters live in Redis so that each check is a child
// span of the request's. The library's Redis limiter batches concurrent checks into
// pipelines that run on no request's context (autopipelining), where InstrumentRedis sees
// no parent; this span is where such a check's round trip shows in the request's trace.
// With tracing off it returns l.
func (p *Provider) Limiter(l ratelimit.Limiter) ratelimit.Limiter {
	if p == nil {
		return l
	}
	return &limiter{Limiter: l, tracer: p.redis.Tracer(instrumentation)}
}

type limiter struct {
	ratelimit.Limiter
	tracer trace.Tracer
}

var limiterAttrs = trace.WithAttributes(attribute.String("db.system", "redis"), attribute.String("db.operation", "ratelimit"))

func (l *limiter) Allow(ctx context.Context, key string, lim ratelimit.Limit) (ratelimit.Result, error) {
	ctx, span := l.tracer.Start(ctx, "ratelimit", trace.WithSpanKind(trace.SpanKindClient), limiterAttrs)
	defer span.End()
	res, err := l.Limiter.Allow(ctx, key, lim)
	if span.IsRecording() {
		span.SetAttributes(attribute.Bool("ratelimit.allowed", res.Allowed))
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "rate limiter store failed")
		}
	}
	return res, err
}

// childOnly is a tracer provider whose spans exist only under another span: the
// provider Redis instrumentation gets.
type childOnly struct {
	embedded.TracerProvider
	tp trace.TracerProvider
}

func (c childOnly) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return childOnlyTracer{tr: c.tp.Tracer(name, opts...)}
}

type childOnlyTracer struct {
	embedded.Tracer
	tr trace.Tracer
}

func (t childOnlyTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		// The span in ctx, if any, is a no-op one: ending it does nothing.
		return ctx, trace.SpanFromContext(ctx)
	}
	return t.tr.Start(ctx, name, opts...)
}
