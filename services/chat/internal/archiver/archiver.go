// Package archiver moves what the chat engine stored into the durable
// archive (chat.ArchiveSource to chat.ArchiveSink): every replica runs one,
// and the channels are split among them by shard leases held in the engine
// (chat.ArchiveLease), so replicas do not do each other's work and a dead
// replica's shards move to a live one after the lease's time to live.
//
// Exactly once, in effect, comes from the two ports' contracts: the sink
// ignores rows it holds already and the source's marks move only after
// the sink committed. So the loop may repeat a batch (after a crash, a
// lease moving, an answer lost) but never skip one. While the sink is
// down the loop keeps trying every Interval; the engine's window holds
// what is not archived (up to its own cap), and the loop catches up when
// the sink answers again, Batch events per channel per round.
package archiver

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// Defaults of Options.
const (
	DefaultShards   = 16
	DefaultInterval = 250 * time.Millisecond
	DefaultBatch    = 500
	DefaultLeaseTTL = 10 * time.Second
	// callTimeout bounds each call to either side: a database that hangs
	// (paused, a network partition without resets) fails the call, which
	// is retried, instead of stalling the loop and its metrics.
	callTimeout = 10 * time.Second
	// roundsPerPass bounds how many batches one channel gets per pass, so
	// one busy channel's backlog does not starve the others.
	roundsPerPass = 20
)

// Options configure an Archiver.
type Options struct {
	// Owner names this replica in the leases (unique per process).
	Owner string
	// Shards is how many leases the channels are spread over (every
	// replica must use the same number); 0: DefaultShards.
	Shards int
	// Interval is the pause between passes; 0: DefaultInterval.
	Interval time.Duration
	// Batch is how many events (and moderation log entries) one write
	// carries at most; 0: DefaultBatch.
	Batch int
	// LeaseTTL is how long a lease lasts unless renewed; 0: DefaultLeaseTTL.
	LeaseTTL time.Duration
	Logger   *slog.Logger
	// Now is the clock (lag); nil: time.Now.
	Now func() time.Time
}

// Archiver is the loop; Run it once per process.
type Archiver struct {
	src  chat.ArchiveSource
	sink chat.ArchiveSink
	opts Options
	m    *metrics

	// leases: shard -> when this replica last renewed it.
	leases map[int]time.Time
}

