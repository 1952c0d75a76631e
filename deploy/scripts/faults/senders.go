package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// sent is one message a sender tried to send: every attempt carried the same text and
// the same idempotency key.
type sent struct {
	channel, text, key string
	attempts           []sendAttempt
}

// ack is the attempt that was answered 201, if one was.
func (s *sent) ack() (sendAttempt, bool) {
	for _, a := range s.attempts {
		if a.acked() {
			return a, true
		}
	}
	return sendAttempt{}, false
}

// senders send unique texts at a steady total rate, each one message at a time, like a
// chat client with a queue: a message is retried (same key, the next replica, backoff)
// until it is acknowledged or refused, and only then is the next one sent.
type senders struct {
	api      *api
	tokens   []string
	channels []string
	run      string
	interval time.Duration // per sender
	timeout  time.Duration // per attempt
	drain    time.Duration // how long a message in flight is still retried after stop

	stop chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	log  []*sent
}

func (s *senders) start(ctx context.Context) {
	s.stop = make(chan struct{})
	for i := range s.tokens {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.loop(ctx, i)
		}()
	}
}

// halt stops new messages and waits for the ones in flight to be settled.
func (s *senders) halt() {
	close(s.stop)
	s.wg.Wait()
}

func (s *senders) stopped() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

func (s *senders) loop(ctx context.Context, w int) {
	next := time.Now()
	for seq := 0; !s.stopped() && ctx.Err() == nil; seq++ {
		m := &sent{
			channel: s.channels[(w+seq)%len(s.channels)],
			text:    fmt.Sprintf("%s s%d m%d", s.run, w+1, seq),
			key:     fmt.Sprintf("%s-s%d-m%d", s.run, w+1, seq),
		}
		s.mu.Lock()
		s.log = append(s.log, m)
		s.mu.Unlock()
		s.deliver(ctx, w, seq, m)
		next = next.Add(s.interval)
		if wait := time.Until(next); wait > 0 {
			select {
			case <-time.After(wait):
			case <-s.stop:
			}
		} else {
			next = time.Now()
		}
	}
}

// deliver retries m until it is acknowledged or refused, or the drain time after stop
// ran out (its outcome then stays unknown to the driver).
func (s *senders) deliver(ctx context.Context, w, seq int, m *sent) {
	var drainUntil time.Time
	backoff := 100 * time.Millisecond
	for try := 0; ; try++ {
		replica := (w + seq + try) % len(s.api.replicas)
		at := s.api.send(ctx, replica, s.tokens[w], m.channel, m.text, m.key, s.timeout)
		s.mu.Lock()
		m.attempts = append(m.attempts, at)
		s.mu.Unlock()
		if !at.retryable() {
			return
		}
		if s.stopped() && drainUntil.IsZero() {
			drainUntil = time.Now().Add(s.drain)
		}
		if !drainUntil.IsZero() && time.Now().After(drainUntil) || ctx.Err() != nil {
			return
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		if at.retry > wait {
			wait = at.retry
		}
		time.Sleep(wait)
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// snapshot copies the messages sent so far (attempts included).
func (s *senders) snapshot() []sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]sent, len(s.log))
	for i, m := range s.log {
		out[i] = *m
		out[i].attempts = append([]sendAttempt(nil), m.attempts...)
	}
	return out
}

// acksSince counts the 201s answered to attempts started at or after t, per replica.
func (s *senders) acksSince(t time.Time) map[int]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := map[int]int{}
	for _, m := range s.log {
		for _, a := range m.attempts {
			if a.acked() && !a.started.Before(t) {
				n[a.replica]++
			}
		}
	}
	return n
}
