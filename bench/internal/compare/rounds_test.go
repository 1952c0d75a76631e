package compare

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestRoundsResolve(t *testing.T) {
	for _, tc := range []struct {
		in      Rounds
		targets int
		count   int
		err     string
	}{
		{Rounds{}, 1, 1, ""},
		{Rounds{}, 2, 3, ""},
		{Rounds{Count: 5}, 2, 5, ""},
		{Rounds{Count: 101}, 2, 0, "rounds 101 above 100"},
		{Rounds{Pause: -time.Second}, 2, 0, "pause -1s outside 0..1m"},
		{Rounds{Pause: 2 * time.Minute}, 2, 0, "pause 2m0s outside 0..1m"},
	} {
		rs := tc.in
		err := rs.Resolve(tc.targets)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("Resolve(%+v): error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || rs.Count != tc.count {
			t.Errorf("Resolve(%+v, %d targets): count %d, error %v; want %d", tc.in, tc.targets, rs.Count, err, tc.count)
		}
	}
}

// TestRoundsRunInterleaves checks the order of the runs, that each round's figures land
// at their target's index whatever order it ran in, and the pauses between runs (none
// before the first or after the last).
func TestRoundsRunInterleaves(t *testing.T) {
	tb := Table{Targets: []string{"a", "b"}}
	var runs []string
	var gaps []time.Duration
	last := time.Time{}
	rs := Rounds{Count: 3, Alternate: true, Pause: 300 * time.Millisecond}
	start := time.Now()
	err := rs.Run(context.Background(), &tb, func(_ context.Context, round, target int) (map[string]float64, error) {
		if !last.IsZero() {
			gaps = append(gaps, time.Since(last))
		} else if d := time.Since(start); d >= rs.Pause {
			t.Errorf("first run after %s: a pause before it", d)
		}
		runs = append(runs, fmt.Sprintf("%d%s", round, tb.Targets[target]))
		last = time.Now()
		return map[string]float64{"v": float64(10*round + target)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(last); d >= rs.Pause {
		t.Errorf("returned %s after the last run: a pause after it", d)
	}
	if want := []string{"0a", "0b", "1b", "1a", "2a", "2b"}; !reflect.DeepEqual(runs, want) {
		t.Errorf("runs %v, want %v", runs, want)
	}
	if len(gaps) != 5 {
		t.Fatalf("%d gaps between 6 runs", len(gaps))
	}
	for i, g := range gaps {
		if g < rs.Pause {
			t.Errorf("gap %d: %s, shorter than the pause %s", i, g, rs.Pause)
		}
	}
	if len(tb.Rounds) != 3 {
		t.Fatalf("%d rounds in the table, want 3", len(tb.Rounds))
	}
	for r, row := range tb.Rounds {
		for i, figs := range row {
			if want := float64(10*r + i); figs["v"] != want {
				t.Errorf("round %d target %d: %v, want %v", r, i, figs["v"], want)
			}
		}
	}
}

func TestRoundsRunStopsAtFirstError(t *testing.T) {
	tb := Table{Targets: []string{"floor", "svc"}}
	boom := errors.New("boom")
	calls := 0
	err := Rounds{Count: 3}.Run(context.Background(), &tb, func(_ context.Context, round, target int) (map[string]float64, error) {
		calls++
		if round == 1 && target == 1 {
			return nil, boom
		}
		return map[string]float64{}, nil
	})
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "round 2, svc: ") {
		t.Fatalf("error %v, want round 2, svc: boom", err)
	}
	if calls != 4 || len(tb.Rounds) != 1 {
		t.Errorf("%d runs and %d complete rounds, want 4 and 1", calls, len(tb.Rounds))
	}
}

// TestRoundsRunStopsWhenContextEnds: the pause ends with ctx, no run starts after it,
// and the round it cut short is left out of the table (every row has every target).
func TestRoundsRunStopsWhenContextEnds(t *testing.T) {
	tb := Table{Targets: []string{"a", "b"}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	start := time.Now()
	err := Rounds{Count: 3, Pause: time.Minute}.Run(ctx, &tb, func(context.Context, int, int) (map[string]float64, error) {
		calls++
		cancel()
		return map[string]float64{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 || len(tb.Rounds) != 0 {
		t.Errorf("%d runs and %d rounds, want 1 and 0", calls, len(tb.Rounds))
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s: the pause did not end with ctx", d)
	}
}
