package realtime

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/readwait"
	"github.com/apistack/platform/services/chat/internal/wsbuf"
)

// conn is one WebSocket subscriber. One goroutine serves it: the reader
// (client frames, and pongs, which coder/websocket handles inside Read).
// Its queue is written by the hub's writer pool (writers.go), a bounded
// number of goroutines shared by every connection, so fan-out to many
// sockets never occupies every P and the network poller stays served.
// Sends run in a goroutine of their own, started on the first one, so a
// slow store never stops the reader from answering pings.
type conn struct {
	hub *Hub
	ws  *websocket.Conn
	// nc is the socket under ws (deadlines for the close handshake, pings,
	// what the peer sent), br the reader ws reads through (pongs are skipped
	// there), rc the descriptor the hub's poller parks the socket on (nil: no
	// poller, a goroutine reads). All nil in tests that make a conn by hand.
	nc  *wsbuf.Conn
	br  *bufio.Reader
	rc  syscall.RawConn
	key uint64 // the poller's key for this socket, unique in the hub
	// brMu keeps wake's look at br (a read of the socket) apart from the
	// close handshake's reads, which coder/websocket makes under its own lock.
	brMu    sync.Mutex
	channel string
	ip      string // client address, for the limits
	room    *room

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the connection is gone

	mu      sync.Mutex
	queue   []*frame
	head    int         // queue[head:] is pending; keeps the array for reuse
	queued  int         // events (or control frames) pending
	last    chat.Cursor // last event written: older ones are skipped
	closing bool
	// awake: the connection is on the writer pool's ready FIFO or being
	// written (or still being set up: serve hands it to the pool after
	// greet), so a push need not queue it again; it is on the FIFO at
	// most once. It goes off when a turn finds the queue empty.
	awake bool

	// Pacing (writers.go), under mu: when the last write and the one
	// before it began (unix nanos) and how many writes in a row were busy
	// (settle). due is when a paced connection leaves the pool's later
	// FIFO (under the pool's lock).
	wrote, wrotePrev int64
	busy             int
	due              int64

	user atomic.Pointer[chat.User]
	// expiry closes the socket at its platform token's exp (nil for a
	// chat token, which does not expire); a refresh frame moves it.
	expMu  sync.Mutex
	expiry *time.Timer

	// Only the reader goroutine touches these.
	tokens  float64
	tokenAt time.Time
	jobs    chan clientFrame // made by the first auth or send
	working atomic.Bool      // a goroutine runs jobs (work)

	live         atomic.Bool  // set once the reader runs: pings may start
	shut         atomic.Bool  // closeWith began: the reader handles nothing more
	writingSince atomic.Int64 // unix nanos of the write in progress, 0 when idle
	closeOnce    sync.Once

	// Only the janitor (maintain) touches these.
	nextPing time.Time
	pingAt   time.Time // the ping waiting for a sign of life; zero when none
	heardAt  uint64    // nc.Received() when that ping went out
}

func newConn(h *Hub, ws *websocket.Conn, nc *wsbuf.Conn, br *bufio.Reader, channel string, user *chat.User) *conn {
	ctx, cancel := context.WithCancel(h.ctx)
	c := &conn{hub: h, ws: ws, nc: nc, br: br, key: h.nextKey.Add(1), channel: channel, ctx: ctx, cancel: cancel,
		done: make(chan struct{}), awake: true, // the pool gets it after greet
		tokens: float64(h.opts.SendBurst), tokenAt: time.Now()}
	if user != nil {
		c.user.Store(user)
	}
	// The first ping comes after half to all of the interval, at random:
	// sockets that connected together (after a restart, say) are then not
	// all pinged in one second, and each ping holds a goroutine and its
	// stack until the pong.
	first := h.opts.PingInterval
	if half := int64(first / 2); half > 0 {
		first -= time.Duration(rand.Int64N(half))
	}
	c.nextPing = time.Now().Add(first)
	if h.idle != nil {
		if rc, err := nc.SyscallConn(); err == nil {
			c.rc = rc
		}
	}
	ws.SetReadLimit(h.opts.MaxFrameBytes)
	return c
}

