package ratelimit

import (
	"time"

	"github.com/apistack/platform/libs/apiserver/testkit"
)

// newFakeClock is a clock the test advances, so tests about windows never
// sleep.
func newFakeClock() *testkit.Clock {
	return testkit.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
}
