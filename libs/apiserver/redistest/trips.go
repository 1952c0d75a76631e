package redistest

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Trips is a go-redis hook that records the round trips a client makes:
// one entry per command (its name), one per pipeline ("pipeline(a b c)",
// however many commands it carries). Add it with client.AddHook; tests
// bound how many round trips an operation costs with During.
type Trips struct {
	mu    sync.Mutex
	trips []string
}

// DialHook passes dials through.
func (t *Trips) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook records a command.
func (t *Trips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		t.add(cmd.Name())
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook records a pipeline as one round trip.
func (t *Trips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		names := make([]string, len(cmds))
		for i, c := range cmds {
			names[i] = c.Name()
		}
		t.add("pipeline(" + strings.Join(names, " ") + ")")
		return next(ctx, cmds)
	}
}

func (t *Trips) add(s string) {
	t.mu.Lock()
	t.trips = append(t.trips, s)
	t.mu.Unlock()
}

// During returns the round trips made while f ran (by any goroutine using
// the client).
func (t *Trips) During(f func()) []string {
	t.mu.Lock()
	t.trips = nil
	t.mu.Unlock()
	f()
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.trips...)
}
