// Package ratelimit counts requests per caller-chosen key and says whether
// the next one may pass, in process (Memory) or shared by replicas (Redis).
//
// # Semantics
//
// Every backend implements GCRA with the semantics of go-redis/redis_rate:
// a Limit{Max, Window} lets Max requests through at once (the burst) and
// then refills at Max per Window, one request every Window/Max. So a client
// that waits a full Window gets a full Max again, and a client that spreads
// its requests evenly never sees a 429. Denied requests do not consume
// anything, so a client that keeps retrying while limited is let through as
// soon as capacity returns (unlike @fastify/rate-limit's continueExceeding).
//
// Keys are opaque and chosen by the caller; the same key under two
// different Limits shares one state, as in redis_rate. The API server uses
// "global:<client-ip>" for the limit shared by all routes of a client and
// "route:<METHOD path>:<client-ip>" for a route with its own limit, so the
// two never interfere.
//
// # Failures
//
// Memory never fails. Redis fails when Redis is slow or down; wrap it in a
// Guard, which applies the failure policy (fail open by default), counts
// the errors in ratelimit_backend_errors_total and logs them at most once
// per interval.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Limit is Max requests per Window, with a burst of Max.
type Limit struct {
	Max    int
	Window time.Duration
}

// Validate reports whether the limit can be enforced: both fields positive,
// and Window at least Max nanoseconds so that one request has a non-zero
// cost.
func (l Limit) Validate() error {
	switch {
	case l.Max <= 0:
		return fmt.Errorf("%w: max %d is not positive", ErrInvalidLimit, l.Max)
	case l.Window <= 0:
		return fmt.Errorf("%w: window %s is not positive", ErrInvalidLimit, l.Window)
	case l.Window < time.Duration(l.Max):
		return fmt.Errorf("%w: %d requests per %s is finer than a nanosecond each", ErrInvalidLimit, l.Max, l.Window)
	}
	return nil
}

// String is like "100 req/15m0s".
func (l Limit) String() string { return fmt.Sprintf("%d req/%s", l.Max, l.Window) }

// Result is the decision for one request.
type Result struct {
	// Allowed is false when the request must be rejected.
	Allowed bool
	// Limit is the Max of the Limit applied (for RateLimit-Limit).
	Limit int
	// Remaining is how many more requests would be allowed right now. The
	// Redis backend computes it in floating point and may report one less
	// than the exact value.
	Remaining int
	// ResetAfter is the time until the key is back to a full burst of Max
	// (for RateLimit-Reset).
	ResetAfter time.Duration
	// RetryAfter is the time until the next request would be allowed; zero
	// when Allowed. Round it up when turning it into Retry-After seconds.
	RetryAfter time.Duration
}

// Limiter decides whether a request for key may pass under l, consuming one
// unit when it does. Implementations are safe for concurrent use.
type Limiter interface {
	Allow(ctx context.Context, key string, l Limit) (Result, error)
}

// ErrInvalidLimit is returned (wrapped) for a Limit that fails Validate. It
// is a programming or configuration error, not a backend failure.
var ErrInvalidLimit = errors.New("ratelimit: invalid limit")
