package ratelimit

import (
	"context"
	"time"
)

// DefaultMaxKeys bounds the Memory limiter. Measured: 100 000 keys like
// "route:GET /items/:id:10.1.2.3" take about 7 MB of heap.
const DefaultMaxKeys = 100_000

// MemoryConfig configures NewMemory; the zero value is usable.
type MemoryConfig struct {
	// MaxKeys bounds the number of keys tracked (default DefaultMaxKeys).
	// The bound is enforced per shard (MaxKeys/shards each), so eviction
	// may start a little before MaxKeys keys in total, never after.
	// Keys whose bucket has refilled are forgotten first, losing nothing.
	// Only with more than MaxKeys clients active within one Window does
	// the limiter forget a live key, which then starts again from a full
	// burst; the one forgotten is the one closest to a full bucket.
	MaxKeys int
	// SweepInterval is how often idle keys are removed even when the
	// table is not full (default one minute).
	SweepInterval time.Duration
	// Clock replaces time.Now, for tests.
	Clock func() time.Time
}

// Memory is the in-process Limiter: a GCRA per key, like redis_rate, so
// switching to Redis changes where counters live, not how they count. Each
// replica counts on its own. Safe for concurrent use; never returns an
// error for a valid Limit.
type Memory struct {
	t     *table[string, tat]
	clock func() time.Time
	base  time.Time
}

// tat is a GCRA theoretical arrival time in nanoseconds since Memory.base.
// Once it is in the past the bucket is full, exactly as if the key were
// absent.
type tat int64

func (t tat) expiry() int64 { return int64(t) }

var _ Limiter = (*Memory)(nil)

// NewMemory returns an empty in-memory limiter.
func NewMemory(cfg MemoryConfig) *Memory {
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = DefaultMaxKeys
	}
	if cfg.SweepInterval <= 0 {
		cfg.SweepInterval = time.Minute
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	m := &Memory{clock: cfg.Clock}
	m.base = m.clock()
	m.t = newTable[string, tat](cfg.MaxKeys, int64(cfg.SweepInterval))
	return m
}

// Allow implements Limiter.
func (m *Memory) Allow(_ context.Context, key string, l Limit) (Result, error) {
	if err := l.Validate(); err != nil {
		return Result{}, err
	}
	// Integer nanoseconds make the arithmetic exact, unlike the Lua float in
	// redis_rate; truncating the interval lets at most Max-1 ns of slack per
	// Window through.
	interval := int64(l.Window) / int64(l.Max)
	burst := interval * int64(l.Max)

	// Read the clock outside the lock to keep the critical section short; a
	// slightly stale now only makes the decision stricter.
	now := int64(m.clock().Sub(m.base))
	sh := m.t.shardFor(key)
	sh.mu.Lock()
	sh.maintain(now, m.t.sweepEvery)
	prev, known := sh.m[key]
	t := max(int64(prev), now)
	next := t + interval
	diff := now - (next - burst)
	if diff < 0 {
		sh.mu.Unlock()
		return Result{Limit: l.Max, ResetAfter: time.Duration(t - now), RetryAfter: time.Duration(-diff)}, nil
	}
	if !known {
		sh.makeRoom(now, m.t.perShard)
	}
	sh.m[key] = tat(next)
	sh.mu.Unlock()
	return Result{Allowed: true, Limit: l.Max, Remaining: int(diff / interval), ResetAfter: time.Duration(next - now)}, nil
}

// Len is the number of keys currently tracked.
func (m *Memory) Len() int { return m.t.len() }
