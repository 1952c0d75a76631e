package realtime

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// room is one channel on one replica: the connections subscribed here and
// the delivery of the channel's events to them. A room has no goroutine of
// its own while nothing happens: the feed hands each notice to deliver,
// which starts a worker only when there is work and none is running.
type room struct {
	hub    *Hub
	name   string
	ctx    context.Context
	cancel context.CancelFunc
	ready  chan struct{} // closed once pos holds the starting head

	watched atomic.Bool  // the feed watches this channel for us
	joining atomic.Int32 // connections waiting for ready (changed under hub.mu)

	mu      sync.Mutex
	subs    map[*conn]struct{}
	pos     chat.Cursor // last event fanned out: a joiner gets everything after it
	started bool        // pos is set: the worker may run
	stopped bool
	idle    time.Time     // when the last subscriber left
	inbox   []chat.Notice // notices waiting for the worker
	spare   []chat.Notice // the worker's last batch, reused as the next inbox
	working bool          // a worker owns delivery

	// shieldEnd is the end (unix nanos, service clock; 0: none) of the
	// automatic shield the room knows of, from the shield_mode events it
	// fanned out or the check at its start; ending claims the end's one
	// check in flight (checkShield).
	shieldEnd atomic.Int64
	ending    atomic.Bool

	// presence
	reporting     atomic.Bool
	dirty         atomic.Bool
	debounce      atomic.Bool
	lastReport    atomic.Int64 // unix nanos
	total         atomic.Int64 // last count over all replicas
	reportedLocal atomic.Int64 // local count in that report
}

// maxInbox bounds the notices a room holds while its worker is busy; past
// it they are replaced by one "read the log" notice, which loses nothing.
const maxInbox = 4096

func newRoom(h *Hub, name string) *room {
	ctx, cancel := context.WithCancel(h.ctx)
	// idle starts now: a room nobody manages to join (the store is down)
	// stops after RoomLinger like any other.
	return &room{hub: h, name: name, ctx: ctx, cancel: cancel, ready: make(chan struct{}), subs: map[*conn]struct{}{}, idle: time.Now()}
}

// start watches the channel, then learns its head. In that order every
// event after the head has a notice or is found by the read that the
// watch's own notice asks for.
func (r *room) start() {
	h := r.hub
	defer h.wg.Done()
	backoff := 100 * time.Millisecond
	for {
		err := h.feed.Watch(r.ctx, r.name)
		if err == nil {
			r.watched.Store(true)
			break
		}
		if r.ctx.Err() != nil {
			return
		}
		h.metrics.readErrors.Inc()
		h.logger.Warn("live delivery: cannot watch the channel; retrying", "channel", r.name, "err", err)
		if chat.Pause(r.ctx, backoff) != nil {
			return
		}
		backoff = min(2*backoff, 5*time.Second)
	}
	if r.ctx.Err() != nil {
		r.unwatch() // stopped meanwhile: stop may have looked before watched was set
		return
	}
	head, ok := r.head()
	if !ok {
		return
	}
	r.mu.Lock()
	r.pos = head
	r.started = true
	run := len(r.inbox) > 0 && !r.working
	if run {
		r.working = true
	}
	r.mu.Unlock()
	close(r.ready)
	if run {
		go r.work()
	}
	// An automatic shield switched on before this room existed has its
	// end learnt (or announced, when overdue) now.
	r.ending.Store(true)
	r.checkShield(0)
}

// checkShield asks the service to end the channel's automatic shield if
// its quiet period is over (announced once, whichever replica asks
// first) and keeps the end of one still on, unless a shield_mode event
// changed what the room knows meanwhile (was is what it knew). The
// caller holds ending; a failure is tried again at the next sweep.
func (r *room) checkShield(was int64) {
	defer r.ending.Store(false)
	ctx, cancel := context.WithTimeout(r.ctx, 2*time.Second)
	defer cancel()
	until, err := r.hub.svc.EndAutoShield(ctx, r.name)
	if err != nil {
		if r.ctx.Err() == nil {
			r.hub.logger.Debug("live delivery: end of an automatic shield", "channel", r.name, "err", err)
		}
		return
	}
	var next int64
	if !until.IsZero() {
		next = until.UnixNano()
	}
	r.shieldEnd.CompareAndSwap(was, next)
}

