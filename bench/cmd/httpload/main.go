// Command httpload sends GET requests with random IPv4/IPv6 addresses to one or more
// loopback HTTP targets, interleaved in rounds, and reports requests/s, errors and
// latency percentiles with each target's ratio to the first (the floor).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/apistack/platform/bench/internal/compare"
	"github.com/apistack/platform/bench/internal/hist"
	"github.com/apistack/platform/bench/internal/httpload"
	"github.com/apistack/platform/bench/internal/netguard"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "httpload:", err)
		os.Exit(1)
	}
}

type targetReport struct {
	Name   string             `json:"name"`
	URL    string             `json:"url"`
	Rounds []*httpload.Result `json:"rounds"`
	Total  *httpload.Result   `json:"total"`
	RPS    float64            `json:"rps"`
	Ratio  map[string]float64 `json:"ratio_to_first,omitempty"`
	Median map[string]float64 `json:"ratio_median_of_rounds,omitempty"`
	Warmup *httpload.Result   `json:"warmup,omitempty"`
}

type report struct {
	Started     time.Time       `json:"started"`
	Concurrency int             `json:"concurrency"`
	Duration    string          `json:"duration"`
	Requests    int64           `json:"requests"`
	V6Frac      float64         `json:"v6_fraction"`
	Rounds      int             `json:"rounds"`
	Alternate   bool            `json:"alternate"`
	Targets     []*targetReport `json:"targets"`
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("httpload", flag.ContinueOnError)
	var targets compare.Strings
	fs.Var(&targets, "target", "`[NAME=]URL` template with an {ip} placeholder, loopback only; repeat for several targets, the first is the floor")
	conc := fs.Int("c", 64, "concurrent workers (keep-alive connections) per target")
	dur := fs.Duration("d", 10*time.Second, "duration of each run (upper bound when -n is set)")
	n := fs.Int64("n", 0, "requests per run (0: run for -d)")
	v6 := fs.Float64("v6", 0.3, "share of IPv6 addresses, 0..1")
	rounds := fs.Int("rounds", 0, "rounds over all targets (0: 1 for one target, 3 for several)")
	alternate := fs.Bool("alternate", false, "reverse the target order in every other round (A,B,B,A...) to cancel a bias of position")
	warmup := fs.Duration("warmup", time.Second, "unmeasured run per target before the first round (0: none)")
	pause := fs.Duration("pause", 500*time.Millisecond, "pause between runs")
	timeout := fs.Duration("timeout", 5*time.Second, "per-request timeout")
	seed := fs.Uint64("seed", 1, "random seed for addresses")
	jsonOut := fs.String("json", "", "also write a JSON report to this `file` (\"-\": JSON on stdout instead of text)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	ts, err := compare.ParseTargets(targets)
	if err != nil {
		return fmt.Errorf("%w (use -target NAME=http://127.0.0.1:PORT/{ip}/json/)", err)
	}
	for _, t := range ts {
		if _, err := netguard.CheckURL(t.Value); err != nil {
			return err
		}
	}
	plan := compare.Rounds{Count: *rounds, Alternate: *alternate, Pause: *pause}
	if err := plan.Resolve(len(ts)); err != nil {
		return err
	}
	if *timeout <= 0 || *timeout > time.Minute {
		return fmt.Errorf("timeout %s outside (0, 1m]", *timeout)
	}
	text := stdout
	if *jsonOut == "-" {
		text = io.Discard
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	rep := &report{Started: time.Now().UTC(), Concurrency: *conc, Duration: dur.String(), Requests: *n, V6Frac: *v6, Rounds: plan.Count, Alternate: *alternate}
	runners := make([]*httpload.Runner, len(ts))
	for i, t := range ts {
		runners[i] = httpload.NewRunner(*conc, *timeout)
		defer runners[i].Close()
		rep.Targets = append(rep.Targets, &targetReport{Name: t.Name, URL: t.Value})
	}
	cfg := func(i int, d time.Duration, n int64, round int) httpload.Config {
		return httpload.Config{URL: ts[i].Value, Concurrency: *conc, Duration: d, Requests: n,
			V6Frac: *v6, Timeout: *timeout, Seed: *seed + uint64(round)*1_000_003}
	}
	fmt.Fprintf(text, "httpload: %d target(s), %d round(s), c=%d, d=%s, n=%d, IPv6 share %.0f%%\n",
		len(ts), plan.Count, *conc, *dur, *n, *v6*100)
	if *warmup > 0 {
		for i := range ts {
			res, err := runners[i].Run(ctx, cfg(i, *warmup, 0, -1))
			if err != nil {
				return fmt.Errorf("warm up %s: %w", ts[i].Name, err)
			}
			rep.Targets[i].Warmup = res
			compare.Pause(ctx, *pause)
		}
	}
	table := compare.Table{
		Metrics: []compare.Metric{
			{Name: "req/s"}, {Name: "p50", Duration: true}, {Name: "p90", Duration: true},
			{Name: "p99", Duration: true}, {Name: "max", Duration: true},
			{Name: "errors", NoRatio: true}, {Name: "bytes/req", NoRatio: true},
		},
	}
	for _, t := range ts {
		table.Targets = append(table.Targets, t.Name)
	}
	totals := make([]*hist.Histogram, len(ts))
	for i := range totals {
		totals[i] = &hist.Histogram{}
		rep.Targets[i].Total = &httpload.Result{Errors: map[string]uint64{}, Hist: totals[i]}
	}
	err = plan.Run(ctx, &table, func(ctx context.Context, r, i int) (map[string]float64, error) {
		res, err := runners[i].Run(ctx, cfg(i, *dur, *n, r))
		if err != nil {
			return nil, err
		}
		tr := rep.Targets[i]
		tr.Rounds = append(tr.Rounds, res)
		tot := tr.Total
		tot.OK += res.OK
		tot.Elapsed += res.Elapsed
		tot.BodyBytes += res.BodyBytes
		for k, v := range res.Errors {
			tot.Errors[k] += v
		}
		totals[i].Merge(res.Hist)
		return figures(res), nil
	})
	if err != nil {
		return err
	}
	for i, tr := range rep.Targets {
		tr.Total.Latency = totals[i].Summarize()
		tr.RPS = tr.Total.RPS()
		table.Total = append(table.Total, figures(tr.Total))
	}
	if len(ts) > 1 {
		for i, r := range table.Ratios() {
			rep.Targets[i].Ratio = r
		}
		for i, r := range table.MedianRatios() {
			rep.Targets[i].Median = r
		}
	}
	if err := table.Write(text); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	for _, tr := range rep.Targets {
		if len(tr.Total.Errors) > 0 {
			fmt.Fprintf(text, "%s errors:", tr.Name)
			for _, k := range tr.Total.ErrorKinds() {
				fmt.Fprintf(text, " %s=%d", k, tr.Total.Errors[k])
			}
			fmt.Fprintln(text)
		}
	}
	if err := compare.WriteJSON(*jsonOut, stdout, rep); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	return nil
}

func figures(r *httpload.Result) map[string]float64 {
	m := map[string]float64{
		"req/s":  r.RPS(),
		"p50":    float64(r.Hist.Quantile(0.50)),
		"p90":    float64(r.Hist.Quantile(0.90)),
		"p99":    float64(r.Hist.Quantile(0.99)),
		"max":    float64(r.Hist.Max()),
		"errors": float64(r.ErrorCount()),
	}
	if r.OK > 0 {
		m["bytes/req"] = float64(r.BodyBytes / r.OK)
	}
	return m
}
