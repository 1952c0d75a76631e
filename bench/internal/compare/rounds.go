package compare

import (
	"context"
	"fmt"
	"time"
)

// Rounds is how the drivers measure several targets: Count rounds, each running every
// target once in Order, with Pause between runs. Interleaving puts a neighbour's load
// on every target alike instead of on whichever ran during it.
type Rounds struct {
	Count     int
	Alternate bool
	Pause     time.Duration
}

// Resolve sets the default count (1 for one target, 3 for several) and checks bounds.
func (rs *Rounds) Resolve(targets int) error {
	if rs.Count <= 0 {
		rs.Count = 1
		if targets > 1 {
			rs.Count = 3
		}
	}
	if rs.Count > 100 {
		return fmt.Errorf("rounds %d above 100", rs.Count)
	}
	if rs.Pause < 0 || rs.Pause > time.Minute {
		return fmt.Errorf("pause %s outside 0..1m", rs.Pause)
	}
	return nil
}

// RunFunc measures one target once (round and target count from 0) and returns the
// figures for tb.Rounds.
type RunFunc func(ctx context.Context, round, target int) (map[string]float64, error)

// Run measures every target of tb once per round, in Order, and appends each round's
// figures to tb.Rounds. It stops at the first error, which names the round and the
// target, and, when ctx ends, before the next run (the caller tells an interrupted run
// from ctx.Err()).
func (rs Rounds) Run(ctx context.Context, tb *Table, run RunFunc) error {
	n := len(tb.Targets)
	first := true
	for r := 0; r < rs.Count; r++ {
		row := make([]map[string]float64, n)
		for _, i := range Order(r, n, rs.Alternate) {
			if !first {
				Pause(ctx, rs.Pause)
			}
			first = false
			if ctx.Err() != nil {
				return nil
			}
			figs, err := run(ctx, r, i)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", r+1, tb.Targets[i], err)
			}
			row[i] = figs
		}
		tb.Rounds = append(tb.Rounds, row)
	}
	return nil
}