// New builds an archiver; Register its metrics before Run.
func New(src chat.ArchiveSource, sink chat.ArchiveSink, opts Options) *Archiver {
	if opts.Shards <= 0 {
		opts.Shards = DefaultShards
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Batch <= 0 {
		opts.Batch = DefaultBatch
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = DefaultLeaseTTL
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Archiver{src: src, sink: sink, opts: opts, m: newMetrics(), leases: map[int]time.Time{}}
}

// Register adds the archive's metrics to reg.
func (a *Archiver) Register(reg prometheus.Registerer) error { return a.m.register(reg) }

// Run passes over the channels until ctx ends.
func (a *Archiver) Run(ctx context.Context) {
	for {
		a.Pass(ctx)
		if chat.Pause(ctx, a.opts.Interval) != nil {
			return
		}
	}
}

// Pass archives what the channels of the shards this replica holds have
// pending, and reports whether every one of them was caught up (nothing
// left, no failure).
func (a *Archiver) Pass(ctx context.Context) bool {
	held := a.renewLeases(ctx)
	if len(held) == 0 {
		return false
	}
	var backlog int64
	var lag time.Duration
	caught := true
	cursor := ""
	for {
		chs, next, err := a.src.ArchiveChannels(ctx, cursor)
		if err != nil {
			a.fail("list channels", "", err)
			return false
		}
		for _, ch := range chs {
			if !held[chat.ArchiveShard(ch, a.opts.Shards)] {
				continue
			}
			pending, l, ok := a.channel(ctx, ch)
			backlog += pending
			lag = max(lag, l)
			caught = caught && ok
			if ctx.Err() != nil {
				return false
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	a.m.backlog.Set(float64(backlog))
	a.m.lag.Set(lag.Seconds())
	return caught
}

// renewLeases takes or renews the shards' leases: a shard this replica
// holds is renewed a third of the way through its lease, any other is
// tried every pass. It returns the shards held.
func (a *Archiver) renewLeases(ctx context.Context) map[int]bool {
	now := a.opts.Now()
	held := map[int]bool{}
	for shard := 0; shard < a.opts.Shards; shard++ {
		if t, ok := a.leases[shard]; ok && now.Sub(t) < a.opts.LeaseTTL/3 {
			held[shard] = true
			continue
		}
		ok, err := a.src.ArchiveLease(ctx, a.opts.Owner, shard, a.opts.Shards, a.opts.LeaseTTL)
		if err != nil {
			a.fail("lease", "", err)
			delete(a.leases, shard)
			continue
		}
		if !ok {
			delete(a.leases, shard)
			continue
		}
		a.leases[shard] = now
		held[shard] = true
	}
	a.m.shards.Set(float64(len(held)))
	return held
}

// channel archives one channel's pending batches (at most roundsPerPass)
// and returns what is left: messages pending, how old the oldest thing
// not archived is, and whether it caught up.
func (a *Archiver) channel(ctx context.Context, ch string) (pending int64, lag time.Duration, caught bool) {
	for round := 0; round < roundsPerPass; round++ {
		b, err := a.src.ArchivePending(ctx, ch, a.opts.Batch)
		if err != nil {
			a.fail("read pending", ch, err)
			return 0, 0, false
		}
		if b.Empty() && b.Lost == 0 && !b.LostModLog {
			return b.Pending, 0, true
		}
		if !b.Empty() {
			wctx, cancel := context.WithTimeout(ctx, callTimeout)
			err := a.sink.ArchiveWrite(wctx, b)
			cancel()
			if err != nil {
				a.fail("write", ch, err)
				return b.Pending + int64(len(b.Events)), a.age(b), false
			}
		}
		if err := a.src.ArchiveDone(ctx, b); err != nil {
			a.fail("move mark", ch, err)
			return b.Pending, a.age(b), false
		}
		a.reportLoss(b) // once the marks are past the gap: reported once
		a.count(b)
		if !b.More {
			return b.Pending, 0, true
		}
		pending, lag = b.Pending, a.age(b)
	}
	return pending, lag, false
}

func (a *Archiver) age(b chat.ArchiveBatch) time.Duration {
	t := b.Oldest()
	if t.IsZero() {
		return 0
	}
	return max(a.opts.Now().Sub(t), 0)
}

// reportLoss says loudly that the window let go of what was not archived:
// the memory cap forced a trim while the archive was behind.
func (a *Archiver) reportLoss(b chat.ArchiveBatch) {
	if b.Lost > 0 {
		a.m.lost.Add(float64(b.Lost))
		a.opts.Logger.Error("ARCHIVE GAP: messages left the Redis window before they were archived (the archive was behind for longer than the window's cap holds)",
			"channel", b.Channel, "messages_lost", b.Lost)
	}
	if b.LostModLog {
		a.m.lostModLog.Inc()
		a.opts.Logger.Error("ARCHIVE GAP: moderation log entries left the Redis window before they were archived",
			"channel", b.Channel, "resumes_after", b.ModMark.String())
	}
}

func (a *Archiver) count(b chat.ArchiveBatch) {
	var msgs, evs int
	for _, ev := range b.Events {
		if ev.Type == chat.EventMessage {
			msgs++
		} else {
			evs++
		}
	}
	a.m.rows.WithLabelValues("message").Add(float64(msgs))
	a.m.rows.WithLabelValues("event").Add(float64(evs))
	a.m.rows.WithLabelValues("modlog").Add(float64(len(b.ModLog)))
}

func (a *Archiver) fail(op, ch string, err error) {
	a.m.errors.WithLabelValues(op).Inc()
	a.opts.Logger.Warn("archive: "+op+" failed; retrying", "channel", ch, "err", err)
}
