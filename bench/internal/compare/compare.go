// Package compare prints benchmark figures of several targets measured in interleaved
// rounds (A,B,A,B...) next to their ratio to the first target, the floor.
package compare

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/apistack/platform/bench/internal/hist"
)

// Metric names one figure and how to print it.
type Metric struct {
	Name string
	// Duration marks values in nanoseconds, printed as durations.
	Duration bool
	// NoRatio leaves the metric out of the ratio columns (counts such as errors).
	NoRatio bool
}

func (m Metric) format(v float64) string {
	if m.Duration {
		return hist.FormatNs(int64(v))
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// Table holds per-round and overall figures; Rounds[r][t] and Total[t] map metric
// names to values for target t.
type Table struct {
	Metrics []Metric
	Targets []string
	Rounds  [][]map[string]float64
	Total   []map[string]float64
}

// Ratio is Total[t][metric] / Total[0][metric], NaN when the floor's figure is 0.
func (tb *Table) Ratio(t int, metric string) float64 {
	return ratio(tb.Total[t][metric], tb.Total[0][metric])
}

// RoundRatios gives the ratio of target t to the floor in each round.
func (tb *Table) RoundRatios(t int, metric string) []float64 {
	out := make([]float64, 0, len(tb.Rounds))
	for _, r := range tb.Rounds {
		if t < len(r) && len(r) > 0 {
			out = append(out, ratio(r[t][metric], r[0][metric]))
		}
	}
	return out
}

func ratio(v, floor float64) float64 {
	if floor == 0 {
		return math.NaN()
	}
	return v / floor
}

// Ratios returns, for each target, the ratio of every ratio metric to the floor.
func (tb *Table) Ratios() []map[string]float64 {
	return tb.ratios(tb.Ratio)
}

// MedianRatios returns, for each target, the median of the per-round ratios: less
// swayed than Ratios by one round that a neighbour's load spoiled.
func (tb *Table) MedianRatios() []map[string]float64 {
	return tb.ratios(func(t int, metric string) float64 { return median(tb.RoundRatios(t, metric)) })
}

func (tb *Table) ratios(f func(int, string) float64) []map[string]float64 {
	out := make([]map[string]float64, len(tb.Targets))
	for t := range tb.Targets {
		out[t] = map[string]float64{}
		for _, m := range tb.Metrics {
			if m.NoRatio {
				continue
			}
			if r := f(t, m.Name); !math.IsNaN(r) {
				out[t][m.Name] = r
			}
		}
	}
	return out
}

// median of the non-NaN values, NaN when there are none.
func median(vs []float64) float64 {
	ok := make([]float64, 0, len(vs))
	for _, v := range vs {
		if !math.IsNaN(v) {
			ok = append(ok, v)
		}
	}
	if len(ok) == 0 {
		return math.NaN()
	}
	slices.Sort(ok)
	if len(ok)%2 == 1 {
		return ok[len(ok)/2]
	}
	return (ok[len(ok)/2-1] + ok[len(ok)/2]) / 2
}

// Write prints every round (when there are several), then the totals with ratios to the first target and the
// range of the per-round ratios (the spread says how far to trust the ratio).
func (tb *Table) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := func() {
		cols := []string{"target"}
		for _, m := range tb.Metrics {
			cols = append(cols, m.Name)
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
	}
	rounds := tb.Rounds
	if len(rounds) == 1 {
		rounds = nil // the totals say it all
	}
	for r, round := range rounds {
		fmt.Fprintf(tw, "round %d\n", r+1)
		header()
		for t, vals := range round {
			row := []string{tb.Targets[t]}
			for _, m := range tb.Metrics {
				row = append(row, m.format(vals[m.Name]))
			}
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
		}
	}
	if len(rounds) > 0 {
		fmt.Fprintln(tw, "all rounds")
	}
	header()
	for t, vals := range tb.Total {
		row := []string{tb.Targets[t]}
		for _, m := range tb.Metrics {
			row = append(row, m.format(vals[m.Name]))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if len(tb.Targets) > 1 {
		fmt.Fprintf(tw, "ratio to %s: all rounds together, median of rounds, [per-round min..max]\n", tb.Targets[0])
		cols := []string{"target"}
		for _, m := range tb.Metrics {
			if !m.NoRatio {
				cols = append(cols, m.Name)
			}
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
		for t := 1; t < len(tb.Targets); t++ {
			row := []string{tb.Targets[t]}
			for _, m := range tb.Metrics {
				if m.NoRatio {
					continue
				}
				row = append(row, formatRatio(tb.Ratio(t, m.Name), tb.RoundRatios(t, m.Name)))
			}
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
		}
	}
	return tw.Flush()
}

func formatRatio(total float64, rounds []float64) string {
	if math.IsNaN(total) {
		return "-"
	}
	s := fmt.Sprintf("%.2fx", total)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range rounds {
		if math.IsNaN(r) {
			continue
		}
		lo, hi = math.Min(lo, r), math.Max(hi, r)
	}
	if len(rounds) > 1 && !math.IsInf(lo, 0) {
		s += fmt.Sprintf(" med %.2f [%.2f..%.2f]", median(rounds), lo, hi)
	}
	return s
}

// Target is one named endpoint set given on the command line as NAME=VALUE or VALUE.
type Target struct {
	Name  string
	Value string
}

// ParseTargets reads NAME=VALUE flags; unnamed targets are called t1, t2...
func ParseTargets(raw []string) ([]Target, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("no target given")
	}
	out := make([]Target, 0, len(raw))
	seen := map[string]bool{}
	for i, s := range raw {
		name, val := fmt.Sprintf("t%d", i+1), s
		if n, v, ok := strings.Cut(s, "="); ok && !strings.Contains(n, "/") && !strings.Contains(n, ":") {
			name, val = n, v
		}
		if name == "" || val == "" {
			return nil, fmt.Errorf("target %q: want NAME=VALUE", s)
		}
		if seen[name] {
			return nil, fmt.Errorf("target name %q used twice", name)
		}
		seen[name] = true
		out = append(out, Target{Name: name, Value: val})
	}
	return out, nil
}

// Strings is a repeatable string flag.
type Strings []string

func (s *Strings) String() string     { return strings.Join(*s, " ") }
func (s *Strings) Set(v string) error { *s = append(*s, v); return nil }

// Order gives the order in which n targets run in round r (from 0): always 0..n-1,
// or, when alternate is set, reversed in odd rounds (A,B,B,A,A,B...) so that a bias of
// running first or second (a neighbour's load, the driver's own garbage) cancels out.
func Order(r, n int, alternate bool) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
		if alternate && r%2 == 1 {
			out[i] = n - 1 - i
		}
	}
	return out
}