// noteShield keeps the end of the automatic shield that evs switch on, or
// forgets it when they switch shield mode off.
func (r *room) noteShield(evs []chat.Event) {
	for _, ev := range evs {
		if ev.Type != chat.EventShieldMode || ev.Shield == nil {
			continue
		}
		switch {
		case !ev.Shield.On:
			r.shieldEnd.Store(0)
		case ev.Shield.Auto && ev.Shield.Until != nil:
			r.shieldEnd.Store(ev.Shield.Until.UnixNano())
		}
	}
}

// unwatch ends the room's watch once.
func (r *room) unwatch() {
	if r.watched.CompareAndSwap(true, false) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = r.hub.feed.Unwatch(ctx, r.name)
	}
}

// deliver queues a notice and starts the worker if none runs. It never
// blocks on the store or a socket: it runs on a feed goroutine.
func (r *room) deliver(n chat.Notice) {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	if len(r.inbox) >= maxInbox {
		r.inbox = append(r.inbox[:0], chat.Notice{Channel: r.name})
	} else {
		r.inbox = append(r.inbox, n)
	}
	run := r.started && !r.working
	if run {
		r.working = true
	}
	r.mu.Unlock()
	if run {
		go r.work()
	}
}

// work delivers what the inbox holds, then what came meanwhile, until the
// inbox is empty. Nothing waits to batch: the first notice goes out as
// soon as it is read, and notices that arrive while the worker fans out
// (or while sockets write) go out together in the next round, encoded once.
func (r *room) work() {
	for {
		r.mu.Lock()
		batch := r.inbox
		r.inbox = r.spare[:0]
		r.spare = nil
		if len(batch) == 0 || r.stopped {
			r.working = false
			r.spare = batch[:0]
			r.mu.Unlock()
			return
		}
		pos := r.pos
		r.mu.Unlock()

		evs, gap := chain(batch, pos)
		clear(batch) // drop the events' references before reuse
		if len(evs) > 0 {
			if err := r.fanout(evs); err != nil {
				r.resync(err)
			}
		}
		if gap {
			r.catchUp()
		}
		r.mu.Lock()
		if r.spare == nil {
			r.spare = batch[:0]
		}
		r.mu.Unlock()
	}
}

// chain returns the events of batch that follow pos without a hole, in
// order, and whether the log must be read: for a notice without an event,
// and for one whose predecessor is not the last event delivered. That
// includes an event at or before pos: usually one a read already
// delivered, but also the first event of a store that was reset, which
// only the log can tell apart (the read then reports the history gone).
func chain(batch []chat.Notice, pos chat.Cursor) (evs []chat.Event, gap bool) {
	cur := pos
	for _, n := range batch {
		if n.Event != nil && n.Prev == cur && cur.Less(n.Event.Cursor) {
			evs = append(evs, *n.Event)
			cur = n.Event.Cursor
			continue
		}
		gap = true
	}
	return evs, gap
}

// catchUp reads the log from pos until it has everything. While the store
// is unavailable it retries from the same cursor, so nothing stored is
// skipped; a position that left the history window makes every subscriber
// here resync (4010), as their view now has a gap, and starts again at the
// head.
func (r *room) catchUp() {
	h := r.hub
	backoff := 100 * time.Millisecond
	for r.ctx.Err() == nil {
		r.mu.Lock()
		pos := r.pos
		r.mu.Unlock()
		h.metrics.logReads.Inc()
		evs, err := h.log.ReadEvents(r.ctx, r.name, pos, h.opts.ReadLimit)
		switch {
		case err == nil:
			if len(evs) > 0 {
				if err := r.fanout(evs); err != nil {
					r.resync(err)
					return
				}
			}
			if len(evs) < h.opts.ReadLimit {
				return
			}
		case r.ctx.Err() != nil:
			return
		case chat.KindOf(err) == chat.KindUnavailable:
			h.metrics.readErrors.Inc()
			h.logger.Warn("live delivery: channel log unavailable; retrying from the last cursor", "channel", r.name, "err", err)
			if chat.Pause(r.ctx, backoff) != nil {
				return
			}
			backoff = min(2*backoff, 5*time.Second)
		default:
			r.resync(err)
			return
		}
	}
}

