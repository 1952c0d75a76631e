// Package testkit holds the small fakes the repository's tests share: a
// clock stepped by hand, a buffer safe to write from one goroutine and read
// from another, and loggers that say nothing. One of each, so tests do not
// grow copies.
package testkit

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Clock is a clock the test advances, so windows, cooldowns and timeouts are
// tested by stepping time, never by sleeping. Safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock is a clock standing at start.
func NewClock(start time.Time) *Clock { return &Clock{t: start} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Buffer collects output (a process's or a logger's) that the test reads
// while it is still being written.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Logger is a logger that discards everything.
func Logger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// QuietRedis silences go-redis's package logger, which otherwise prints
// every refused connection of a test that stops Redis on purpose.
func QuietRedis() { redis.SetLogger(quietRedis{}) }

type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}
