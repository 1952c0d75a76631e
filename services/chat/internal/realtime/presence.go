package realtime

import (
	"context"
	"sync"
)

// Presence counts a channel's connections over every replica. Each replica
// reports its own count per channel now and then; a replica that stops
// reporting (crashed) drops out after the store's expiry.
type Presence interface {
	// Report records that this replica holds n connections in channel
	// (n = 0 withdraws it) and returns the count over all replicas.
	Report(ctx context.Context, channel, replica string, n int) (int, error)
}

// BatchPresence is a Presence that takes many channels' reports in one
// round trip. The hub's periodic refresh uses it when it can: a replica
// with 1,000 channels otherwise sends Redis 100-200 separate writes a
// second, and with appendfsync always each may cost a disk flush that
// every send waits behind.
type BatchPresence interface {
	Presence
	// ReportBatch does Report(channels[i], replica, counts[i]) for every i
	// and returns the totals, -1 for a channel whose report failed; the
	// error is for a batch that failed as a whole.
	ReportBatch(ctx context.Context, replica string, channels []string, counts []int) ([]int, error)
}

// LocalPresence is the presence of one process (the memory engine): the
// total is the sum of what its replicas report, kept in memory.
type LocalPresence struct {
	mu     sync.Mutex
	counts map[string]map[string]int // channel -> replica -> count
}

var _ Presence = (*LocalPresence)(nil)

// NewLocalPresence returns an empty in-process presence.
func NewLocalPresence() *LocalPresence {
	return &LocalPresence{counts: map[string]map[string]int{}}
}

// Report implements Presence.
func (p *LocalPresence) Report(_ context.Context, channel, replica string, n int) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.counts[channel]
	if m == nil {
		m = map[string]int{}
		p.counts[channel] = m
	}
	if n > 0 {
		m[replica] = n
	} else {
		delete(m, replica)
	}
	total := 0
	for _, c := range m {
		total += c
	}
	if len(m) == 0 {
		delete(p.counts, channel)
	}
	return total, nil
}
