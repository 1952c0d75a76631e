package realtime

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// room is one channel on one replica: the reader that tails the channel's
// log and the connections subscribed here.
type room struct {
	hub    *Hub
	name   string
	ctx    context.Context
	cancel context.CancelFunc
	ready  chan struct{} // closed once pos holds the starting head

	mu      sync.Mutex
	subs    map[*conn]struct{}
	pos     chat.Cursor // last event fanned out: a joiner gets everything after it
	stopped bool
	idle    time.Time // when the last subscriber left

	// presence
	reporting     atomic.Bool
	dirty         atomic.Bool
	debounce      atomic.Bool
	lastReport    atomic.Int64 // unix nanos
	total         atomic.Int64 // last count over all replicas
	reportedLocal atomic.Int64 // local count in that report
}

func newRoom(h *Hub, name string) *room {
	ctx, cancel := context.WithCancel(h.ctx)
	// idle starts now: a room nobody manages to join (the store is down)
	// stops after RoomLinger like any other.
	return &room{hub: h, name: name, ctx: ctx, cancel: cancel, ready: make(chan struct{}), subs: map[*conn]struct{}{}, idle: time.Now()}
}

// run learns the channel's head, then tails the log from the last cursor
// fanned out until the room stops. The store being down only delays it
// (chat.Tail retries from the same cursor, so nothing stored is skipped);
// a position that left the history window makes every subscriber here
// resync (4010), as their view now has a gap, and starts again at the head.
func (r *room) run() {
	h := r.hub
	defer h.wg.Done()
	defer r.withdrawPresence()
	head, ok := r.head()
	if !ok {
		return
	}
	r.mu.Lock()
	r.pos = head
	r.mu.Unlock()
	close(r.ready)
	topts := h.opts.Tail
	topts.OnError = func(err error) {
		h.metrics.readErrors.Inc()
		h.logger.Warn("live delivery: channel log unavailable; retrying from the last cursor",
			"channel", r.name, "err", err)
	}
	for {
		r.mu.Lock()
		pos := r.pos
		r.mu.Unlock()
		err := chat.Tail(r.ctx, h.log, r.name, pos, r.fanout, topts)
		if r.ctx.Err() != nil {
			return
		}
		code, reason := CloseResync, "this replica lost its place in the channel; reconnect with since"
		if chat.KindOf(err) != chat.KindHistoryGone {
			h.logger.Error("live delivery: channel reader failed; resyncing subscribers", "channel", r.name, "err", err)
			code = websocket.StatusInternalError
		} else {
			h.logger.Warn("live delivery: reader position left the history window; resyncing subscribers", "channel", r.name, "after", pos)
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
		r.mu.Unlock()
		for _, c := range subs {
			go c.closeWith(code, reason)
		}
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
		select {
		case <-r.ctx.Done():
			return chat.Cursor{}, false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// fanout encodes a batch of events once and queues the same frames on
// every subscriber. It holds the room's lock so that a joiner's starting
// cursor and the events queued for it meet exactly.
func (r *room) fanout(evs []chat.Event) error {
	frames, err := encodeEvents(evs, r.hub.opts.Batch)
	if err != nil {
		return err // a domain event that cannot be encoded: the reader restarts
	}
	r.hub.metrics.events.Add(float64(len(evs)))
	var slow []*conn
	r.mu.Lock()
	r.pos = evs[len(evs)-1].Cursor
	for c := range r.subs {
		if !c.push(frames, len(evs)) {
			delete(r.subs, c)
			slow = append(slow, c)
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
	return nil
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

// maintain runs every second: presence refresh and idle stop.
func (r *room) maintain(now time.Time) {
	r.mu.Lock()
	idle := len(r.subs) == 0 && !r.idle.IsZero() && now.Sub(r.idle) >= r.hub.opts.RoomLinger
	r.mu.Unlock()
	if idle {
		r.hub.stopRoom(r)
		return
	}
	if r.dirty.Load() || now.Sub(time.Unix(0, r.lastReport.Load())) >= r.hub.opts.PresenceInterval {
		r.reportPresence()
	}
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
	if r.ctx.Err() != nil || !r.reporting.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer r.reporting.Store(false)
		r.dirty.Store(false)
		n := r.local()
		ctx, cancel := context.WithTimeout(r.ctx, 2*time.Second)
		total, err := r.hub.opts.Presence.Report(ctx, r.name, r.hub.opts.ReplicaID, n)
		cancel()
		if err != nil {
			r.dirty.Store(true) // try again on the next sweep
			if r.ctx.Err() == nil {
				r.hub.logger.Debug("live delivery: presence report failed", "channel", r.name, "err", err)
			}
			return
		}
		r.lastReport.Store(time.Now().UnixNano())
		r.reportedLocal.Store(int64(n))
		if int64(total) != r.total.Swap(int64(total)) {
			r.broadcast(controlFrame(presenceFrame{Type: typePresence, Channel: r.name, Count: total}))
		}
	}()
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