// stop cancels the connection's work and, when the socket is parked, wakes it
// so its read fails and cleanup runs: a parked socket has no goroutine that a
// closed socket would end.
func (c *conn) stop() {
	c.cancel()
	if c.rc != nil {
		c.hub.idle.Kick(c.key)
	}
}

// push queues event frames (the room's lock is held). It reports false
// when the queue would overflow: the caller unsubscribes and closes c.
func (c *conn) push(fs []*frame, events int) bool {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return true
	}
	if c.queued+events > c.hub.opts.QueueSize {
		c.closing = true
		c.hub.metrics.dropped.Add(float64(c.queued + events))
		c.mu.Unlock()
		return false
	}
	c.queue = append(c.queue, fs...)
	c.queued += events
	wake, due := c.wakeUp()
	c.mu.Unlock()
	if wake {
		c.hub.writers.enqueue(c, due)
	}
	return true
}

// wakeUp (under mu) turns the awake flag on and reports whether it was
// off, in which case the caller hands c to the writer pool, and when c may
// be written: at its pace after the last write when it is backlogged, else
// at once (0).
func (c *conn) wakeUp() (wake bool, due int64) {
	if c.awake {
		return false, 0
	}
	c.awake = true
	if c.busy >= busyTurns && c.hub.writers.pace > 0 {
		due = c.wrote + c.hub.writers.pace
	}
	return true, due
}

// pushControl queues one control frame (hello, presence, ack, error, pong).
func (c *conn) pushControl(f *frame) {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return
	}
	if c.queued+1 > c.hub.opts.QueueSize {
		// Closing from now on, so the frames that keep coming while the close
		// handshake runs (a flooder's pings) neither queue nor count again:
		// one slow socket is one slow consumer.
		c.closing = true
		c.mu.Unlock()
		c.hub.metrics.slowCloses.Inc()
		go c.closeWith(CloseSlowConsumer, "too slow to keep up; reconnect with since")
		return
	}
	c.queue = append(c.queue, f)
	c.queued++
	wake, due := c.wakeUp()
	c.mu.Unlock()
	if wake {
		c.hub.writers.enqueue(c, due)
	}
}

func (c *conn) pop() {
	c.queue[c.head] = nil
	c.head++
	if c.head == len(c.queue) {
		c.queue, c.head = c.queue[:0], 0
	}
}

var joinPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// next takes what a writer sends in one frame: a control frame alone, or
// consecutive event frames up to Batch events, skipping events the client
// already has. A single event frame goes out as the very bytes every other
// subscriber gets; several are joined with newlines into a pooled buffer
// (returned as buf, to be put back after the write).
func (c *conn) next() (data []byte, events int, buf *bytes.Buffer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		// Closing (too slow, revoked, shutting down): what is queued is
		// dropped, never written; the client recovers it with since.
		clear(c.queue)
		c.queue, c.head, c.queued = c.queue[:0], 0, 0
		c.awake = false
		return nil, 0, nil
	}
	var first []byte
	c.wrotePrev, c.wrote = c.wrote, time.Now().UnixNano()
	for c.head < len(c.queue) {
		f := c.queue[c.head]
		if f.events() == 0 {
			if events > 0 {
				break
			}
			c.pop()
			c.queued--
			return f.data, 0, nil
		}
		d, k := f.after(c.last)
		if k == 0 {
			c.pop()
			c.queued -= f.events()
			continue
		}
		if events > 0 && events+k > c.hub.opts.Batch {
			break
		}
		c.pop()
		c.queued -= f.events()
		c.last = f.cursors[len(f.cursors)-1]
		switch {
		case events == 0:
			first = d
		case buf == nil:
			buf = joinPool.Get().(*bytes.Buffer)
			buf.Reset()
			buf.Write(first)
			fallthrough
		default:
			buf.WriteByte('\n')
			buf.Write(d)
		}
		events += k
	}
	if buf != nil {
		return buf.Bytes(), events, buf
	}
	if first == nil {
		c.awake = false // empty: the next push queues c on the pool again
	}
	return first, events, nil
}

