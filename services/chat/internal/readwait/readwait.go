// Package readwait parks idle connections without a goroutine each. A goroutine
// blocked in a WebSocket read holds a 4 KB stack for as long as its peer stays
// quiet, which is most of an idle socket's cost; a Poller instead watches every
// parked socket with one epoll instance and one goroutine, and starts a goroutine
// for a connection only when it has bytes to read (or was kicked).
//
// A connection is parked with Wait, which arms a one-shot readiness watch, and leaves
// the poller either when its socket becomes readable (or hangs up) or when Kick takes
// it out; either way the poller's handler runs once, in a goroutine of its own. It is
// parked again by the next Wait. Where epoll is missing (not Linux), New reports
// ErrUnsupported and callers keep a goroutine per connection.
package readwait

import (
	"errors"
	"sync"
	"syscall"
)

// ErrUnsupported is New's answer where the platform has no readiness poller.
var ErrUnsupported = errors.New("readwait: no readiness poller on this platform")

// Poller watches parked connections; T is what its handler gets back.
type Poller[T any] struct {
	ready func(T)
	impl  impl

	mu     sync.Mutex
	parked map[uint64]T
	closed bool
}

// impl is the platform's side: arm a one-shot watch of a socket under a key, and
// deliver the keys of sockets that became ready.
type impl interface {
	arm(rc syscall.RawConn, key uint64) error
	run(deliver func(key uint64))
	close() error
}

// New starts a poller whose handler is ready, called in a new goroutine for each
// connection that leaves the poller.
func New[T any](ready func(T)) (*Poller[T], error) {
	im, err := newImpl()
	if err != nil {
		return nil, err
	}
	p := &Poller[T]{ready: ready, impl: im, parked: make(map[uint64]T)}
	go im.run(p.deliver)
	return p, nil
}

// Wait parks v under key (unique among parked connections) until rc's socket has
// bytes to read, hangs up, or Kick(key). An error (the socket is closed, the poller
// is closed) means v was not parked: the caller reads, and finds out.
func (p *Poller[T]) Wait(rc syscall.RawConn, key uint64, v T) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return errClosed
	}
	p.parked[key] = v // before arming: the event may come at once
	p.mu.Unlock()
	if err := p.impl.arm(rc, key); err != nil {
		p.mu.Lock()
		delete(p.parked, key)
		p.mu.Unlock()
		return err
	}
	return nil
}

var errClosed = errors.New("readwait: poller closed")

// Kick takes the connection parked under key out of the poller and runs the
// handler for it, as if its socket had become readable. It reports whether one was
// parked; a connection that is not (its handler is running) is left alone.
func (p *Poller[T]) Kick(key uint64) bool {
	p.mu.Lock()
	v, ok := p.parked[key]
	delete(p.parked, key)
	p.mu.Unlock()
	if ok {
		go p.ready(v)
	}
	return ok
}

// Parked counts the connections waiting in the poller.
func (p *Poller[T]) Parked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.parked)
}

func (p *Poller[T]) deliver(key uint64) {
	p.Kick(key) // a key no longer parked (kicked meanwhile) is ignored
}

// Close stops watching and runs the handler of every connection still parked.
func (p *Poller[T]) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	left := p.parked
	p.parked = make(map[uint64]T)
	p.mu.Unlock()
	err := p.impl.close()
	for _, v := range left {
		go p.ready(v)
	}
	return err
}
