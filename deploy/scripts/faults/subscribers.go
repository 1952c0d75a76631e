package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// subscriber is one live client of a channel, as the browser client behaves: it reads
// until its socket drops, then reconnects (to the next replica, with backoff) with
// since=<the last cursor it received>, for as long as the test runs.
type subscriber struct {
	api     *api
	channel string
	replica int

	mu           sync.Mutex
	cursor       string // the last cursor received (hello's last_id at first)
	got          []message
	connects     int
	notRecovered int      // hellos that answered since= with recovered:false
	drops        []string // why each socket ended, in order
	dialErrors   int
	lastDialErr  string
	ready        chan struct{} // closed at the first hello
	readyOnce    sync.Once
}

func newSubscriber(a *api, channel string, replica int) *subscriber {
	return &subscriber{api: a, channel: channel, replica: replica, ready: make(chan struct{})}
}

// run connects and reconnects until ctx ends. A socket that dropped after a while is
// replaced at once; failed dials and sockets that end right away (1013 while Redis is
// out) back off, doubling from 0.25 s to 2 s, so an outage does not become a busy loop.
func (s *subscriber) run(ctx context.Context) {
	const firstBackoff, maxBackoff, healthy = 250 * time.Millisecond, 2 * time.Second, 2 * time.Second
	backoff := firstBackoff
	for ctx.Err() == nil {
		s.mu.Lock()
		since := s.cursor
		s.mu.Unlock()
		opened := time.Now()
		conn, err := s.dial(ctx, since)
		if err == nil {
			reason := s.read(ctx, conn, since != "")
			_ = conn.CloseNow()
			if ctx.Err() != nil {
				return
			}
			s.mu.Lock()
			s.drops = append(s.drops, reason)
			s.mu.Unlock()
		} else if ctx.Err() == nil {
			s.mu.Lock()
			s.dialErrors++
			s.lastDialErr = err.Error()
			s.mu.Unlock()
		}
		// A real client behind a load balancer lands on any replica: take the next one.
		s.replica = (s.replica + 1) % len(s.api.replicas)
		if err == nil && time.Since(opened) > healthy {
			backoff = firstBackoff
			continue
		}
		select {
		case <-time.After(backoff/2 + rand.N(backoff/2+1)):
		case <-ctx.Done():
			return
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

func (s *subscriber) dial(ctx context.Context, since string) (*websocket.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	u := s.api.wsURL(s.replica, s.channel, since)
	conn, res, err := websocket.Dial(dctx, u, nil)
	if err != nil {
		if res != nil {
			return nil, fmt.Errorf("dial %s: HTTP %d: %w", u, res.StatusCode, err)
		}
		return nil, fmt.Errorf("dial %s: %w", u, err)
	}
	conn.SetReadLimit(1 << 20)
	return conn, nil
}

// read consumes frames until the socket ends, and says why it ended.
func (s *subscriber) read(ctx context.Context, conn *websocket.Conn, resumed bool) string {
	first := true
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			if code := websocket.CloseStatus(err); code != -1 {
				return fmt.Sprintf("close %d", code)
			}
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				return fmt.Sprintf("close %d", ce.Code)
			}
			return "dropped"
		}
		frames, err := parseFrames(data)
		if err != nil {
			return err.Error()
		}
		for _, f := range frames {
			if first {
				if f.Type != "hello" {
					return fmt.Sprintf("first frame %q, not hello", f.Type)
				}
				first = false
				s.mu.Lock()
				s.connects++
				if resumed && !f.Recovered {
					s.notRecovered++
				}
				if s.cursor == "" || !f.Recovered {
					s.cursor = f.LastID
				}
				s.mu.Unlock()
				s.readyOnce.Do(func() { close(s.ready) })
				continue
			}
			if f.Cursor == "" {
				continue // presence, pong
			}
			s.mu.Lock()
			s.cursor = f.Cursor
			if f.Type == "message" && f.Message != nil {
				s.got = append(s.got, *f.Message)
			}
			s.mu.Unlock()
		}
	}
}

// lastID is the id of the last message received (0: none).
func (s *subscriber) lastID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.got) == 0 {
		return 0
	}
	return s.got[len(s.got)-1].ID
}

// report is what the subscriber saw, for the verdict.
func (s *subscriber) report() subscriberReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	return subscriberReport{
		channel:      s.channel,
		got:          append([]message(nil), s.got...),
		reconnects:   max(s.connects-1, 0),
		notRecovered: s.notRecovered,
		drops:        append([]string(nil), s.drops...),
		dialErrors:   s.dialErrors,
		lastDialErr:  s.lastDialErr,
	}
}
