package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// step is one request in a scripted scenario: advance the clock, ask, and
// compare.
type step struct {
	advance    time.Duration
	key        string
	allowed    bool
	remaining  int
	retryAfter time.Duration
	resetAfter time.Duration
}

// scenarioLimit is one request every 20 s, burst 3.
var scenarioLimit = Limit{Max: 3, Window: time.Minute}

// scenarios under scenarioLimit, shared by the Memory and Redis tests: both
// backends must decide alike.
var scenarios = []struct {
	name  string
	steps []step
}{
	{
		name: "max then deny",
		steps: []step{
			{key: "a", allowed: true, remaining: 2, resetAfter: 20 * time.Second},
			{key: "a", allowed: true, remaining: 1, resetAfter: 40 * time.Second},
			{key: "a", allowed: true, remaining: 0, resetAfter: time.Minute},
			{key: "a", allowed: false, remaining: 0, retryAfter: 20 * time.Second, resetAfter: time.Minute},
			{key: "a", allowed: false, remaining: 0, retryAfter: 20 * time.Second, resetAfter: time.Minute},
		},
	},
	{
		name: "one request back per interval",
		steps: []step{
			{key: "a", allowed: true, remaining: 2, resetAfter: 20 * time.Second},
			{key: "a", allowed: true, remaining: 1, resetAfter: 40 * time.Second},
			{key: "a", allowed: true, remaining: 0, resetAfter: time.Minute},
			{advance: 19 * time.Second, key: "a", allowed: false, retryAfter: time.Second, resetAfter: 41 * time.Second},
			{advance: time.Second, key: "a", allowed: true, remaining: 0, resetAfter: time.Minute},
			{key: "a", allowed: false, retryAfter: 20 * time.Second, resetAfter: time.Minute},
		},
	},
	{
		name: "full burst again after a window",
		steps: []step{
			{key: "a", allowed: true, remaining: 2, resetAfter: 20 * time.Second},
			{key: "a", allowed: true, remaining: 1, resetAfter: 40 * time.Second},
			{key: "a", allowed: true, remaining: 0, resetAfter: time.Minute},
			{key: "a", allowed: false, retryAfter: 20 * time.Second, resetAfter: time.Minute},
			{advance: time.Minute, key: "a", allowed: true, remaining: 2, resetAfter: 20 * time.Second},
			{key: "a", allowed: true, remaining: 1, resetAfter: 40 * time.Second},
		},
	},
	{
		name: "denied requests consume nothing",
		steps: []step{
			{key: "a", allowed: true, remaining: 2, resetAfter: 20 * time.Second},
			{key: "a", allowed: true, remaining: 1, resetAfter: 40 * time.Second},
			{key: "a", allowed: true, remaining: 0, resetAfter: time.Minute},
			{advance: 10 * time.Second, key: "a", allowed: false, retryAfter: 10 * time.Second, resetAfter: 50 * time.Second},
			{advance: 9 * time.Second, key: "a", allowed: false, retryAfter: time.Second, resetAfter: 41 * time.Second},
			{advance: time.Second, key: "a", allowed: true, remaining: 0, resetAfter: time.Minute},
		},
	},
	{
		name: "keys are independent",
		steps: []step{
			{key: "global:1.2.3.4", allowed: true, remaining: 2, resetAfter: 20 * time.Second},
			{key: "global:1.2.3.4", allowed: true, remaining: 1, resetAfter: 40 * time.Second},
			{key: "global:1.2.3.4", allowed: true, remaining: 0, resetAfter: time.Minute},
			{key: "global:1.2.3.4", allowed: false, retryAfter: 20 * time.Second, resetAfter: time.Minute},
			{key: "global:5.6.7.8", allowed: true, remaining: 2, resetAfter: 20 * time.Second},
			{key: "route:GET /items:1.2.3.4", allowed: true, remaining: 2, resetAfter: 20 * time.Second},
		},
	},
}