// writeTurn is a runner's turn on c: it writes one frame (next) and
// reports whether more is queued, in which case the runner puts c back at
// the tail of the pool's FIFO (or, paced, of its later FIFO until due);
// otherwise c goes idle and the next push queues it again. Writes carry no context deadline (coder/websocket would
// arm a timer per write); the janitor drops a connection whose write is
// stuck instead.
func (c *conn) writeTurn(r *runner) (more bool, due int64) {
	if c.ctx.Err() != nil {
		return false, 0 // gone: cleanup drops the queue
	}
	data, events, buf := c.next()
	if data == nil {
		return false, 0
	}
	now := time.Now().UnixNano()
	c.writingSince.Store(now)
	r.since.Store(now)
	err := c.ws.Write(context.Background(), websocket.MessageText, data)
	r.since.Store(0)
	c.writingSince.Store(0)
	if buf != nil {
		joinPool.Put(buf)
	}
	if err != nil {
		c.stop()
		c.ws.CloseNow()
		return false, 0
	}
	c.hub.metrics.frames.Inc()
	c.hub.metrics.delivered.Add(float64(events))
	return c.settle(events)
}

// settle counts a write of events toward pacing and reports, as pending
// does, whether more is queued. A busy write carried several events (they
// came while the connection waited for its turn) at a rate at which a
// paced write would carry at least busyEvents: events over the time since
// the previous write began. Several events alone do not make a write busy:
// the feed hands over the events that reached Redis together, so at a
// modest rate (100 messages a second) writes carry two or three while
// the socket keeps up, and pacing them would only add latency. A single
// event shows the socket keeps up, and a full frame that pacing would not
// fill more (it would cap the socket at Batch events per Pace): not busy.
// A control frame goes out alone whatever follows it, and counts for
// nothing.
// When more is queued, due is when c may be written next (0: at once).
func (c *conn) settle(events int) (more bool, due int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pace := c.hub.writers.pace
	switch {
	case events == 0:
	case events > 1 && events < c.hub.opts.Batch && c.wrotePrev != 0 &&
		int64(events)*pace >= busyEvents*(c.wrote-c.wrotePrev):
		c.busy++
	default:
		c.busy = 0
	}
	if !c.pendingLocked() {
		return false, 0
	}
	if c.busy >= busyTurns && c.hub.writers.pace > 0 {
		due = c.wrote + c.hub.writers.pace
	}
	return true, due
}

// pending reports whether c has more queued after a write; if not, c
// goes idle (awake off) under the same lock, so a push that comes after
// queues it again and none is lost between the two.
func (c *conn) pending() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pendingLocked()
}

func (c *conn) pendingLocked() bool {
	if c.head < len(c.queue) && !c.closing {
		return true
	}
	c.awake = false
	return false
}

// release hands c to the writer pool once greet has written what comes
// first: until then it was held awake, so pushes only queued.
func (c *conn) release() {
	if c.pending() {
		c.hub.writers.enqueue(c, 0)
	}
}

// writeNow writes a frame from the setup goroutine, before release hands
// the connection to the writer pool.
func (c *conn) writeNow(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode frame: %w", err)
	}
	ctx, cancel := c.within(c.hub.opts.WriteTimeout)
	defer cancel()
	return c.ws.Write(ctx, websocket.MessageText, b)
}

// closeGrace bounds each half of the close handshake: writing the close
// frame, and waiting for the peer's. coder/websocket gives each 5 s and
// reads (and discards) whatever the peer sends meanwhile, so a client
// that floods and never reads kept a core busy for seconds after the
// decision to drop it.
const closeGrace = time.Second

// within bounds a call an idle socket makes (its setup, its pings) by d and
// by the hub's life. It is not a child of c.ctx on purpose: a child
// registers in c.ctx's map of children, and that map, once made, stays
// allocated for as long as the socket is open. Whatever ends a connection
// also closes its socket, which ends these calls.
func (c *conn) within(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.hub.ctx, d)
}

