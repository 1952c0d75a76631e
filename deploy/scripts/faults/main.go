// Command faults drives chat replicas under send and live load while a fault is injected
// from outside (a shell command: docker pause, network disconnect, kill...), then checks
// what a client was promised: every send answered 201 is in its channel's log, no text is
// stored twice, every live subscriber (which reconnects with since= whenever its socket
// drops) received its channel's log exactly once and in order, and sends recover.
// deploy/scripts/fault-test.sh (make fault-test) runs it once per fault.
//
//	faults run -name pause -replicas http://127.0.0.1:18001,http://127.0.0.1:18002 \
//	    -inject 'docker pause r' -hold 10s -heal 'docker unpause r' -report faults.jsonl
//	faults table faults.jsonl     # the report as a Markdown table
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runCmd(os.Args[2:])
	case "table":
		err = tableCmd(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: faults run [flags] | faults table REPORT.jsonl  (faults run -h for the flags)")
	os.Exit(2)
}

type options struct {
	name, describe   string
	replicas         []string
	token            string
	channels         int
	subscribers      int
	senders          int
	rate             float64
	warmup           time.Duration
	inject, heal     string
	hold, after      time.Duration
	attemptTimeout   time.Duration
	recoverTimeout   time.Duration
	report           string
	subscriberWait   time.Duration
	senderUserRole   string
	settleLogTimeout time.Duration
}

