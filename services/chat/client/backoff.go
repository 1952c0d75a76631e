package client

import (
	"crypto/rand"
	"encoding/hex"
	mrand "math/rand/v2"
	"time"
)

// Backoff is an exponential backoff with jitter: attempt n waits a random
// time between half and all of Min·2ⁿ, capped at Max. The jitter spreads
// the clients a replica's restart dropped together, so they do not all
// come back in the same instant.
type Backoff struct {
	Min, Max time.Duration
}

// DefaultBackoff is what Subscribe and SendRetry use when given none.
var DefaultBackoff = Backoff{Min: 250 * time.Millisecond, Max: 30 * time.Second}

// Delay is the wait before retry number attempt (0 for the first retry).
func (b Backoff) Delay(attempt int) time.Duration {
	if b.Min <= 0 {
		b = DefaultBackoff
	}
	if b.Max < b.Min {
		b.Max = b.Min
	}
	d := b.Min
	for i := 0; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	return d/2 + mrand.N(d/2+1)
}

// NewIdempotencyKey returns a random key for SendRequest.IdempotencyKey.
func NewIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}