// resync closes every subscriber here (they reconnect with since and
// recover from the log) and starts again at the head.
func (r *room) resync(err error) {
	h := r.hub
	code, reason := CloseResync, "this replica lost its place in the channel; reconnect with since"
	if chat.KindOf(err) != chat.KindHistoryGone {
		h.logger.Error("live delivery: channel delivery failed; resyncing subscribers", "channel", r.name, "err", err)
		code = websocket.StatusInternalError
	} else {
		h.logger.Warn("live delivery: position left the history window; resyncing subscribers", "channel", r.name)
	}
	head, ok := r.head()
	if !ok {
		return
	}
	r.mu.Lock()
	subs := make([]*conn, 0, len(r.subs))
	for c := range r.subs {
		subs = append(subs, c)
	}
	clear(r.subs)
	r.pos = head
	if !r.stopped {
		r.idle = time.Now()
	}
	r.mu.Unlock()
	for _, c := range subs {
		go c.closeWith(code, reason)
	}
	if len(subs) > 0 {
		r.presenceChanged()
	}
}

// head reads the channel's last cursor, retrying with backoff while the
// store is down. It reports false once the room is stopping.
func (r *room) head() (chat.Cursor, bool) {
	backoff := 100 * time.Millisecond
	for {
		head, err := r.hub.log.Head(r.ctx, r.name)
		if err == nil {
			return head, true
		}
		if r.ctx.Err() != nil {
			return chat.Cursor{}, false
		}
		r.hub.metrics.readErrors.Inc()
		r.hub.logger.Warn("live delivery: cannot read the channel head; retrying", "channel", r.name, "err", err)
		if chat.Pause(r.ctx, backoff) != nil {
			return chat.Cursor{}, false
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// fanout encodes a batch of events once and queues the same frames on
// every subscriber. Only the worker calls it; it holds the room's lock
// while queueing so that a joiner's starting cursor and the events queued
// for it meet exactly.
func (r *room) fanout(evs []chat.Event) error {
	frames, err := encodeEvents(evs, r.hub.opts.Batch)
	if err != nil {
		return err // a domain event that cannot be encoded: resync
	}
	r.hub.metrics.events.Add(float64(len(evs)))
	r.noteShield(evs)
	banned := channelBans(evs)
	var slow, ban []*conn
	r.mu.Lock()
	r.pos = evs[len(evs)-1].Cursor
	for c := range r.subs {
		if !c.push(frames, len(evs)) {
			delete(r.subs, c)
			slow = append(slow, c)
			continue
		}
		if u := c.user.Load(); u != nil && banned[u.ID] {
			ban = append(ban, c)
		}
	}
	if len(slow) > 0 && len(r.subs) == 0 {
		r.idle = time.Now()
	}
	r.mu.Unlock()
	for _, c := range slow {
		r.hub.metrics.slowCloses.Inc()
		go c.closeWith(CloseSlowConsumer, "too slow to keep up; reconnect with since")
	}
	if len(slow) > 0 {
		r.presenceChanged()
	}
	// A ban held in this channel closes the user's sockets on it, after
	// the event itself is queued to them: every replica with sockets here
	// reads the event from the channel's log, so none is missed.
	for _, c := range ban {
		go c.closeWith(CloseChannelBanned, "banned from this channel")
	}
	return nil
}

// channelBans returns the users evs ban from their channel (nil if none).
func channelBans(evs []chat.Event) map[string]bool {
	var out map[string]bool
	for _, ev := range evs {
		if ev.Type == chat.EventUserBanned && ev.Moderation != nil && ev.Moderation.Scope == chat.ScopeChannel {
			if out == nil {
				out = map[string]bool{}
			}
			out[ev.Moderation.User.ID] = true
		}
	}
	return out
}

// leave unsubscribes c.
func (r *room) leave(c *conn) {
	r.mu.Lock()
	_, ok := r.subs[c]
	delete(r.subs, c)
	if ok && len(r.subs) == 0 {
		r.idle = time.Now()
	}
	r.mu.Unlock()
	if ok {
		r.presenceChanged()
	}
}

// broadcast queues a control frame on every subscriber (presence).
func (r *room) broadcast(f *frame) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.subs {
		c.pushControl(f)
	}
}

func (r *room) local() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.subs)
}

