// Package soak runs a chat replica under steady mixed load for a long time and checks
// that its resident memory, goroutines and Redis memory stay flat after a warm-up.
package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apistack/platform/bench/internal/netguard"
)

// Config is one soak run.
type Config struct {
	Base       string // chat replica, loopback
	PID        int    // its process id, for VmRSS
	RedisAddr  string // host:port of its redis-server, for INFO memory
	AdminToken string // a broadcaster's token: creates the users and moderates

	Sockets    int           // idle subscribers held open
	Channels   int           // spread over this many channels
	Sources    int           // loopback source addresses the sockets come from
	Rate       float64       // messages per second over all channels
	Users      int           // viewers that send (and are moderated)
	Senders    int           // sends in flight at most
	Churn      float64       // share of the sockets that reconnect with since= every ChurnEvery
	ChurnEvery time.Duration //
	ModEvery   time.Duration // one moderation action (timeout, ban or unban, delete) per period

	Duration time.Duration // whole run, warm-up included
	Warmup   time.Duration // growth is measured from its end
	// History is the replica's CHAT_HISTORY, 0 when unknown: a channel's Redis
	// stream grows until it holds that many messages, so the warm-up lasts at
	// least until History messages per channel were stored.
	History     int
	SampleEvery time.Duration
	MaxGrowth   float64 // e.g. 0.10: fail when a figure grows more than 10%
	// Growth below these never fails, whatever its share: Redis holds a few MB
	// in a short run, and its buffers alone move it by half a MB between samples.
	NoiseBytes      int64
	NoiseGoroutines int64
	MaxErrors       int64 // unexpected answers tolerated (5xx, transport errors)

	Prefix string    // channel and user name prefix; a fresh one per run by default
	Log    io.Writer // progress lines
}

func (c *Config) check() error {
	switch {
	case c.Base == "" || c.PID <= 0 || c.RedisAddr == "" || c.AdminToken == "":
		return errors.New("base, pid, redis address and admin token are required")
	case c.Sockets < 1 || c.Sockets > 20_000:
		return fmt.Errorf("sockets %d outside 1..20000", c.Sockets)
	case c.Channels < 1 || c.Channels > c.Sockets:
		return fmt.Errorf("channels %d outside 1..sockets", c.Channels)
	case c.Sources < 1 || c.Sources > 1000:
		return fmt.Errorf("sources %d outside 1..1000", c.Sources)
	case c.Rate <= 0 || c.Rate > 2000:
		return fmt.Errorf("rate %g outside (0, 2000] messages/s", c.Rate)
	case c.Senders < 1 || c.Senders > 1000:
		return fmt.Errorf("senders %d outside 1..1000", c.Senders)
	case c.Users < 2 || c.Users > 1000:
		return fmt.Errorf("users %d outside 2..1000", c.Users)
	case c.Churn < 0 || c.Churn > 0.5:
		return fmt.Errorf("churn %g outside 0..0.5", c.Churn)
	case c.ChurnEvery < 100*time.Millisecond || c.ModEvery < 10*time.Millisecond || c.SampleEvery < 100*time.Millisecond:
		return errors.New("churn, moderation and sample periods must be at least 100 ms, 10 ms and 100 ms")
	case c.Duration > 24*time.Hour || c.Warmup <= 0 || c.Duration < c.Warmup+3*c.SampleEvery:
		return fmt.Errorf("duration %s must exceed warm-up %s by at least three samples, and be at most 24h", c.Duration, c.Warmup)
	case c.Warmup < 3*c.SampleEvery:
		return fmt.Errorf("warm-up %s must hold at least three samples of %s", c.Warmup, c.SampleEvery)
	case c.History < 0:
		return fmt.Errorf("history %d: want 0 (unknown) or the replica's CHAT_HISTORY", c.History)
	case c.MaxGrowth <= 0:
		return fmt.Errorf("max growth %g must be positive", c.MaxGrowth)
	}
	if _, err := netguard.CheckURL(c.Base); err != nil {
		return err
	}
	ap, err := netip.ParseAddrPort(c.RedisAddr)
	if err != nil || !ap.Addr().IsLoopback() {
		return fmt.Errorf("redis address %q: want a loopback host:port", c.RedisAddr)
	}
	return nil
}

// Report is what a run found.
type Report struct {
	Samples  []Sample
	Baseline Sample // median of the samples in the last stretch of the warm-up
	End      Sample // median of the last samples
	Growth   struct{ RSS, Goroutines, RedisMemory float64 }

	Sent, Refused, Moderated int64 // 201s; 403 from a ban or timeout; moderation calls that succeeded
	Skipped                  int64 // messages not sent: every sender was waiting for an answer
	Errors                   map[string]int64
	Reconnects               int64
	Recovered, NotRecovered  int64 // hello after a since= reconnect
	Delivered                int64 // message events received
	Lost, Duplicated         int64 // gaps and repeats in a subscriber's message ids
	Open                     int64 // sockets open at the end
	MissedSamples            int   // samples the probe could not read (the replica or Redis too slow to answer)
	Failures                 []string
}

