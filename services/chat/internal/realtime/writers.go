package realtime

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// stuckWrite is how long a write may last before its runner no longer
// counts as a writer: a socket write that does not return within it is
// waiting for a peer whose buffers are full (or its runner lost its CPU),
// and the pool starts another runner so the other sockets are not held up.
const stuckWrite = 2 * time.Millisecond

// DefaultWriters is the number of socket writers a hub runs when
// Options.Writers is zero: one less than GOMAXPROCS, at least one, so
// that fan-out never takes every P and one stays free for the network
// poller (HTTP requests, Redis replies, pongs).
func DefaultWriters() int { return max(1, runtime.GOMAXPROCS(0)-1) }

// writers is the hub's pool of socket writers. A connection with frames
// queued waits in one FIFO (at most once: its awake flag says it is there
// or being written); a runner takes the connection at the head, writes one
// batch (conn.next: what is queued, joined up to Batch events) and puts it
// back at the tail while more is queued. A connection is written by at
// most one runner at a time, so its frames keep their order.
//
// Why not a goroutine per connection: an event readied one writer per
// subscriber (500 per replica in the 1,000-subscriber benchmark), each
// woken and parked again for a write of one event, and those goroutines
// filled the run queues that HTTP requests and Redis replies wait in. With
// max runners (fewer than the Ps) a P stays free for them, no goroutine
// is woken per subscriber, and a pass over the FIFO writes, in one frame
// per socket, everything that arrived meanwhile: at saturation more events
// per frame and less CPU per delivery (chat-issue12.sh saturation prints
// both; docs/benchmarks.md).
//
// A connection that stays backlogged (its last busyTurns writes each
// carried several events, but not a full frame, at a rate that would put
// busyEvents in a paced write: they reach it faster than the runners go
// round) is paced: it is written again once pace has passed
// since its last write began, waiting meanwhile in a second FIFO, later,
// whether more was queued after the write or comes after. At saturation
// the runners would otherwise go round as fast as they can, each pass
// writing the few events that arrived during the last one: one system call
// per socket per pass, which is most of a delivery's CPU (the write wakes
// the peer too). Paced, a write carries the events of pace, and what the
// writes no longer take goes to the sends. A socket that keeps up (one
// event per write), whatever the rate, is never held back, and a paced
// one whose writes carry single events again is no longer paced.
//
// A write that does not return within stuckWrite (a slow peer) marks its
// runner stuck and the pool starts another, so max runners are always
// free of stuck writes; a stuck runner exits once its write returns if
// the pool has enough runners without it. The pool looks for stuck
// runners when a connection is queued while every runner is busy, and
// then from one pool-level timer while work waits: never a timer per
// write. A write stuck for good ends when the janitor closes its socket
// (WriteTimeout). Runners park when the FIFO is empty (at most max of
// them); a replica that never wrote has none.
type writers struct {
	max     int
	pace    int64 // nanoseconds; 0: never hold a connection back
	metrics *metrics

	mu      sync.Mutex
	ready   connRing // connections with something queued
	later   connRing // backlogged connections waiting for their due time
	waking  bool     // dueTimer is set to move later's head to ready
	due     *time.Timer
	all     []*runner // live runners
	idle    []*runner // parked runners, waiting for work
	stuck   int       // runners in all whose write began over stuckWrite ago
	armed   bool      // timer is set to look for stuck runners
	closed  bool
	timer   *time.Timer
	done    chan struct{} // closed by close: parked runners exit
	running sync.WaitGroup
}

// busyTurns is how many busy writes in a row (several events each) make a
// connection paced: a burst now and then is written as fast as ever, only
// a rate that keeps the runners behind is paced.
const busyTurns = 3

// busyEvents is the least number of events a paced write would carry, at
// the rate the last write saw, for that write to count as busy: below it,
// pacing saves few system calls and costs every event up to a pace of
// latency.
const busyEvents = 4

// runner is one writer goroutine.
type runner struct {
	since atomic.Int64  // unix nanos the current write began, 0 between writes
	stuck bool          // counted in writers.stuck (under writers.mu)
	wake  chan struct{} // capacity 1: work for a parked runner
}

func newWriters(n int, pace time.Duration, m *metrics) *writers {
	p := &writers{max: n, pace: max(0, int64(pace)), metrics: m, done: make(chan struct{})}
	p.timer = time.AfterFunc(time.Hour, p.look)
	p.timer.Stop()
	p.due = time.AfterFunc(time.Hour, p.wake)
	p.due.Stop()
	return p
}

// requeue (under p.mu) puts c, just written and with more queued, back at
// the tail of ready, or of later when it is paced until due.
func (p *writers) requeue(c *conn, due int64) {
	if due == 0 {
		p.ready.push(c)
		return
	}
	c.due = due
	p.later.push(c)
}

// promote (under p.mu) moves the connections of later whose time has come
// to ready, in order. Their due times grow with the order they came in but
// for the length of a write (two runners' writes end in either order), so
// one a little early waits behind its head at most that long.
func (p *writers) promote() {
	if p.later.len() == 0 {
		return
	}
	now := time.Now().UnixNano()
	for p.later.len() > 0 && p.later.peek().due <= now {
		p.ready.push(p.later.pop())
	}
}

// armDue (under p.mu) sets the timer for later's head when no runner will
// find it by itself: every runner is about to park.
func (p *writers) armDue() {
	if p.waking || p.closed || p.later.len() == 0 {
		return
	}
	p.waking = true
	p.due.Reset(time.Duration(p.later.peek().due - time.Now().UnixNano()))
}

