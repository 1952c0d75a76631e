package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ErrBackend marks an error from Guard.Allow whose Result is the failure
// policy's decision rather than the backend's.
var ErrBackend = errors.New("ratelimit: backend failed")

// GuardConfig configures NewGuard; the zero value fails open, logs to
// slog.Default at most every 10 s and counts errors.
type GuardConfig struct {
	// FailClosed denies requests while the backend fails. The default,
	// failing open, keeps the service available when only its limiter's
	// store is down; fail closed where an unlimited burst costs more than
	// an outage (expensive or abusable endpoints).
	FailClosed bool
	// ClosedRetryAfter is the RetryAfter reported when failing closed
	// (default 1 s).
	ClosedRetryAfter time.Duration
	// Logger receives the warnings (default slog.Default()).
	Logger *slog.Logger
	// LogInterval is the least time between two log lines; errors in
	// between are counted and reported with the next line (default 10 s).
	// During an outage every request fails, and one line per request would
	// bury everything else.
	LogInterval time.Duration
	// Clock replaces time.Now for log throttling, for tests.
	Clock func() time.Time
}

// Guard applies a failure policy to a backend that can fail (Redis). It is
// also a prometheus.Collector exporting ratelimit_backend_errors_total;
// register it with the application's registry.
type Guard struct {
	backend     Limiter
	failClosed  bool
	closedRetry time.Duration
	errors      prometheus.Counter
	log         *slog.Logger
	logEvery    time.Duration
	clock       func() time.Time

	mu         sync.Mutex
	nextLog    time.Time
	suppressed int
}

var (
	_ Limiter              = (*Guard)(nil)
	_ prometheus.Collector = (*Guard)(nil)
)

// NewGuard wraps backend with the failure policy in cfg.
func NewGuard(backend Limiter, cfg GuardConfig) *Guard {
	if cfg.ClosedRetryAfter <= 0 {
		cfg.ClosedRetryAfter = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.LogInterval <= 0 {
		cfg.LogInterval = 10 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	return &Guard{
		backend:     backend,
		failClosed:  cfg.FailClosed,
		closedRetry: cfg.ClosedRetryAfter,
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ratelimit_backend_errors_total",
			Help: "Rate-limit decisions the backend (Redis) failed to make; the failure policy decided instead.",
		}),
		log:      cfg.Logger,
		logEvery: cfg.LogInterval,
		clock:    cfg.Clock,
	}
}

// Allow asks the backend. When the backend fails, the Result carries the
// failure policy's decision (Allowed when failing open; denied with
// RetryAfter when failing closed) and the error wraps ErrBackend and the
// cause. So, unlike most Go APIs, the Result is meaningful with a non-nil
// error; a caller would typically
//
//	res, err := g.Allow(ctx, key, l)
//	switch {
//	case errors.Is(err, ratelimit.ErrBackend) && res.Allowed: // fail open: serve, no RateLimit headers
//	case errors.Is(err, ratelimit.ErrBackend): // fail closed: 503 with Retry-After
//	case err != nil: // invalid Limit: a bug, 500
//	case !res.Allowed: // 429
//	}
//
// A failure while ctx is already done (the client went away) is not the
// backend's fault: it is neither counted nor logged.
func (g *Guard) Allow(ctx context.Context, key string, l Limit) (Result, error) {
	res, err := g.backend.Allow(ctx, key, l)
	if err == nil || errors.Is(err, ErrInvalidLimit) {
		return res, err
	}
	if ctx.Err() == nil {
		g.errors.Inc()
		g.logFailure(err)
	}
	if g.failClosed {
		return Result{Limit: l.Max, RetryAfter: g.closedRetry}, fmt.Errorf("%w: %w", ErrBackend, err)
	}
	return Result{Allowed: true, Limit: l.Max}, fmt.Errorf("%w: %w", ErrBackend, err)
}

func (g *Guard) logFailure(err error) {
	now := g.clock()
	g.mu.Lock()
	if now.Before(g.nextLog) {
		g.suppressed++
		g.mu.Unlock()
		return
	}
	suppressed := g.suppressed
	g.suppressed = 0
	g.nextLog = now.Add(g.logEvery)
	g.mu.Unlock()

	policy := "open"
	if g.failClosed {
		policy = "closed"
	}
	g.log.Warn("rate limiter backend failing",
		slog.String("error", err.Error()),
		slog.String("policy", "fail "+policy),
		slog.Int("suppressed", suppressed),
		slog.Duration("log_interval", g.logEvery))
}

// Describe implements prometheus.Collector.
func (g *Guard) Describe(ch chan<- *prometheus.Desc) { g.errors.Describe(ch) }

// Collect implements prometheus.Collector.
func (g *Guard) Collect(ch chan<- prometheus.Metric) { g.errors.Collect(ch) }

// Backend is the wrapped limiter.
func (g *Guard) Backend() Limiter { return g.backend }

// Ping forwards to the backend's Ping when it has one (Redis), for a
// readiness check; a backend without one (Memory) is always ready.
func (g *Guard) Ping(ctx context.Context) error {
	if p, ok := g.backend.(interface{ Ping(context.Context) error }); ok {
		return p.Ping(ctx)
	}
	return nil
}