// maintain runs every second: it stops the room once idle, and otherwise
// ends a due automatic shield and reports whether its presence refresh
// is due (the hub sends the due ones together).
func (r *room) maintain(now time.Time) bool {
	r.mu.Lock()
	idle := len(r.subs) == 0 && !r.idle.IsZero() && now.Sub(r.idle) >= r.hub.opts.RoomLinger
	r.mu.Unlock()
	if idle {
		r.hub.stopRoom(r)
		return false
	}
	// An automatic shield that is due ends here: every replica with
	// readers of the channel asks, and the store announces the end once.
	if end := r.shieldEnd.Load(); end != 0 && r.hub.svc.Now().UnixNano() >= end && r.ending.CompareAndSwap(false, true) {
		go r.checkShield(end)
	}
	return r.dirty.Load() || now.Sub(time.Unix(0, r.lastReport.Load())) >= r.hub.opts.PresenceInterval
}

// presenceChanged reports the new local count soon: several joins in a
// burst make one report.
func (r *room) presenceChanged() {
	r.dirty.Store(true)
	if !r.debounce.CompareAndSwap(false, true) {
		return
	}
	time.AfterFunc(r.hub.opts.PresenceDebounce, func() {
		r.debounce.Store(false)
		r.reportPresence()
	})
}

// reportPresence sends this replica's count and broadcasts the total when
// it changed. One report at a time per room.
func (r *room) reportPresence() {
	n, ok := r.beginReport()
	if !ok {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(r.ctx, 2*time.Second)
		total, err := r.hub.opts.Presence.Report(ctx, r.name, r.hub.opts.ReplicaID, n)
		cancel()
		r.endReport(n, total, err)
	}()
}

// beginReport claims the room's one report in flight and returns the
// count to report; false when a report is in flight or the room stopped.
func (r *room) beginReport() (int, bool) {
	if r.ctx.Err() != nil || !r.reporting.CompareAndSwap(false, true) {
		return 0, false
	}
	r.dirty.Store(false)
	return r.local(), true
}

// endReport records the outcome of the report beginReport claimed.
func (r *room) endReport(n, total int, err error) {
	defer r.reporting.Store(false)
	if err != nil {
		r.dirty.Store(true) // try again on the next sweep
		if r.ctx.Err() == nil {
			r.hub.logger.Debug("live delivery: presence report failed", "channel", r.name, "err", err)
		}
		return
	}
	// The next refresh falls due PresenceInterval/2..PresenceInterval
	// from now, at random: rooms that joined together (a thousand at a
	// replica's start) would otherwise all be due in the same sweep.
	r.lastReport.Store(time.Now().Add(-rand.N(r.hub.opts.PresenceInterval / 2)).UnixNano())
	r.reportedLocal.Store(int64(n))
	if int64(total) != r.total.Swap(int64(total)) {
		r.broadcast(controlFrame(presenceFrame{Type: typePresence, Channel: r.name, Count: total}))
	}
}

// estimate is the presence count to greet a new subscriber with: the last
// total, corrected by local changes not reported yet.
func (r *room) estimate() int {
	return max(1, int(r.total.Load()+int64(r.local())-r.reportedLocal.Load()))
}

func (r *room) withdrawPresence() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := r.hub.opts.Presence.Report(ctx, r.name, r.hub.opts.ReplicaID, 0); err != nil && !errors.Is(err, context.Canceled) {
		r.hub.logger.Debug("live delivery: presence withdraw failed", "channel", r.name, "err", err)
	}
}