// wake runs from the due timer: it moves what is due to ready and hands
// it to a runner.
func (p *writers) wake() {
	p.mu.Lock()
	p.waking = false
	p.promote()
	p.dispatch()
	if p.ready.len() == 0 {
		p.armDue() // the head was not due yet: the timer fired early
	}
	p.mu.Unlock()
}

// enqueue puts c at the tail of the FIFO, or, when due is still to come
// (a paced connection), of later. The caller turned c's awake flag on, so
// c is in neither already.
func (p *writers) enqueue(c *conn, due int64) {
	p.mu.Lock()
	if due > time.Now().UnixNano() {
		c.due = due
		p.later.push(c)
		p.armDue()
	} else {
		p.ready.push(c)
		p.dispatch()
	}
	p.mu.Unlock()
}

// dispatch (under p.mu) finds a runner for the FIFO's work: a parked one,
// or a new one while fewer than max runners are free of stuck writes.
// When every runner is busy it looks for stuck ones, unless the timer
// will.
func (p *writers) dispatch() {
	switch {
	case p.closed || p.ready.len() == 0:
	case len(p.idle) > 0:
		r := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		r.wake <- struct{}{}
	case len(p.all)-p.stuck < p.max:
		p.start()
	case !p.armed:
		p.check(time.Now().UnixNano())
	}
}

func (p *writers) start() {
	r := &runner{wake: make(chan struct{}, 1)}
	p.all = append(p.all, r)
	p.metrics.writers.Inc()
	p.running.Add(1)
	go p.run(r)
}

// check (under p.mu) marks runners whose write began over stuckWrite ago
// as stuck, starts runners in their place for the waiting work and, while
// work still waits for busy runners, sets the timer to look again when
// the oldest write would become stuck.
func (p *writers) check(now int64) {
	oldest := int64(0)
	for _, r := range p.all {
		s := r.since.Load()
		switch {
		case r.stuck || s == 0:
		case now-s >= int64(stuckWrite):
			r.stuck = true
			p.stuck++
			p.metrics.stuckWrites.Inc()
		case oldest == 0 || s < oldest:
			oldest = s
		}
	}
	for n := p.ready.len(); n > 0 && len(p.all)-p.stuck < p.max; n-- {
		p.start()
	}
	if p.ready.len() > 0 && len(p.idle) == 0 {
		wait := stuckWrite
		if oldest != 0 {
			wait = time.Duration(oldest + int64(stuckWrite) - now)
		}
		p.armed = true
		p.timer.Reset(wait)
	}
}

// look runs from the timer.
func (p *writers) look() {
	p.mu.Lock()
	p.armed = false
	if !p.closed && p.ready.len() > 0 && len(p.idle) == 0 {
		p.check(time.Now().UnixNano())
	}
	p.mu.Unlock()
}

// run is one runner: it writes a turn of the connection at the head of the
// FIFO, puts it back at the tail if more is queued, and parks when the FIFO
// is empty. It exits when the pool has more runners than it needs (after
// a stuck write, or once closed and empty).
func (p *writers) run(r *runner) {
	defer p.running.Done()
	var c *conn   // the connection just written, when more is queued
	var due int64 // when c may be written next (0: at once)
	for {
		p.mu.Lock()
		if c != nil {
			p.requeue(c, due)
			c = nil
		}
		if r.stuck {
			r.stuck = false
			p.stuck--
		}
		p.promote()
		for p.ready.len() == 0 || len(p.all)-p.stuck > p.max {
			if p.closed || len(p.all)-p.stuck > p.max {
				p.exit(r)
				p.dispatch() // what this runner leaves goes to a parked one
				p.mu.Unlock()
				return
			}
			p.armDue()
			p.idle = append(p.idle, r)
			p.mu.Unlock()
			select {
			case <-r.wake:
			case <-p.done:
			}
			p.mu.Lock()
			p.unpark(r) // woken by close: still listed as parked
			p.promote()
		}
		c = p.ready.pop()
		p.mu.Unlock()
		var more bool
		if more, due = c.writeTurn(r); !more {
			c = nil
		}
	}
}

// exit removes r from the pool (under p.mu).
func (p *writers) exit(r *runner) {
	p.unpark(r)
	p.metrics.writers.Dec()
	for i, x := range p.all {
		if x == r {
			p.all[i] = p.all[len(p.all)-1]
			p.all[len(p.all)-1] = nil
			p.all = p.all[:len(p.all)-1]
			return
		}
	}
}

func (p *writers) unpark(r *runner) {
	for i, x := range p.idle {
		if x == r {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			return
		}
	}
	select {
	case <-r.wake: // a wake sent before close won: drop it
	default:
	}
}

// close stops the pool once the hub's connections are gone: parked runners
// exit, busy ones after their write (the sockets are closed), and no new
// one starts. wait returns when all have exited.
func (p *writers) close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.done)
		p.timer.Stop()
		p.due.Stop()
	}
	p.mu.Unlock()
}

func (p *writers) wait() { p.running.Wait() }

// connRing is a FIFO of connections in a ring buffer that grows as needed.
type connRing struct {
	buf  []*conn
	head int
	n    int
}

func (q *connRing) len() int { return q.n }

func (q *connRing) push(c *conn) {
	if q.n == len(q.buf) {
		buf := make([]*conn, max(16, 2*len(q.buf)))
		k := copy(buf, q.buf[q.head:])
		copy(buf[k:], q.buf[:q.head])
		q.buf, q.head = buf, 0
	}
	q.buf[(q.head+q.n)%len(q.buf)] = c
	q.n++
}

func (q *connRing) peek() *conn { return q.buf[q.head] }

func (q *connRing) pop() *conn {
	c := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return c
}
