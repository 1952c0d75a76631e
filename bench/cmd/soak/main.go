// Command soak holds a chat replica under steady mixed load (idle sockets with
// reconnect churn, messages on many channels, moderation through the API) and fails
// when its resident memory, goroutines or Redis memory grow after the warm-up.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"

	"github.com/apistack/platform/bench/internal/fdlimit"
	"github.com/apistack/platform/bench/internal/procstat"
	"github.com/apistack/platform/bench/internal/soak"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	var cfg soak.Config
	fs.StringVar(&cfg.Base, "base", "", "chat replica base URL, loopback only (e.g. http://127.0.0.1:18181)")
	fs.IntVar(&cfg.PID, "pid", 0, "the replica's process id (its VmRSS is read from /proc)")
	fs.StringVar(&cfg.RedisAddr, "redis", "", "its redis-server, host:port on loopback (INFO memory)")
	fs.IntVar(&cfg.Sockets, "sockets", 2000, "subscribers held open")
	fs.IntVar(&cfg.Channels, "channels", 100, "channels the subscribers and messages spread over")
	fs.IntVar(&cfg.Sources, "sources", 40, "loopback source addresses (127.0.1.1, 127.0.2.1, ...) the sockets come from")
	fs.Float64Var(&cfg.Rate, "rate", 100, "messages per second over all channels")
	fs.IntVar(&cfg.Users, "users", 40, "viewers that send and are moderated")
	fs.IntVar(&cfg.Senders, "senders", 64, "sends in flight at most (a message due while all wait is skipped and counted)")
	fs.Float64Var(&cfg.Churn, "churn", 0.02, "share of the sockets that close and reconnect with since= every -churn-every")
	fs.DurationVar(&cfg.ChurnEvery, "churn-every", 5*time.Second, "period of the churn")
	fs.DurationVar(&cfg.ModEvery, "mod-every", time.Second, "one moderation action (timeout, ban or unban, message delete) per period")
	fs.DurationVar(&cfg.Duration, "d", time.Hour, "duration of the run, warm-up included")
	fs.DurationVar(&cfg.Warmup, "warmup", 0, "growth is measured from the end of the warm-up (default: a third of -d)")
	fs.IntVar(&cfg.History, "history", 0, "the replica's CHAT_HISTORY: the warm-up lasts until that many messages per channel were stored (0: unknown, -warmup alone)")
	fs.DurationVar(&cfg.SampleEvery, "sample", 5*time.Second, "sampling period")
	fs.Float64Var(&cfg.MaxGrowth, "max-growth", 0.10, "fail when a figure grows more than this share after the warm-up")
	fs.Int64Var(&cfg.NoiseBytes, "noise-bytes", 1<<20, "memory growth under this many bytes never fails (Redis holds a few MB in a short run)")
	fs.Int64Var(&cfg.NoiseGoroutines, "noise-goroutines", 50, "goroutine growth under this never fails (the churn moves the count)")
	fs.Int64Var(&cfg.MaxErrors, "max-errors", 0, "unexpected answers (5xx, failed exchanges) tolerated")
	jsonOut := fs.String("json", "", "also write the report as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.Warmup == 0 {
		cfg.Warmup = cfg.Duration / 3
	}
	cfg.AdminToken = os.Getenv("BENCH_TOKEN")
	if cfg.AdminToken == "" {
		return fmt.Errorf("BENCH_TOKEN must hold a broadcaster's token (the replica's CHAT_ADMIN_TOKEN)")
	}
	lim, err := fdlimit.Raise()
	if err != nil {
		return err
	}
	if lim < uint64(cfg.Sockets)+256 {
		return fmt.Errorf("open-file limit %d is too low for %d sockets", lim, cfg.Sockets)
	}
	cfg.Log = stdout
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	rep, err := soak.Run(ctx, cfg)
	if rep != nil {
		printReport(stdout, cfg, rep, time.Since(start))
		if *jsonOut != "" {
			b, jerr := json.MarshalIndent(rep, "", "  ")
			if jerr == nil {
				jerr = os.WriteFile(*jsonOut, b, 0o644)
			}
			if jerr != nil && err == nil {
				err = jerr
			}
		}
	}
	if err != nil {
		return err
	}
	if len(rep.Failures) > 0 {
		return fmt.Errorf("%d check(s) failed", len(rep.Failures))
	}
	return nil
}

func printReport(w io.Writer, cfg soak.Config, rep *soak.Report, took time.Duration) {
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	fmt.Fprintf(w, "# after %s: sent %d, refused under a ban or timeout %d, skipped (every sender busy) %d, moderation actions %d, delivered %d\n",
		took.Round(time.Second), rep.Sent, rep.Refused, rep.Skipped, rep.Moderated, rep.Delivered)
	fmt.Fprintf(w, "# reconnects %d (recovered %d, not recovered %d); lost %d, duplicated %d; open at the end %d of %d\n",
		rep.Reconnects, rep.Recovered, rep.NotRecovered, rep.Lost, rep.Duplicated, rep.Open, cfg.Sockets)
	if rep.MissedSamples > 0 {
		fmt.Fprintf(w, "# samples missed (probe timed out): %d\n", rep.MissedSamples)
	}
	if len(rep.Errors) > 0 {
		keys := make([]string, 0, len(rep.Errors))
		for k := range rep.Errors {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "# errors: %s: %d\n", k, rep.Errors[k])
		}
	}
	if rep.Baseline.Elapsed > 0 {
		fmt.Fprintf(w, "# after the warm-up (up to %s) -> end (up to %s), medians of 3 samples:\n", rep.Baseline.Elapsed.Round(time.Second), rep.End.Elapsed.Round(time.Second))
		fmt.Fprintf(w, "#   resident memory  %8.1f -> %8.1f MiB  %+6.1f%%\n", mib(rep.Baseline.RSS), mib(rep.End.RSS), 100*rep.Growth.RSS)
		fmt.Fprintf(w, "#   goroutines       %8d -> %8d      %+6.1f%%\n", rep.Baseline.Goroutines, rep.End.Goroutines, 100*rep.Growth.Goroutines)
		fmt.Fprintf(w, "#   Redis kept memory %7.1f -> %8.1f MiB  %+6.1f%%\n", mib(rep.Baseline.RedisMemory), mib(rep.End.RedisMemory), 100*rep.Growth.RedisMemory)
	}
	for _, f := range rep.Failures {
		fmt.Fprintln(w, "FAIL:", f)
	}
	if cpu, err := procstat.CPUSeconds(os.Getpid()); err == nil {
		rss, _ := procstat.RSS(os.Getpid())
		fmt.Fprintf(w, "# soak itself (the generator): %.1f s CPU, %.0f MiB resident\n", cpu, float64(rss)/(1<<20))
	}
	if len(rep.Failures) == 0 && rep.Baseline.Elapsed > 0 {
		fmt.Fprintf(w, "PASS: every figure within %.0f%% of the end of the warm-up\n", 100*cfg.MaxGrowth)
	}
}
