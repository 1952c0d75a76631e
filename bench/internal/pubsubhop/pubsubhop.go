// Package pubsubhop measures how long a Redis Pub/Sub message takes from
// PUBLISH (or SPUBLISH) to the subscriber: the hop that chat's live
// delivery rides on, without chat around it.
package pubsubhop

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apistack/platform/bench/internal/hist"
)

// Run publishes n messages, one every interval, each carrying its send
// time and sequence number, and records for each the time until recv
// yields it. Messages that have not come grace after the last send are
// lost. publish sends one payload; recv yields received payloads.
func Run(ctx context.Context, publish func(context.Context, string) error, recv <-chan string, n int, interval, grace time.Duration) (h *hist.Histogram, lost int, err error) {
	h = &hist.Histogram{}
	seen := make([]bool, n)
	got := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		timeout := time.NewTimer(time.Duration(n)*interval + grace)
		defer timeout.Stop()
		for got < n {
			select {
			case p := <-recv:
				at := time.Now()
				seq, sent, ok := parse(p)
				if !ok || seq < 0 || seq >= n || seen[seq] {
					continue
				}
				seen[seq] = true
				got++
				h.RecordDuration(at.Sub(sent))
			case <-timeout.C:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := 0; i < n; i++ {
		if err := publish(ctx, fmt.Sprintf("%d %d", i, time.Now().UnixNano())); err != nil {
			return h, 0, fmt.Errorf("publish %d: %w", i, err)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return h, 0, ctx.Err()
		}
	}
	<-done
	return h, n - got, nil
}

// parse reads "<seq> <unix ns>".
func parse(p string) (seq int, sent time.Time, ok bool) {
	a, b, ok := strings.Cut(p, " ")
	if !ok {
		return 0, time.Time{}, false
	}
	seq, err1 := strconv.Atoi(a)
	ns, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil {
		return 0, time.Time{}, false
	}
	return seq, time.Unix(0, ns), true
}