func runCmd(args []string) error {
	fs := flag.NewFlagSet("faults run", flag.ExitOnError)
	var o options
	var replicas string
	fs.StringVar(&o.name, "name", "", "the fault's name: channels, users and keys are named after it (a-z, 0-9, at most 12)")
	fs.StringVar(&o.describe, "describe", "", "the fault in words, for the report (default: the commands)")
	fs.StringVar(&replicas, "replicas", "", "comma-separated base URLs of the chat replicas")
	fs.StringVar(&o.token, "token", os.Getenv("CHAT_ADMIN_TOKEN"), "administrator token (default $CHAT_ADMIN_TOKEN)")
	fs.IntVar(&o.channels, "channels", 4, "channels (new ones, named after -name)")
	fs.IntVar(&o.subscribers, "subscribers", 20, "live subscribers, spread over the channels and replicas")
	fs.IntVar(&o.senders, "senders", 4, "senders, each its own user")
	fs.Float64Var(&o.rate, "rate", 20, "messages per second, all senders together")
	fs.DurationVar(&o.warmup, "warmup", 5*time.Second, "load before the fault")
	fs.StringVar(&o.inject, "inject", "", "shell command that starts the fault ($FAULT_CHANNELS: the channels, space separated)")
	fs.DurationVar(&o.hold, "hold", 0, "time between -inject and -heal")
	fs.StringVar(&o.heal, "heal", "", "shell command that ends the fault (it may wait, e.g. for a failover)")
	fs.DurationVar(&o.after, "after", 8*time.Second, "load after the fault ended, at least")
	fs.DurationVar(&o.attemptTimeout, "attempt-timeout", 8*time.Second, "a send try's timeout; the sender then retries with the same key")
	fs.DurationVar(&o.recoverTimeout, "recover-timeout", 60*time.Second, "time after the fault for every replica to acknowledge a send")
	fs.DurationVar(&o.subscriberWait, "subscriber-wait", 20*time.Second, "time for the subscribers to catch up with the logs at the end")
	fs.DurationVar(&o.settleLogTimeout, "settle-timeout", 30*time.Second, "time for the logs to stop changing after the last send")
	fs.StringVar(&o.senderUserRole, "sender-role", "subscriber", "role of the senders' users")
	fs.StringVar(&o.report, "report", "", "append the verdict as one JSON line to this file")
	_ = fs.Parse(args)
	if !validName(o.name) {
		return fmt.Errorf("-name %q: want 1..12 of a-z 0-9", o.name)
	}
	if o.channels < 1 || o.subscribers < 0 || o.senders < 1 || o.rate <= 0 {
		return errors.New("-channels and -senders must be at least 1, -rate above 0, -subscribers not negative")
	}
	for _, r := range strings.Split(replicas, ",") {
		if r = strings.TrimSpace(r); r != "" {
			o.replicas = append(o.replicas, r)
		}
	}
	a, err := newAPI(o.replicas, o.token)
	if err != nil {
		return fmt.Errorf("-replicas: %w", err)
	}
	if o.token == "" {
		return errors.New("no administrator token: -token or $CHAT_ADMIN_TOKEN")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	v, err := run(ctx, a, o)
	if err != nil {
		return err
	}
	printVerdict(v)
	if o.report != "" {
		if err := appendReport(o.report, v); err != nil {
			return err
		}
	}
	if len(v.Problems) > 0 {
		return fmt.Errorf("%s: %d checks failed", o.name, len(v.Problems))
	}
	return nil
}

func validName(s string) bool {
	if len(s) < 1 || len(s) > 12 {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// clock prints progress lines with the time since the run started.
type clock struct{ start time.Time }

func (c clock) logf(format string, args ...any) {
	fmt.Printf("[%6.1fs] %s\n", time.Since(c.start).Seconds(), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, a *api, o options) (*verdict, error) {
	clk := clock{start: time.Now()}
	run := o.name + "-" + randomHex(2)
	v := &verdict{Fault: o.name, Command: o.describe}
	if v.Command == "" {
		v.Command = describe(o)
	}
	clk.logf("%s: %d replicas, %d senders at %.0f msg/s, %d subscribers on %d channels (run %s)",
		o.name, len(a.replicas), o.senders, o.rate, o.subscribers, o.channels, run)

	if err := waitReady(ctx, a, 60*time.Second); err != nil {
		return nil, err
	}
	tokens := make([]string, o.senders)
	for i := range tokens {
		var err error
		name := strings.ReplaceAll(fmt.Sprintf("%s_s%d", run, i+1), "-", "_")
		if tokens[i], err = a.createUser(ctx, name, o.senderUserRole); err != nil {
			return nil, fmt.Errorf("creating the senders' users: %w", err)
		}
	}
	channels := make([]string, o.channels)
	for i := range channels {
		channels[i] = fmt.Sprintf("%s-c%d", run, i+1)
	}

	subCtx, stopSubs := context.WithCancel(ctx)
	defer stopSubs()
	subs := make([]*subscriber, o.subscribers)
	var subsDone sync.WaitGroup
	for i := range subs {
		subs[i] = newSubscriber(a, channels[i%len(channels)], i%len(a.replicas))
		subsDone.Add(1)
		go func() { defer subsDone.Done(); subs[i].run(subCtx) }()
	}
	for i, s := range subs {
		select {
		case <-s.ready:
		case <-time.After(30 * time.Second):
			r := s.report()
			return nil, fmt.Errorf("subscriber %d got no hello within 30s (%d dial errors, last: %s)", i+1, r.dialErrors, r.lastDialErr)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	clk.logf("%d subscribers connected", len(subs))

	snd := &senders{
		api: a, tokens: tokens, channels: channels, run: run,
		interval: time.Duration(float64(o.senders) / o.rate * float64(time.Second)),
		timeout:  o.attemptTimeout, drain: o.recoverTimeout,
	}
	snd.start(ctx)
	sleepCtx(ctx, o.warmup)
	clk.logf("warm-up: %s", progress(snd.snapshot()))

	faultStart := time.Now()
	if o.inject != "" {
		clk.logf("inject: %s", o.inject)
		if err := shell(ctx, o.inject, channels); err != nil {
			snd.halt()
			return nil, fmt.Errorf("-inject: %w", err)
		}
	}
	if o.hold > 0 {
		sleepCtx(ctx, o.hold)
		clk.logf("held %s: %s", o.hold, progress(snd.snapshot()))
	}
	if o.heal != "" {
		clk.logf("heal: %s", o.heal)
		if err := shell(ctx, o.heal, channels); err != nil {
			snd.halt()
			return nil, fmt.Errorf("-heal: %w", err)
		}
	}
	faultEnd := time.Now()
	clk.logf("fault over after %.1fs", faultEnd.Sub(faultStart).Seconds())

	// Load goes on until every replica acknowledged a send tried after the fault (and
	// for -after at least), so the recovery of each one is measured.
	deadline := faultEnd.Add(o.recoverTimeout)
	for ctx.Err() == nil {
		n := snd.acksSince(faultEnd)
		if len(n) == len(a.replicas) && time.Since(faultEnd) >= o.after || time.Now().After(deadline) {
			break
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	clk.logf("stopping the senders: %s", progress(snd.snapshot()))
	snd.halt()
	msgs := snd.snapshot()
	clk.logf("senders settled: %s", progress(msgs))

	logs, err := settledLogs(ctx, a, channels, o.settleLogTimeout, clk)
	if err != nil {
		return nil, err
	}
	caughtUp(ctx, subs, logs, o.subscriberWait)
	stopSubs()
	subsDone.Wait()
	reports := make([]subscriberReport, len(subs))
	for i, s := range subs {
		reports[i] = s.report()
	}
	clk.logf("subscribers closed")

	judgeSends(v, msgs, logs)
	judgeSubscribers(v, reports, logs)
	judgeRecovery(v, msgs, len(a.replicas), faultStart, faultEnd)
	return v, ctx.Err()
}

func describe(o options) string {
	parts := []string{}
	if o.inject != "" {
		parts = append(parts, o.inject)
	}
	if o.hold > 0 {
		parts = append(parts, "wait "+o.hold.String())
	}
	if o.heal != "" {
		parts = append(parts, o.heal)
	}
	return strings.Join(parts, "; ")
}

func waitReady(ctx context.Context, a *api, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for i := range a.replicas {
		for !a.ready(ctx, i) {
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("replica %s not ready (GET %s) within %s", a.replicas[i], readyPath, wait)
			}
			sleepCtx(ctx, 250*time.Millisecond)
		}
	}
	return nil
}

// settledLogs reads every channel's log until two reads a second apart agree: a try the
// driver gave up on may still be stored after the last answer.
func settledLogs(ctx context.Context, a *api, channels []string, wait time.Duration, clk clock) (map[string][]message, error) {
	deadline := time.Now().Add(wait)
	var prev map[string][]message
	for {
		cur, err := readLogs(ctx, a, channels)
		switch {
		case err != nil && time.Now().After(deadline):
			return nil, fmt.Errorf("reading the final logs: %w", err)
		case err == nil && prev != nil && sameLengths(prev, cur):
			return cur, nil
		case err == nil && prev != nil:
			clk.logf("the logs changed after the last send settled: %s", lengthsDiff(prev, cur))
		}
		if err == nil {
			prev = cur
		}
		if time.Now().After(deadline) && prev != nil {
			return prev, nil
		}
		sleepCtx(ctx, time.Second)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

// readLogs reads each channel through the first replica that answers.
func readLogs(ctx context.Context, a *api, channels []string) (map[string][]message, error) {
	out := map[string][]message{}
	for _, ch := range channels {
		var errs []error
		for r := range a.replicas {
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			log, err := a.history(rctx, r, ch)
			cancel()
			if err == nil {
				out[ch] = log
				break
			}
			errs = append(errs, err)
		}
		if _, ok := out[ch]; !ok {
			return nil, errors.Join(errs...)
		}
	}
	return out, nil
}

func sameLengths(a, b map[string][]message) bool {
	for ch := range b {
		if len(a[ch]) != len(b[ch]) {
			return false
		}
	}
	return len(a) == len(b)
}

func lengthsDiff(a, b map[string][]message) string {
	var parts []string
	for ch := range b {
		if len(a[ch]) != len(b[ch]) {
			parts = append(parts, fmt.Sprintf("%s %d -> %d", ch, len(a[ch]), len(b[ch])))
		}
	}
	return strings.Join(parts, ", ")
}

// caughtUp waits until every subscriber has received its channel's last message.
func caughtUp(ctx context.Context, subs []*subscriber, logs map[string][]message, wait time.Duration) {
	deadline := time.Now().Add(wait)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		behind := 0
		for _, s := range subs {
			log := logs[s.channel]
			if len(log) > 0 && s.lastID() < log[len(log)-1].ID {
				behind++
			}
		}
		if behind == 0 {
			return
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
}

func progress(msgs []sent) string {
	acked, tries, pending := 0, 0, 0
	for _, m := range msgs {
		tries += len(m.attempts)
		if _, ok := m.ack(); ok {
			acked++
		} else if len(m.attempts) == 0 || m.attempts[len(m.attempts)-1].retryable() {
			pending++
		}
	}
	return fmt.Sprintf("%d messages, %d acknowledged, %d tries, %d in flight or given up", len(msgs), acked, tries, pending)
}

// shell runs a fault's command with $FAULT_CHANNELS set to the test's channels (space
// separated), so that it can aim at what they use (the Cluster primary of one).
func shell(ctx context.Context, command string, channels []string) error {
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Env = append(os.Environ(), "FAULT_CHANNELS="+strings.Join(channels, " "))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%q: %w", command, err)
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func printVerdict(v *verdict) {
	fmt.Printf("%s: %d messages (%d acknowledged, %d retried, %d tries: %s)\n", v.Fault, v.Messages, v.Acked, v.Retried, v.Attempts, v.Outcomes)
	fmt.Printf("%s: lost %d, stored twice %d, stored though unacknowledged %d, unsettled %d\n", v.Fault, v.Lost, v.Duplicates, v.StoredUnacked, v.Unsettled)
	fmt.Printf("%s: %d subscribers, %d reconnected (%d times), missing %d (%d messages), repeated %d (%d), recovered:false %d\n",
		v.Fault, v.Subscribers, v.Reconnected, v.Reconnects, v.SubscribersMissing, v.Missed, v.SubscribersRepeat, v.Repeated, v.NotRecovered)
	fmt.Printf("%s: fault %.1fs, first 201 %.1fs after it, every replica %.1fs, longest without a 201 %.1fs\n",
		v.Fault, v.FaultSeconds, v.RecoverySeconds, v.AllSeconds, v.LongestNoAck)
	for _, p := range v.Problems {
		fmt.Printf("FAIL %s: %s\n", v.Fault, p)
	}
	if len(v.Problems) == 0 {
		fmt.Printf("ok   %s\n", v.Fault)
	}
}

func appendReport(path string, v *verdict) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