// closeWith closes the connection with a code (once); the close handshake
// may wait for a slow peer (up to closeGrace for each half), so callers on
// hot paths run it in a goroutine. From here on the reader handles no
// frame, and a peer closed as too slow is not waited for: it does not read
// what it is sent, so it will not answer the close frame either; the
// socket is closed once the close frame is written or its time is up.
func (c *conn) closeWith(code websocket.StatusCode, reason string) {
	c.closeOnce.Do(func() {
		c.shut.Store(true)
		c.mu.Lock()
		c.closing = true
		c.mu.Unlock()
		c.hub.metrics.closes.WithLabelValues(closeLabel(code)).Inc()
		if c.nc != nil {
			now := time.Now()
			// The write deadline also ends a writer's write stuck on this
			// peer, which holds the lock the close frame needs.
			_ = c.nc.SetWriteDeadline(now.Add(closeGrace))
			answer := now.Add(closeGrace)
			if code == CloseSlowConsumer {
				answer = now
			}
			_ = c.nc.SetReadDeadline(answer)
		}
		// After the read deadline: a wake-up blocked in its look at the
		// socket gives brMu back by then.
		c.brMu.Lock()
		_ = c.ws.Close(code, reason)
		c.brMu.Unlock()
		c.stop()
	})
}

func (c *conn) waitDone(ctx context.Context) {
	select {
	case <-c.done:
	case <-ctx.Done():
		c.ws.CloseNow()
	}
}

// maintain runs every second from the hub's janitor: it drops a peer whose
// write has been stuck beyond WriteTimeout and pings when one is due.
func (c *conn) maintain(now time.Time) {
	if !c.live.Load() || c.ctx.Err() != nil {
		return
	}
	c.mu.Lock()
	if c.head == len(c.queue) && cap(c.queue) > 0 {
		// Drained: an idle socket keeps no queue array, which grows to the
		// longest backlog it ever had (a burst of presence frames on
		// connect); a busy one gets a new array at most once a second.
		c.queue, c.head = nil, 0
	}
	c.mu.Unlock()
	if ws := c.writingSince.Load(); ws != 0 && now.Sub(time.Unix(0, ws)) > c.hub.opts.WriteTimeout {
		c.hub.metrics.deadPeers.Inc()
		c.stop()
		c.ws.CloseNow()
		return
	}
	if c.nc == nil {
		return
	}
	// A ping is answered by a pong, which whoever reads next consumes (the
	// poller's wake-up skips it, coder/websocket drops it): any byte heard
	// from the peer since the ping shows it is alive. No goroutine waits.
	if !c.pingAt.IsZero() {
		switch {
		case c.nc.Received() != c.heardAt:
			c.pingAt = time.Time{}
			c.nextPing = now.Add(c.hub.opts.PingInterval)
		case now.Sub(c.pingAt) > c.hub.opts.PongTimeout:
			// No pong in time: the peer is gone without a close frame.
			c.hub.metrics.deadPeers.Inc()
			c.stop()
			c.ws.CloseNow()
		}
		return
	}
	if now.Before(c.nextPing) {
		return
	}
	c.pingAt, c.heardAt = now, c.nc.Received()
	// The write waits for a frame in progress to complete: not on the janitor.
	go func() { _ = c.nc.Ping() }()
}

// serve runs the connection: auth when reading needs it, join, recovery,
// then the writer pool and the read loop. since is nil for a fresh subscription.
func (c *conn) serve(since *chat.Cursor, needAuth bool) {
	if !c.setup(since, needAuth) {
		c.cleanup()
		return
	}
	c.release()
	c.live.Store(true)
	if c.rc == nil {
		c.readLoop()
		c.cleanup()
		return
	}
	c.readOn(false)
}

// setup authenticates (when reading needs it), joins the room and greets;
// false when the connection is to end.
func (c *conn) setup(since *chat.Cursor, needAuth bool) bool {
	if needAuth && !c.awaitAuth() {
		return false
	}
	jctx, cancel := c.within(10 * time.Second)
	r, pos, err := c.hub.join(jctx, c.channel, c)
	cancel()
	if err != nil {
		c.closeWith(websocket.StatusTryAgainLater, "the chat store is unavailable; reconnect later")
		return false
	}
	c.room = r
	if err := c.greet(since, pos); err != nil {
		if c.ctx.Err() == nil {
			c.hub.logger.Debug("live delivery: greeting failed", "channel", c.channel, "err", err)
		}
		return false
	}
	return true
}