// Run soaks the replica for cfg.Duration; the error is about the run itself (setup
// failed, interrupted), the report's Failures about what it measured.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Prefix == "" {
		cfg.Prefix = fmt.Sprintf("soak%04x", rand.N(1<<16))
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	srcs, err := netguard.Sources(cfg.Sources)
	if err != nil {
		return nil, err
	}
	api := newAPI(cfg.Base, cfg.AdminToken)
	users, err := api.createUsers(ctx, cfg.Prefix, cfg.Users)
	if err != nil {
		return nil, err
	}
	probe, err := newProbe(cfg)
	if err != nil {
		return nil, err
	}
	defer probe.close()

	r := &runner{cfg: cfg, api: api, users: users, errs: map[string]int64{}, recent: make([][]int64, cfg.Channels)}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	transports := make([]*http.Transport, len(srcs))
	for i, s := range srcs {
		if transports[i], err = netguard.TransportFrom(s, 4); err != nil {
			return nil, err
		}
	}
	subs := make([]*subscriber, cfg.Sockets)
	for i := range subs {
		subs[i] = &subscriber{r: r, channel: r.channel(i % cfg.Channels),
			client: &http.Client{Transport: transports[i%len(transports)]}}
	}
	var wg sync.WaitGroup
	// Open the sockets at a bounded pace, then let them run.
	for i, s := range subs {
		wg.Go(func() { s.run(ctx) })
		if i%50 == 49 {
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	wg.Go(func() { r.send(ctx) })
	wg.Go(func() { r.moderate(ctx) })
	wg.Go(func() { r.churn(ctx, subs) })

	rep := &Report{}
	start := time.Now()
	tick := time.NewTicker(cfg.SampleEvery)
	defer tick.Stop()
	fmt.Fprintf(cfg.Log, "# soak %s: %d sockets on %d channels from %d addresses, %g msg/s by %d users, %.0f%% reconnecting every %s, a moderation action every %s; warm-up %s of %s\n",
		cfg.Prefix, cfg.Sockets, cfg.Channels, cfg.Sources, cfg.Rate, cfg.Users, 100*cfg.Churn, cfg.ChurnEvery, cfg.ModEvery, cfg.Warmup, cfg.Duration)
	fmt.Fprintln(cfg.Log, "# elapsed   rss_MiB  goroutines  redis_MiB  open  sent  skipped  delivered  reconnects  errors")
	var interrupted error
	missed := 0
loop:
	for {
		select {
		case <-ctx.Done():
			interrupted = ctx.Err()
			break loop
		case <-tick.C:
		}
		s, err := probe.sample(ctx, time.Since(start))
		if err != nil {
			// A replica too busy to answer /metrics within the probe's
			// timeout is a finding, not the end of the run: the sample is
			// missed and counted; only a probe that keeps failing stops it.
			rep.MissedSamples++
			missed++
			fmt.Fprintf(cfg.Log, "%9s sample missed: %v\n", time.Since(start).Round(time.Second), err)
			if missed >= maxMissed {
				interrupted = fmt.Errorf("%d samples in a row missed: %w", missed, err)
				break loop
			}
			continue
		}
		missed = 0
		s.Sent = r.sent.Load()
		rep.Samples = append(rep.Samples, s)
		fmt.Fprintf(cfg.Log, "%9s %9.1f %11d %10.1f %5d %5d %8d %10d %11d %7d\n", s.Elapsed.Round(time.Second),
			float64(s.RSS)/(1<<20), s.Goroutines, float64(s.RedisMemory)/(1<<20), r.open.Load(), r.sent.Load(),
			r.skipped.Load(), r.delivered.Load(), r.reconnects.Load(), r.errorCount())
		if s.Elapsed >= cfg.Duration {
			break
		}
	}
	openAtEnd := r.open.Load()
	cancel()
	wg.Wait()
	for _, t := range transports {
		t.CloseIdleConnections()
	}
	r.fill(rep)
	rep.Open = openAtEnd
	if interrupted != nil {
		return rep, fmt.Errorf("soak stopped after %d samples: %w", len(rep.Samples), interrupted)
	}
	judge(cfg, rep)
	return rep, nil
}

// maxMissed samples in a row stop a run: the replica or Redis is gone.
const maxMissed = 6

// runner holds the shared state of the load.
type runner struct {
	cfg   Config
	api   *api
	users []user

	open, sent, refused, moderated, delivered, skipped atomic.Int64
	reconnects, recovered, notRecovered                atomic.Int64
	lost, duplicated                                   atomic.Int64

	mu     sync.Mutex
	errs   map[string]int64
	recent [][]int64 // per channel, ids of the last messages stored (for deletes)
}

func (r *runner) channel(i int) string { return fmt.Sprintf("%s-%d", r.cfg.Prefix, i) }

func (r *runner) fail(kind string) {
	r.mu.Lock()
	r.errs[kind]++
	r.mu.Unlock()
}

func (r *runner) errorCount() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, v := range r.errs {
		n += v
	}
	return n
}

func (r *runner) fill(rep *Report) {
	rep.Sent, rep.Refused, rep.Moderated, rep.Skipped = r.sent.Load(), r.refused.Load(), r.moderated.Load(), r.skipped.Load()
	rep.Reconnects, rep.Recovered, rep.NotRecovered = r.reconnects.Load(), r.recovered.Load(), r.notRecovered.Load()
	rep.Delivered, rep.Lost, rep.Duplicated = r.delivered.Load(), r.lost.Load(), r.duplicated.Load()
	r.mu.Lock()
	rep.Errors = make(map[string]int64, len(r.errs))
	for k, v := range r.errs {
		rep.Errors[k] = v
	}
	r.mu.Unlock()
}

// churn closes a share of the sockets every period; each reconnects with since=.
func (r *runner) churn(ctx context.Context, subs []*subscriber) {
	n := int(r.cfg.Churn*float64(len(subs)) + 0.5)
	if n == 0 {
		return
	}
	t := time.NewTicker(r.cfg.ChurnEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, i := range rand.Perm(len(subs))[:n] {
			subs[i].drop()
		}
	}
}
