package pubsubhop

import (
	"context"
	"testing"
	"time"
)

// TestRunTimesEveryMessageAndCountsTheLost: a relay that delays every
// message by 2 ms and drops every fifth: the lost are counted, and every
// recorded hop is at least the delay; duplicates and garbage are ignored.
func TestRunTimesEveryMessageAndCountsTheLost(t *testing.T) {
	recv := make(chan string, 100)
	i := 0
	publish := func(_ context.Context, p string) error {
		i++
		if i%5 == 0 {
			return nil // dropped
		}
		go func() {
			time.Sleep(2 * time.Millisecond)
			recv <- p
			recv <- p // a duplicate
			recv <- "garbage"
		}()
		return nil
	}
	h, lost, err := Run(context.Background(), publish, recv, 20, time.Millisecond, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if lost != 4 || h.Count() != 16 {
		t.Fatalf("lost %d, recorded %d; want 4 and 16", lost, h.Count())
	}
	if h.Min() < int64(2*time.Millisecond) {
		t.Fatalf("a hop of %d ns, below the relay's 2 ms delay", h.Min())
	}
}