// greet writes hello, the presence count and, when the client asked for
// it, every event after since. The connection is already subscribed at pos
// (every later event is queued), so replaying from since until at least
// pos leaves no gap, and the writers skip queued events up to the last one
// replayed, so there is no duplicate either.
func (c *conn) greet(since *chat.Cursor, pos chat.Cursor) error {
	var ref *chat.UserRef
	if u := c.user.Load(); u != nil {
		r := u.Ref()
		// The role the user has in this channel (a moderator named here shows as one), as
		// messages and events show it; the platform-wide one when the standing cannot be read.
		if m, err := c.hub.svc.Member(c.ctx, *u, c.channel); err == nil {
			r = m.Ref()
		} else if c.ctx.Err() == nil {
			c.hub.logger.Debug("live delivery: hello without the channel role", "channel", c.channel, "err", err)
		}
		ref = &r
	}
	hello := helloFrame{Type: typeHello, Channel: c.channel, LastID: pos, User: ref, Replica: c.hub.opts.ReplicaName}
	presence := presenceFrame{Type: typePresence, Channel: c.channel, Count: c.room.estimate()}
	if since == nil {
		c.setLast(pos)
		if err := c.writeNow(hello); err != nil {
			return err
		}
		return c.writeNow(presence)
	}
	const page = 100
	cur := *since
	evs, err := c.readHistory(cur, page)
	switch {
	case chat.KindOf(err) == chat.KindHistoryGone:
		// The client must reload (GET /messages up to last_id); live
		// events follow from pos.
		c.setLast(pos)
		if err := c.writeNow(hello); err != nil {
			return err
		}
		return c.writeNow(presence)
	case err != nil:
		c.closeWith(websocket.StatusTryAgainLater, "the chat store is unavailable; reconnect with the same since")
		return err
	}
	hello.Recovered = true
	if err := c.writeNow(hello); err != nil {
		return err
	}
	if err := c.writeNow(presence); err != nil {
		return err
	}
	for len(evs) > 0 {
		frames, err := encodeEvents(evs, c.hub.opts.Batch)
		if err != nil {
			return fmt.Errorf("encode replay: %w", err)
		}
		for _, f := range frames {
			ctx, cancel := c.within(c.hub.opts.WriteTimeout)
			err := c.ws.Write(ctx, websocket.MessageText, f.data)
			cancel()
			if err != nil {
				return err
			}
			c.hub.metrics.replayed.Add(float64(f.events()))
		}
		cur = evs[len(evs)-1].Cursor
		if !cur.Less(pos) {
			break // the queue holds everything after pos
		}
		if evs, err = c.readHistory(cur, page); err != nil {
			// Mid-replay the window moved past us, or the store went away:
			// the client resumes from what it has.
			c.closeWith(CloseResync, "recovery interrupted; reconnect with since")
			return err
		}
	}
	if cur.Less(pos) {
		cur = pos
	}
	c.setLast(cur)
	return nil
}

// readHistory reads one page after cur, retrying briefly while the store
// is unavailable.
func (c *conn) readHistory(cur chat.Cursor, page int) ([]chat.Event, error) {
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		if err := c.ctx.Err(); err != nil {
			return nil, err
		}
		if attempt > 0 {
			select {
			case <-c.hub.ctx.Done():
				return nil, c.hub.ctx.Err()
			case <-time.After(time.Duration(attempt) * 250 * time.Millisecond):
			}
		}
		ctx, cancel := c.within(5 * time.Second)
		var evs []chat.Event
		evs, err = c.hub.log.ReadEvents(ctx, c.channel, cur, page)
		cancel()
		if chat.KindOf(err) != chat.KindUnavailable {
			return evs, err
		}
	}
	return nil, err
}

func (c *conn) setLast(cur chat.Cursor) {
	c.mu.Lock()
	if c.last.Less(cur) {
		c.last = cur
	}
	c.mu.Unlock()
}

