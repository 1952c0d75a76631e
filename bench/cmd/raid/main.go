// Command raid simulates a raid on a chat channel with auto_shield on: fresh
// accounts sending within a short time while many sockets read. It prints how long
// the raid watch took to switch shield mode on, what reached the readers before and
// after, and how many messages were stored, held or refused; with -cost-sends, the
// CPU a send costs with the moderation checks against a plain one, side by side.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/apistack/platform/bench/internal/fdlimit"
	"github.com/apistack/platform/bench/internal/netguard"
	"github.com/apistack/platform/bench/internal/raid"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "raid:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("raid", flag.ContinueOnError)
	bases := fs.String("base", "http://127.0.0.1:3000", "comma list of replica base URLs (readers and senders go round-robin)")
	channel := fs.String("channel", "", "the raided channel (default raid-<unix time>: the raid watch counts senders never seen there)")
	raiders := fs.Int("raiders", 500, "fresh accounts, one message each")
	within := fs.Duration("within", 30*time.Second, "the raid's span: the sends are spread evenly over it")
	readers := fs.Int("readers", 1000, "WebSocket readers of the channel")
	grace := fs.Duration("grace", 3*time.Second, "wait after the last answer for deliveries")
	dialParallel := fs.Int("dial-parallel", 32, "concurrent WebSocket handshakes")
	token := fs.String("token", "", "a moderator's token, to switch auto_shield on (default $BENCH_TOKEN)")
	costSends := fs.Int("cost-sends", 0, "sends per run of the cost comparison (0: none)")
	costRounds := fs.Int("cost-rounds", 4, "rounds of the cost comparison (both channels each, the order alternating)")
	costSenders := fs.Int("cost-senders", 50, "users sending in the cost comparison")
	costInflight := fs.Int("cost-inflight", 8, "concurrent sends in the cost comparison")
	pids := fs.String("pid", "", "comma list of the chat replicas' process ids (the cost comparison reads their CPU time)")
	redisPID := fs.Int("redis-pid", 0, "the Redis server's process id (its CPU time per send too)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *token == "" {
		*token = os.Getenv("BENCH_TOKEN")
	}
	secret := os.Getenv("CHAT_JWT_SECRET")
	if secret == "" {
		return errors.New("CHAT_JWT_SECRET is required: the raiders' tokens are signed with the service's secret")
	}
	if *channel == "" {
		*channel = fmt.Sprintf("raid-%d", time.Now().Unix())
	}
	if lim, err := fdlimit.Raise(); err != nil {
		return err
	} else if lim < uint64(*readers)+uint64(*raiders)+256 {
		return fmt.Errorf("open-file limit %d is too low for %d readers", lim, *readers)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bs := strings.Split(*bases, ",")
	for _, b := range bs {
		if _, err := netguard.CheckURL(b); err != nil {
			return err
		}
	}
	switch {
	case *raiders < 1 || *raiders > 100_000:
		return errors.New("-raiders: 1..100000")
	case *within <= 0 || *within > 10*time.Minute || *grace < 0 || *grace > time.Minute:
		return errors.New("-within: up to 10m; -grace: up to 1m")
	case *readers < 0 || *readers > 50_000:
		return errors.New("-readers: 0..50000")
	case *costSends < 0 || *costSends > 1_000_000 || *costRounds < 1 || *costRounds > 100:
		return errors.New("-cost-sends: 0..1000000; -cost-rounds: 1..100")
	}

	fmt.Fprintf(stdout, "raid: %d fresh accounts within %s on %s, %d readers, %d replica(s)\n", *raiders, *within, *channel, *readers, len(bs))
	res, err := raid.Run(ctx, raid.Config{Bases: bs, Admin: *token, Secret: []byte(secret), Channel: *channel,
		Raiders: *raiders, Within: *within, Readers: *readers, DialParallel: *dialParallel, Grace: *grace})
	if err != nil {
		return err
	}
	printRaid(stdout, res)
	// What the run must show whatever the machine: the watch tripped, every stored
	// message reached every reader, and no send failed.
	var bad []string
	if res.ShieldAfter < 0 {
		bad = append(bad, "shield mode never came on")
	}
	if res.Missing > 0 {
		bad = append(bad, fmt.Sprintf("%d deliveries of stored messages missing", res.Missing))
	}
	if res.Failed > 0 {
		bad = append(bad, fmt.Sprintf("%d sends failed", res.Failed))
	}

	if *costSends > 0 {
		var ps []int
		for _, p := range strings.Split(*pids, ",") {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			n, err := strconv.Atoi(p)
			if err != nil {
				return fmt.Errorf("-pid %q: %w", p, err)
			}
			ps = append(ps, n)
		}
		cfg := raid.CostConfig{Bases: bs, Admin: *token, Secret: []byte(secret), Prefix: *channel + "-cost", Senders: *costSenders,
			Sends: *costSends, Rounds: *costRounds, InFlight: *costInflight, PIDs: ps, RedisPID: *redisPID}
		cr, err := raid.Cost(ctx, cfg)
		if err != nil {
			return err
		}
		printCost(stdout, cfg, cr)
		for _, r := range cr.Runs {
			if r.Errors > 0 {
				bad = append(bad, fmt.Sprintf("%d sends of a cost run failed", r.Errors))
			}
		}
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

func printRaid(w io.Writer, r *raid.Result) {
	secs := func(d time.Duration) string {
		if d < 0 {
			return "never"
		}
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	fmt.Fprintf(w, "shield on:        %s after the first send (the event's time), seen by a reader after %s\n", secs(r.ShieldEventAfter), secs(r.ShieldAfter))
	fmt.Fprintf(w, "reached readers:  %.1f raid messages before shield mode, %.1f after (per reader; %d readers); stored but not delivered: %d\n",
		r.Before, r.After, r.Readers, r.Missing)
	var refused []string
	total := 0
	for k, n := range r.Refused {
		refused = append(refused, fmt.Sprintf("%s: %d", k, n))
		total += n
	}
	sort.Strings(refused)
	fmt.Fprintf(w, "sends:            %d stored, %d held, %d refused (%s), %d failed\n", r.Stored, r.Held, total, strings.Join(refused, ", "), r.Failed)
	if r.FirstError != "" {
		fmt.Fprintf(w, "first failure:    %s\n", r.FirstError)
	}
}

func printCost(w io.Writer, cfg raid.CostConfig, r *raid.CostResult) {
	fmt.Fprintf(w, "cost: %d sends per run, %d users, %d in flight, %d round(s)\n", cfg.Sends, cfg.Senders, cfg.InFlight, cfg.Rounds)
	fmt.Fprintf(w, "%-28s %8s %8s %14s %14s\n", "run", "errors", "wall", "chat CPU/send", "redis CPU/send")
	for _, run := range r.Runs {
		fmt.Fprintf(w, "%-28s %8d %7.2fs %12.0fµs %12.0fµs\n", run.Channel, run.Errors, run.Wall.Seconds(),
			float64(run.ChatCPU.Microseconds())/float64(run.Sends), float64(run.RedisCPU.Microseconds())/float64(run.Sends))
		if run.FirstFail != "" {
			fmt.Fprintf(w, "  first failure: %s\n", run.FirstFail)
		}
	}
	pc, pr := r.PerSend(cfg.Prefix + "-plain")
	mc, mr := r.PerSend(cfg.Prefix + "-modes")
	ratio := func(a, b time.Duration) string {
		if b <= 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2fx", float64(a)/float64(b))
	}
	us := func(d time.Duration) string { return fmt.Sprintf("%dµs", d.Round(time.Microsecond).Microseconds()) }
	fmt.Fprintf(w, "per send, all rounds: plain chat %s redis %s; modes chat %s redis %s; modes/plain chat %s, redis %s\n",
		us(pc), us(pr), us(mc), us(mr), ratio(mc, pc), ratio(mr, pr))
}
