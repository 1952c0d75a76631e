// Command fanout measures WebSocket fan-out of one or more loopback targets (the first
// is the floor), interleaved in rounds: delivered/s, latency, lost and duplicated.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/apistack/platform/bench/internal/compare"
	"github.com/apistack/platform/bench/internal/fanout"
	"github.com/apistack/platform/bench/internal/fdlimit"
	"github.com/apistack/platform/bench/internal/hist"
	"github.com/apistack/platform/bench/internal/selfexec"
)

func main() {
	if selfexec.Is(fanout.SenderChildEnv) { // started by Run with -send-process
		os.Exit(fanout.SenderChildMain())
	}
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fanout:", err)
		os.Exit(1)
	}
}

type target struct {
	Name      string   `json:"name"`
	Subscribe []string `json:"subscribe"`
	Send      []string `json:"send"`
	Channels  int      `json:"channels,omitempty"` // 0: the -channels flag
}

// parseTarget reads BASE[,BASE...][|SENDBASE[,SENDBASE...]][#CHANNELS].
func parseTarget(t compare.Target) (target, error) {
	value, chans, hasChans := strings.Cut(t.Value, "#")
	subs, sends, _ := strings.Cut(value, "|")
	out := target{Name: t.Name, Subscribe: splitList(subs), Send: splitList(sends)}
	if hasChans {
		n, err := strconv.Atoi(chans)
		if err != nil || n < 1 {
			return out, fmt.Errorf("target %s: channels %q: want a whole number of at least 1", t.Name, chans)
		}
		out.Channels = n
	}
	if len(out.Subscribe) == 0 {
		return out, fmt.Errorf("target %s: no base URL", t.Name)
	}
	if len(out.Send) == 0 {
		out.Send = out.Subscribe
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

type targetReport struct {
	target
	Rounds []*fanout.Result   `json:"rounds"`
	Total  map[string]float64 `json:"total"`
	Ratio  map[string]float64 `json:"ratio_to_first,omitempty"`
	Median map[string]float64 `json:"ratio_median_of_rounds,omitempty"`
}

type report struct {
	Started     time.Time       `json:"started"`
	Mode        string          `json:"mode"`
	Subscribers int             `json:"subscribers"`
	Rate        float64         `json:"rate,omitempty"`
	InFlight    int             `json:"in_flight"`
	Duration    string          `json:"duration"`
	Rounds      int             `json:"rounds"`
	Alternate   bool            `json:"alternate"`
	Targets     []*targetReport `json:"targets"`
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("fanout", flag.ContinueOnError)
	var targets compare.Strings
	fs.Var(&targets, "target", "`[NAME=]BASE[,BASE...][|SENDBASE[,...]][#CHANNELS]`: subscriber base URLs (replicas, round-robin), optional send base URLs (default: the same) and channel count (default -channels); repeat for several targets, the first is the reference")
	subs := fs.Int("subs", 1000, "WebSocket subscribers per run")
	subsPerChannel := fs.Int("subs-per-channel", 0, "if set, subscribers per run = this x the target's channels (overrides -subs)")
	rate := fs.Float64("rate", 100, "messages per second (ignored with -saturate)")
	saturate := fs.Bool("saturate", false, "send as fast as the server accepts, -inflight sends at a time")
	inflight := fs.Int("inflight", 16, "concurrent send requests")
	dur := fs.Duration("d", 10*time.Second, "sending time per run")
	grace := fs.Duration("grace", 5*time.Second, "wait after the last send for deliveries")
	maxMsgs := fs.Int64("max-messages", 1_000_000, "cap on messages sent per run")
	channel := fs.String("channel", "bench", "channel name (the prefix of the names with several channels)")
	channels := fs.Int("channels", 1, "spread subscribers and messages over this many channels (subscriber i on channel i mod N, message n on channel n mod N)")
	token := fs.String("token", "", "bearer token for sends, with -protocol centrifugo the HTTP API key (default $BENCH_TOKEN; the floor ignores it)")
	protocol := fs.String("protocol", fanout.ProtocolChat, "the targets' protocol: chat (the chat service and the floor) or centrifugo (JSON over WebSocket, publishes through the HTTP API; connection tokens signed HS256 with $CENTRIFUGO_HMAC_SECRET)")
	rounds := fs.Int("rounds", 0, "rounds over all targets (0: 1 for one target, 3 for several)")
	alternate := fs.Bool("alternate", false, "reverse the target order in every other round (A,B,B,A...) to cancel a bias of position")
	pause := fs.Duration("pause", 2*time.Second, "pause between runs, for the servers to settle")
	warmupTimeout := fs.Duration("warmup-timeout", 15*time.Second, "how long to wait for every subscriber to receive a warm-up message")
	dialParallel := fs.Int("dial-parallel", 32, "concurrent WebSocket handshakes")
	sendProcess := fs.Bool("send-process", true, "send the measured messages from a child process, so that reading 1,000 sockets does not hold the sends up (false: from this process, as before)")
	jsonOut := fs.String("json", "", "also write a JSON report to this `file` (\"-\": JSON on stdout instead of text)")
	cpuProfile := fs.String("cpuprofile", "", "write the driver's CPU profile to this `file`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("create CPU profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("start CPU profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *token == "" {
		*token = os.Getenv("BENCH_TOKEN")
	}
	raw, err := compare.ParseTargets(targets)
	if err != nil {
		return fmt.Errorf("%w (use -target NAME=http://127.0.0.1:PORT)", err)
	}
	ts := make([]target, len(raw))
	for i, r := range raw {
		if ts[i], err = parseTarget(r); err != nil {
			return err
		}
	}
	plan := compare.Rounds{Count: *rounds, Alternate: *alternate, Pause: *pause}
	if err := plan.Resolve(len(ts)); err != nil {
		return err
	}
	most := *subs // the largest run's subscribers, each a socket
	if *subsPerChannel > 0 {
		most = 0
		for _, t := range ts {
			n := *channels
			if t.Channels > 0 {
				n = t.Channels
			}
			most = max(most, *subsPerChannel*n)
		}
	}
	if lim, err := fdlimit.Raise(); err != nil {
		return err
	} else if lim < uint64(most)+256 {
		return fmt.Errorf("open-file limit %d is too low for %d subscribers", lim, most)
	}
	text := stdout
	if *jsonOut == "-" {
		text = io.Discard
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	mode := fmt.Sprintf("%.0f msg/s", *rate)
	if *saturate {
		mode = fmt.Sprintf("saturation, %d in flight", *inflight)
	}
	rep := &report{Started: time.Now().UTC(), Mode: mode, Subscribers: *subs, InFlight: *inflight, Duration: dur.String(), Rounds: plan.Count, Alternate: *alternate}
	if !*saturate {
		rep.Rate = *rate
	}
	fmt.Fprintf(text, "fanout: %d target(s), %d round(s), %d subscribers, %s, %s per run\n", len(ts), plan.Count, *subs, mode, *dur)
	table := compare.Table{Metrics: []compare.Metric{
		{Name: "delivered/s"}, {Name: "sent/s"},
		{Name: "p50", Duration: true}, {Name: "p99", Duration: true}, {Name: "max", Duration: true},
		{Name: "lost", NoRatio: true}, {Name: "dup", NoRatio: true}, {Name: "reordered", NoRatio: true},
		{Name: "conn err", NoRatio: true}, {Name: "send err", NoRatio: true},
	}}
	hists := make([]*hist.Histogram, len(ts))
	for i, t := range ts {
		table.Targets = append(table.Targets, t.Name)
		rep.Targets = append(rep.Targets, &targetReport{target: t})
		hists[i] = &hist.Histogram{}
	}
	err = plan.Run(ctx, &table, func(ctx context.Context, r, i int) (map[string]float64, error) {
		t := ts[i]
		nch := *channels
		if t.Channels > 0 {
			nch = t.Channels
		}
		nsubs := *subs
		if *subsPerChannel > 0 {
			nsubs = *subsPerChannel * nch
		}
		res, err := fanout.Run(ctx, fanout.Config{
			SubscribeBases: t.Subscribe, SendBases: t.Send, Channel: *channel, Channels: nch,
			Subscribers: nsubs, Rate: *rate, Saturate: *saturate, InFlight: *inflight,
			Duration: *dur, Grace: *grace, MaxMessages: *maxMsgs, Token: *token,
			WarmupTimeout: *warmupTimeout, DialParallel: *dialParallel, SendProcess: *sendProcess,
			Protocol: *protocol, HMACSecret: os.Getenv("CENTRIFUGO_HMAC_SECRET"),
		})
		if err != nil {
			return nil, err
		}
		if res.Ready < res.Subscribers {
			fmt.Fprintf(text, "warning: %s round %d: only %d of %d subscribers received a warm-up message\n", t.Name, r+1, res.Ready, res.Subscribers)
		}
		if !*saturate && res.SentPerSec() < 0.9**rate {
			fmt.Fprintf(text, "warning: %s round %d: sent %.1f msg/s of the %.0f asked; the sender was held up\n", t.Name, r+1, res.SentPerSec(), *rate)
		}
		rep.Targets[i].Rounds = append(rep.Targets[i].Rounds, res)
		hists[i].Merge(res.Hist)
		return figures(res, res.Hist), nil
	})
	if err != nil {
		return err
	}
	for i, tr := range rep.Targets {
		tr.Total = totals(tr.Rounds, hists[i])
		table.Total = append(table.Total, tr.Total)
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
		printKinds(text, tr.Name, tr.Rounds)
	}
	if err := compare.WriteJSON(*jsonOut, stdout, rep); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	return nil
}

func figures(r *fanout.Result, h *hist.Histogram) map[string]float64 {
	return map[string]float64{
		"delivered/s": r.DeliveredPerSec(),
		"sent/s":      r.SentPerSec(),
		"p50":         float64(h.Quantile(0.50)),
		"p99":         float64(h.Quantile(0.99)),
		"max":         float64(h.Max()),
		"lost":        float64(r.Lost),
		"dup":         float64(r.Duplicated),
		"reordered":   float64(r.OutOfOrder),
		"conn err":    float64(sum(r.ConnErrors)),
		"send err":    float64(sum(r.SendErrors)),
	}
}

// totals adds the rounds up: rates over the summed windows, percentiles from the merged histogram.
func totals(rounds []*fanout.Result, h *hist.Histogram) map[string]float64 {
	var agg fanout.Result
	agg.ConnErrors, agg.SendErrors = map[string]int64{}, map[string]int64{}
	for _, r := range rounds {
		agg.Delivered += r.Delivered
		agg.Window += r.Window
		agg.Sent += r.Sent
		agg.SendElapsed += r.SendElapsed
		agg.Lost += r.Lost
		agg.Duplicated += r.Duplicated
		agg.OutOfOrder += r.OutOfOrder
		for k, v := range r.ConnErrors {
			agg.ConnErrors[k] += v
		}
		for k, v := range r.SendErrors {
			agg.SendErrors[k] += v
		}
	}
	return figures(&agg, h)
}

func printKinds(w io.Writer, name string, rounds []*fanout.Result) {
	conn, send, events := map[string]int64{}, map[string]int64{}, map[string]int64{}
	var bad int64
	for _, r := range rounds {
		for k, v := range r.ConnErrors {
			conn[k] += v
		}
		for k, v := range r.SendErrors {
			send[k] += v
		}
		for k, v := range r.ErrorEvents {
			events[k] += v
		}
		bad += r.BadFrames
	}
	for _, g := range []struct {
		label string
		m     map[string]int64
	}{{"connection errors", conn}, {"send errors", send}, {"error events", events}} {
		if len(g.m) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s %s:", name, g.label)
		for _, k := range fanout.Kinds(g.m) {
			fmt.Fprintf(w, " %q=%d", k, g.m[k])
		}
		fmt.Fprintln(w)
	}
	if bad > 0 {
		fmt.Fprintf(w, "%s: %d frames did not parse\n", name, bad)
	}
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}