// expireAt arms the close at a platform token's exp, or disarms it when
// exp is zero (a chat token). Each authentication replaces the last one's.
func (c *conn) expireAt(exp time.Time) {
	c.expMu.Lock()
	defer c.expMu.Unlock()
	if c.expiry != nil {
		c.expiry.Stop()
		c.expiry = nil
	}
	if exp.IsZero() {
		return
	}
	c.expiry = time.AfterFunc(time.Until(exp), func() {
		c.closeWith(CloseTokenExpired, "token expired: send a refresh frame with a fresh token before exp")
	})
}

// expires reports whether the socket holds a platform token.
func (c *conn) expires() bool {
	c.expMu.Lock()
	defer c.expMu.Unlock()
	return c.expiry != nil
}

// refresh renews the socket's platform token: a valid one for the same
// user moves the close to its exp. Anything else is an error frame and
// leaves the socket as it was, to close at the old exp.
func (c *conn) refresh(ctx context.Context, f clientFrame) any {
	cur := c.user.Load()
	if cur == nil || !c.expires() {
		return badRequest(f.ID, "refresh renews a platform token; this socket holds none (send auth)")
	}
	ss, err := c.hub.svc.AuthenticateSession(ctx, f.Token)
	if err != nil {
		return errorFor(f.ID, err)
	}
	if ss.Expires.IsZero() {
		return badRequest(f.ID, "refresh needs a platform token (a JWT), not a chat token")
	}
	if ss.User.ID != cur.ID {
		return errorFor(f.ID, &chat.Error{Kind: chat.KindForbidden, Message: "a refresh token must be for the socket's user (the same sub)"})
	}
	c.user.Store(&ss.User)
	c.expireAt(ss.Expires)
	ref := ss.User.Ref()
	return ackFrame{Type: typeAck, ID: f.ID, User: &ref}
}

// awaitAuth waits for an auth frame when reading needs a token.
func (c *conn) awaitAuth() bool {
	// A context deadline on Read would drop the connection without a
	// close frame; a timer closes it properly with 4001 instead.
	timer := time.AfterFunc(c.hub.opts.AuthTimeout, func() {
		c.closeWith(CloseUnauthorized, "reading needs a token: send {\"type\":\"auth\",\"token\":...} first")
	})
	defer timer.Stop()
	for {
		typ, data, err := c.ws.Read(c.ctx)
		if err != nil {
			return false
		}
		var f clientFrame
		if typ != websocket.MessageText || json.Unmarshal(bytes.TrimSpace(data), &f) != nil || f.Type != typeAuth {
			_ = c.writeNow(errorFor(f.ID, &chat.Error{Kind: chat.KindUnauthorized, Message: "reading needs a token: send an auth frame first"}))
			continue
		}
		actx, acancel := context.WithTimeout(c.ctx, c.hub.opts.SendTimeout)
		ss, err := c.hub.svc.AuthenticateSession(actx, f.Token)
		acancel()
		u := ss.User
		if err != nil {
			_ = c.writeNow(errorFor(f.ID, err))
			if chat.KindOf(err) == chat.KindUnauthorized {
				c.closeWith(CloseUnauthorized, "invalid token")
				return false
			}
			continue
		}
		if err := c.hub.authenticate(c, &u); errors.Is(err, errConnGone) {
			return false
		} else if err != nil {
			// Reading needs this token and its user holds every socket it may:
			// waiting would not help, closing one of its other sockets would.
			_ = c.writeNow(limitFrame(f.ID, err))
			c.closeWith(CloseTooManySockets, "too many sockets for this user")
			return false
		}
		c.expireAt(ss.Expires)
		ref := u.Ref()
		return c.writeNow(ackFrame{Type: typeAck, ID: f.ID, User: &ref}) == nil
	}
}

// readLoop handles client frames until the connection ends, in a goroutine
// of its own: where the hub has no poller.
func (c *conn) readLoop() {
	for c.readOne() {
	}
}

// wake runs (in a goroutine of its own) when a parked socket has bytes to
// read or was stopped: it handles every complete frame the peer sent, skips
// pongs, and parks the socket again once nothing is left to read. A client
// that sends part of a frame keeps the goroutine until the rest comes (or the
// socket ends).
func (c *conn) wake() { c.readOn(true) }