func TestMemoryScenarios(t *testing.T) {
	for _, tt := range scenarios {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			m := NewMemory(MemoryConfig{Clock: clock.Now})
			for i, s := range tt.steps {
				clock.Advance(s.advance)
				got, err := m.Allow(context.Background(), s.key, scenarioLimit)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				want := Result{Allowed: s.allowed, Limit: 3, Remaining: s.remaining, RetryAfter: s.retryAfter, ResetAfter: s.resetAfter}
				if got != want {
					t.Fatalf("step %d (%s): got %+v, want %+v", i, s.key, got, want)
				}
			}
		})
	}
}

func TestMemoryRejectsInvalidLimits(t *testing.T) {
	m := NewMemory(MemoryConfig{})
	for _, l := range []Limit{{0, time.Minute}, {-1, time.Minute}, {5, 0}, {5, -time.Second}, {10, 5 * time.Nanosecond}} {
		if _, err := m.Allow(context.Background(), "k", l); !errors.Is(err, ErrInvalidLimit) {
			t.Errorf("Allow(%v) error = %v, want ErrInvalidLimit", l, err)
		}
	}
}

func TestMemoryIsBounded(t *testing.T) {
	clock := newFakeClock()
	m := NewMemory(MemoryConfig{MaxKeys: 100, Clock: clock.Now})
	l := Limit{Max: 1, Window: time.Hour}
	for i := range 1000 {
		if _, err := m.Allow(context.Background(), fmt.Sprint("k", i), l); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.Len(); n > 100 {
		t.Fatalf("Len = %d after 1000 live keys, want at most 100", n)
	}
}

func TestMemoryEvictsIdleKeysFirst(t *testing.T) {
	clock := newFakeClock()
	m := NewMemory(MemoryConfig{MaxKeys: 8, Clock: clock.Now, SweepInterval: 24 * time.Hour})
	ctx := context.Background()
	short, long := Limit{Max: 1, Window: time.Second}, Limit{Max: 1, Window: time.Hour}
	// One live key under a long limit, seven that will be idle in a second.
	if _, err := m.Allow(ctx, "live", long); err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		_, _ = m.Allow(ctx, fmt.Sprint("idle", i), short)
	}
	clock.Advance(2 * time.Second)
	// Seven newcomers: each must push out an idle key, never the live one.
	for i := range 7 {
		_, _ = m.Allow(ctx, fmt.Sprint("new", i), long)
	}
	res, _ := m.Allow(ctx, "live", long)
	if res.Allowed {
		t.Fatal("the live key was evicted (it got a fresh burst) while idle keys were available")
	}
	if n := m.Len(); n > 8 {
		t.Fatalf("Len = %d, want at most 8", n)
	}
}

func TestMemorySweepsIdleKeys(t *testing.T) {
	clock := newFakeClock()
	m := NewMemory(MemoryConfig{MaxKeys: 64, Clock: clock.Now, SweepInterval: time.Minute})
	ctx := context.Background()
	for i := range 50 {
		_, _ = m.Allow(ctx, fmt.Sprint("k", i), Limit{Max: 10, Window: time.Second})
	}
	clock.Advance(2 * time.Minute)
	_, _ = m.Allow(ctx, "trigger", Limit{Max: 10, Window: time.Second})
	if n := m.Len(); n != 1 {
		t.Fatalf("Len = %d after every key went idle, want 1 (the new key)", n)
	}
}

func TestMemoryConcurrentCallersShareOneLimit(t *testing.T) {
	clock := newFakeClock() // frozen: nothing refills during the test
	m := NewMemory(MemoryConfig{Clock: clock.Now})
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				res, err := m.Allow(context.Background(), "hot", Limit{Max: 50, Window: time.Minute})
				if err != nil {
					t.Error(err)
					return
				}
				if res.Allowed {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := allowed.Load(); got != 50 {
		t.Fatalf("%d requests allowed across 8 goroutines, want exactly 50", got)
	}
}
