package ratelimit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/apistack/platform/libs/apiserver/testkit"
)

// failing is a backend that always fails, like Redis when it is down.
type failing struct{ err error }

func (f failing) Allow(context.Context, string, Limit) (Result, error) { return Result{}, f.err }

var errDown = errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")

func TestGuardPolicies(t *testing.T) {
	l := Limit{Max: 5, Window: time.Minute}
	tests := []struct {
		name    string
		cfg     GuardConfig
		backend Limiter
		want    Result
		wantErr error
		counted float64
	}{
		{
			name: "healthy backend passes through", backend: NewMemory(MemoryConfig{}),
			want: Result{Allowed: true, Limit: 5, Remaining: 4, ResetAfter: 12 * time.Second},
		},
		{
			name: "fail open allows and reports", backend: failing{errDown},
			want: Result{Allowed: true, Limit: 5}, wantErr: ErrBackend, counted: 1,
		},
		{
			name: "fail closed denies and reports", backend: failing{errDown}, cfg: GuardConfig{FailClosed: true},
			want: Result{Limit: 5, RetryAfter: time.Second}, wantErr: ErrBackend, counted: 1,
		},
		{
			name: "fail closed retry after is configurable", backend: failing{errDown}, cfg: GuardConfig{FailClosed: true, ClosedRetryAfter: 5 * time.Second},
			want: Result{Limit: 5, RetryAfter: 5 * time.Second}, wantErr: ErrBackend, counted: 1,
		},
		{
			name: "invalid limit is not a backend failure", backend: failing{fmt.Errorf("%w: max 0", ErrInvalidLimit)},
			wantErr: ErrInvalidLimit,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			tt.cfg.Clock = clock.Now
			tt.cfg.Logger = testkit.Logger()
			g := NewGuard(tt.backend, tt.cfg)
			got, err := g.Allow(context.Background(), "k", l)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == ErrBackend && !errors.Is(err, errDown) {
				t.Fatalf("error %v does not wrap the cause", err)
			}
			if tt.wantErr != ErrInvalidLimit && got != tt.want {
				t.Fatalf("result = %+v, want %+v", got, tt.want)
			}
			if n := testutil.ToFloat64(g); n != tt.counted {
				t.Fatalf("ratelimit_backend_errors_total = %v, want %v", n, tt.counted)
			}
		})
	}
}

func TestGuardDoesNotBlameBackendForCallerGoingAway(t *testing.T) {
	g := NewGuard(failing{context.Canceled}, GuardConfig{Logger: testkit.Logger()})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := g.Allow(ctx, "k", Limit{Max: 1, Window: time.Second})
	if !errors.Is(err, ErrBackend) {
		t.Fatalf("error = %v, want ErrBackend", err)
	}
	if n := testutil.ToFloat64(g); n != 0 {
		t.Fatalf("counted %v errors for a cancelled request", n)
	}
}

func TestGuardLogsAtMostOncePerInterval(t *testing.T) {
	var buf bytes.Buffer
	clock := newFakeClock()
	g := NewGuard(failing{errDown}, GuardConfig{
		Logger:      slog.New(slog.NewTextHandler(&buf, nil)),
		LogInterval: 10 * time.Second,
		Clock:       clock.Now,
	})
	ctx, l := context.Background(), Limit{Max: 1, Window: time.Second}
	for range 100 {
		_, _ = g.Allow(ctx, "k", l)
	}
	clock.Advance(9 * time.Second)
	_, _ = g.Allow(ctx, "k", l)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "suppressed=0") || !strings.Contains(lines[0], "connection refused") {
		t.Fatalf("after 101 errors within 9 s, log =\n%s\nwant one line with the cause", buf.String())
	}
	clock.Advance(time.Second)
	_, _ = g.Allow(ctx, "k", l)
	lines = strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "suppressed=100") || !strings.Contains(lines[1], `policy="fail open"`) {
		t.Fatalf("after the interval, log =\n%s\nwant a second line counting 100 suppressed errors", buf.String())
	}
	if n := testutil.ToFloat64(g); n != 102 {
		t.Fatalf("ratelimit_backend_errors_total = %v, want 102 (every error counts, logged or not)", n)
	}
}

func TestGuardRegistersAsCollector(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	g := NewGuard(failing{errDown}, GuardConfig{Logger: testkit.Logger()})
	reg.MustRegister(g)
	_, _ = g.Allow(context.Background(), "k", Limit{Max: 1, Window: time.Second})
	want := `
# HELP ratelimit_backend_errors_total Rate-limit decisions the backend (Redis) failed to make; the failure policy decided instead.
# TYPE ratelimit_backend_errors_total counter
ratelimit_backend_errors_total 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ratelimit_backend_errors_total"); err != nil {
		t.Fatal(err)
	}
}