// readOn reads and handles frames until nothing is left to read, then parks
// the socket. ready says the socket has bytes (or was stopped): look may read
// it without waiting.
func (c *conn) readOn(ready bool) {
	for {
		res := c.look(ready)
		// After a message, what the socket holds beyond br is the poller's
		// to report: a look that read now would wait for the peer.
		ready = false
		switch res {
		case parked:
			return
		case gone:
			c.cleanup()
			return
		}
		if !c.readOne() {
			c.cleanup()
			return
		}
	}
}

type lookResult int

const (
	readable lookResult = iota // a frame (or part of one) waits: read it
	parked                     // nothing to read: back in the poller
	gone                       // the socket failed or closed
)

// look reads what the socket holds into br when ready (the poller said it has
// bytes, or the connection was stopped and the read fails at once), drops
// pongs, and parks the socket when nothing else is left.
func (c *conn) look(ready bool) lookResult {
	c.brMu.Lock()
	defer c.brMu.Unlock()
	if c.shut.Load() || c.ctx.Err() != nil {
		return readable // closing: the read reports it, under coder/websocket's lock
	}
	if !ready && c.br.Buffered() == 0 {
		// A peer that sent more already (a busy sender, a flood) is read on
		// here: parking would only wake it again at once.
		if n, err := readwait.Pending(c.rc); err == nil && n > 0 {
			ready = true
		}
	}
	if ready && c.br.Buffered() == 0 {
		if _, err := c.br.Peek(1); err != nil {
			return gone
		}
	}
	if wsbuf.SkipPongs(c.br) {
		return readable
	}
	if c.hub.idle.Wait(c.rc, c.key, c) != nil {
		return readable // the socket is closed: the read reports it
	}
	if c.ctx.Err() != nil {
		// Stopped while parking: stop's kick may have found nothing parked.
		c.hub.idle.Kick(c.key)
	}
	return parked
}

// readOne reads one client message and handles its frames; false when the
// connection ends. It reads without a context: coder/websocket registers a
// read's context with context.AfterFunc, which an idle socket would hold for
// its whole life, and whatever ends a live connection closes its socket,
// which ends the read.
func (c *conn) readOne() bool {
	typ, data, err := c.ws.Read(context.Background())
	if c.shut.Load() {
		return false // closing: what the peer sends now is not served
	}
	if err != nil {
		if code := closeCode(err); code == websocket.StatusMessageTooBig || errors.Is(err, websocket.ErrMessageTooBig) {
			c.hub.metrics.closes.WithLabelValues(closeLabel(websocket.StatusMessageTooBig)).Inc()
		}
		return false
	}
	if typ != websocket.MessageText {
		c.closeWith(websocket.StatusUnsupportedData, "text frames only")
		return false
	}
	for line := range bytes.SplitSeq(data, []byte{'\n'}) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 {
			c.handle(line)
		}
	}
	return true
}

func (c *conn) handle(line []byte) {
	var f clientFrame
	if err := json.Unmarshal(line, &f); err != nil {
		c.pushControl(controlFrame(badRequest(nil, "a frame holds JSON objects, one per line: "+err.Error())))
		return
	}
	switch f.Type {
	case typePing:
		c.pushControl(controlFrame(pongFrame{Type: typePong, ID: f.ID}))
	case typeAuth, typeRefresh, typeSend:
		if !c.allow() {
			c.hub.metrics.sendErrors.WithLabelValues(codeRateLimited).Inc()
			c.pushControl(controlFrame(rateLimited(f.ID, fmt.Sprintf("too many frames on this connection: at most %g per second", c.hub.opts.SendRate))))
			return
		}
		if c.jobs == nil {
			c.jobs = make(chan clientFrame, 8)
		}
		select {
		case c.jobs <- f:
			if c.working.CompareAndSwap(false, true) {
				go c.work()
			}
		default:
			c.pushControl(controlFrame(rateLimited(f.ID, "too many requests in flight on this connection")))
		}
	default:
		c.pushControl(controlFrame(badRequest(f.ID, fmt.Sprintf("unknown frame type %q (want auth, refresh, send or ping)", f.Type))))
	}
}

