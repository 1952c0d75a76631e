package ratelimit

import (
	"fmt"
	"math"
	"time"
)

var windowUnits = map[string]time.Duration{
	"ms": time.Millisecond,
	"s":  time.Second,
	"m":  time.Minute,
	"h":  time.Hour,
	"d":  24 * time.Hour,
}

// ParseWindow parses a window such as RATE_LIMIT_WINDOW: a positive decimal
// integer followed by one unit of ms, s, m, h or d ("15m", "500ms", "1d").
// The grammar is deliberately narrower than time.ParseDuration (no
// fractions, signs, spaces or compound values like "1h30m") so that a typo
// is a start-up error instead of a surprising limit.
func ParseWindow(s string) (time.Duration, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	digits, unit := s[:i], s[i:]
	if digits == "" || unit == "" {
		return 0, fmt.Errorf("invalid window %q: want a positive whole number and a unit of ms, s, m, h or d, like 15m or 500ms", s)
	}
	scale, ok := windowUnits[unit]
	if !ok {
		return 0, fmt.Errorf("invalid window %q: unknown unit %q (want ms, s, m, h or d)", s, unit)
	}
	var n int64
	for _, c := range digits {
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, fmt.Errorf("invalid window %q: too large", s)
		}
		n = n*10 + d
	}
	if n == 0 {
		return 0, fmt.Errorf("invalid window %q: must be greater than zero", s)
	}
	if n > math.MaxInt64/int64(scale) {
		return 0, fmt.Errorf("invalid window %q: too large", s)
	}
	return time.Duration(n) * scale, nil
}
