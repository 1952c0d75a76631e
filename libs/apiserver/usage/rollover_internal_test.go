package usage

import (
	"context"
	"testing"
	"time"
)

// TestRolloverMovesAddToTheNextDay: with the real clock Add reads no clock; the midnight
// timer's rollover makes the next day current, and requests before and after it are
// counted on their own days.
func TestRolloverMovesAddToTheNextDay(t *testing.T) {
	ctx := context.Background()
	c := New(Config{})
	defer func() { _ = c.Close(ctx, false) }()
	if d := c.untilMidnight(); d <= 0 || d > 24*time.Hour {
		t.Fatalf("untilMidnight = %s, want (0, 24h]", d)
	}
	day := c.cur.Load().day
	if day != dayNumber(time.Now()) && day != dayNumber(time.Now())-1 {
		t.Fatalf("current day %d, today is %d", day, dayNumber(time.Now()))
	}
	_ = c.Add("acme", true)
	// A day passes on the counter's clock: what the timer sees at midnight.
	c.baseNano += nanosPerDay
	c.rollover()
	if got := c.cur.Load().day; got != day+1 {
		t.Fatalf("after rollover the current day is %d, want %d", got, day+1)
	}
	_ = c.Add("acme", true)
	_ = c.Add("acme", false)
	for _, tc := range []struct {
		day     int64
		allowed int64
		limited int64
	}{{day, 1, 0}, {day + 1, 1, 1}} {
		got, err := c.Day(ctx, "acme", time.Unix(tc.day*86400, 0))
		if err != nil {
			t.Fatal(err)
		}
		if got.Allowed != tc.allowed || got.Limited != tc.limited {
			t.Errorf("day %d: %+v, want %d allowed, %d limited", tc.day, got, tc.allowed, tc.limited)
		}
	}
	// After Close a late rollover does not arm the timer again.
	_ = c.Close(ctx, false)
	c.rollover()
	if c.midnight.Stop() {
		t.Error("the midnight timer was armed again after Close")
	}
}