// allow is the per-connection token bucket.
func (c *conn) allow() bool {
	now := time.Now()
	c.tokens = min(float64(c.hub.opts.SendBurst), c.tokens+now.Sub(c.tokenAt).Seconds()*c.hub.opts.SendRate)
	c.tokenAt = now
	if c.tokens < 1 {
		return false
	}
	c.tokens--
	return true
}

// work runs auth and send frames one at a time, in the order they came, and
// ends when none is left: a socket that sent once keeps no goroutine (whose
// stack a send through the store has grown) while it is idle.
func (c *conn) work() {
	for {
		select {
		case <-c.ctx.Done():
			return
		case f := <-c.jobs:
			c.pushControl(controlFrame(c.run(f)))
		default:
			c.working.Store(false)
			// A frame queued between the empty look and the store found
			// working still set: take it, unless its sender started a worker.
			if len(c.jobs) == 0 || !c.working.CompareAndSwap(false, true) {
				return
			}
		}
	}
}

func (c *conn) run(f clientFrame) any {
	ctx, cancel := context.WithTimeout(c.ctx, c.hub.opts.SendTimeout)
	defer cancel()
	switch f.Type {
	case typeRefresh:
		return c.refresh(ctx, f)
	case typeAuth:
		ss, err := c.hub.svc.AuthenticateSession(ctx, f.Token)
		if err != nil {
			return errorFor(f.ID, err)
		}
		u := ss.User
		if cur := c.user.Load(); cur != nil && cur.ID != u.ID {
			// As for refresh: a socket's user is settled once it has one,
			// so a second auth frame cannot swap it for another account.
			return errorFor(f.ID, &chat.Error{Kind: chat.KindForbidden, Message: "this socket is authenticated already: a second auth token must be for the socket's user (the same sub)"})
		}
		if err := c.hub.authenticate(c, &u); err != nil {
			return limitFrame(f.ID, err) // the socket stays as it was
		}
		c.expireAt(ss.Expires)
		ref := u.Ref()
		return ackFrame{Type: typeAck, ID: f.ID, User: &ref}
	}
	u := c.user.Load()
	if u == nil {
		c.hub.metrics.sendErrors.WithLabelValues(string(chat.KindUnauthorized)).Inc()
		return errorFor(f.ID, &chat.Error{Kind: chat.KindUnauthorized,
			Message: "sending needs a token: send an auth frame or connect with an Authorization header"})
	}
	// The socket holds its user since it authenticated: Send reads it
	// again, so a ban or a deletion since applies (chat.Held).
	res, err := c.hub.svc.Send(ctx, chat.Held(*u), chat.SendInput{Channel: c.channel, Message: f.Message, IdempotencyKey: f.IdempotencyKey})
	if err != nil {
		e := errorFor(f.ID, err)
		c.hub.metrics.sendErrors.WithLabelValues(e.Code).Inc()
		if e.Code == codeInternal {
			c.hub.logger.Error("live delivery: send failed", "channel", c.channel, "user", u.ID, "err", err)
		}
		return e
	}
	if res.Held != nil {
		return ackFrame{Type: typeAck, ID: f.ID, Held: res.Held}
	}
	if !res.Replayed {
		c.hub.metrics.messages.Inc()
	}
	return ackFrame{Type: typeAck, ID: f.ID, Message: &res.Message, Reply: res.Reply, Replayed: res.Replayed}
}

func (c *conn) cleanup() {
	c.cancel()
	c.expireAt(time.Time{})
	if c.room != nil {
		c.room.leave(c)
	}
	c.hub.removeConn(c)
	c.hub.releaseConn(c)
	// A close under way (closeWith, which stops the reader) finishes its
	// handshake rather than being cut short; otherwise close now.
	c.closeOnce.Do(func() { c.ws.CloseNow() })
	c.ws.CloseNow()
	c.mu.Lock()
	c.closing = true
	c.queue, c.head, c.queued = nil, 0, 0
	c.mu.Unlock()
	close(c.done)
}
