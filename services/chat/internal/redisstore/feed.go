package redisstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/services/chat/internal/realtime/feed"
)

var _ feed.Source = (*Store)(nil)

// Feed timing: the feed pings its connection every feedPing and gives it
// up when nothing (not even the pong) came for feedSilence, so a peer that
// vanished without closing is noticed in seconds, not at the next TCP
// timeout.
const (
	feedPing    = 5 * time.Second
	feedSilence = 15 * time.Second
	feedBatch   = 500 // channels per SUBSCRIBE when (re)subscribing
)

// Subscribe implements feed.Source. Every script that appends to a
// channel's stream also PUBLISHes the entry on the channel's "live" key
// (see liveNotice). The feed holds one Pub/Sub connection, whatever the
// number of channels, subscribed to the live keys of the channels it
// watches; Redis sends nothing for the others. After any failure it
// reconnects, resubscribes everything and, through the confirmations,
// makes every watched channel read its stream: nothing appended while
// the connection was down is skipped.
func (s *Store) Subscribe(fn func(feed.Notice)) (feed.Feed, error) {
	if fn == nil {
		return nil, fmt.Errorf("redisstore: a notice handler is required")
	}
	f := &redisFeed{s: s, fn: fn, watched: map[string]int{}}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.run()
	}()
	if s.cluster {
		// Moderation events whose append failed after their user change
		// (see pending.go): every replica drains them, idempotently.
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			s.drainLoop(f.ctx)
		}()
	}
	return f, nil
}

type redisFeed struct {
	s      *Store
	fn     func(feed.Notice)
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // run and, on a cluster, the pending drain

	mu      sync.Mutex
	ps      *redis.PubSub // the live connection; nil while reconnecting
	watched map[string]int
	lastErr error
}

// Watch implements feed.Feed. The SUBSCRIBE is written at once; its
// confirmation produces the notice without an event.
func (f *redisFeed) Watch(ctx context.Context, channel string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ctx.Err() != nil {
		return fmt.Errorf("redisstore: feed closed")
	}
	f.watched[channel]++
	if f.watched[channel] == 1 && f.ps != nil {
		// A failed write breaks the connection: run reconnects and
		// subscribes every watched channel again, this one included.
		_ = f.ps.Subscribe(ctx, f.s.ck(channel, "live"))
	}
	return nil
}

// Unwatch implements feed.Feed.
func (f *redisFeed) Unwatch(ctx context.Context, channel string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.watched[channel] - 1
	if n > 0 {
		f.watched[channel] = n
		return nil
	}
	delete(f.watched, channel)
	if f.ps != nil {
		_ = f.ps.Unsubscribe(ctx, f.s.ck(channel, "live"))
	}
	return nil
}

// Close implements feed.Feed.
func (f *redisFeed) Close() error {
	f.cancel()
	// A blocked receive does not watch its context: closing the
	// connection ends it.
	f.mu.Lock()
	if f.ps != nil {
		_ = f.ps.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
	return nil
}

// Err is the last connection error the feed recovered from (nil if none).
func (f *redisFeed) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastErr
}

func (f *redisFeed) run() {
	backoff := 100 * time.Millisecond
	for f.ctx.Err() == nil {
		ps := f.s.rdb.Subscribe(f.ctx)
		f.mu.Lock()
		f.ps = ps
		keys := make([]string, 0, len(f.watched)+1)
		keys = append(keys, f.s.revokedKey())
		for ch := range f.watched {
			keys = append(keys, f.s.ck(ch, "live"))
		}
		// Under the lock, so an Unwatch cannot slip between reading the
		// list and subscribing it.
		var err error
		for len(keys) > 0 && err == nil {
			n := min(feedBatch, len(keys))
			err = ps.Subscribe(f.ctx, keys[:n]...)
			keys = keys[n:]
		}
		f.mu.Unlock()
		received := false
		if err == nil {
			received, err = f.receive(ps)
		}
		f.mu.Lock()
		f.ps = nil
		f.lastErr = err
		f.mu.Unlock()
		_ = ps.Close()
		if received {
			backoff = 100 * time.Millisecond
		}
		select {
		case <-f.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// receive hands every notice to fn until the connection fails. It reports
// whether anything came (the connection worked).
func (f *redisFeed) receive(ps *redis.PubSub) (bool, error) {
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(feedPing)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				_ = ps.Ping(f.ctx)
			}
		}
	}()
	received := false
	for {
		msg, err := ps.ReceiveTimeout(f.ctx, feedSilence)
		if err != nil {
			return received, err
		}
		received = true
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind != "subscribe" {
				continue
			}
			if m.Channel == f.s.revokedKey() {
				// Revocations published while this connection was not
				// listening are lost: have every open socket's user checked.
				f.fn(feed.Notice{Revoke: feed.Recheck})
			} else if ch, ok := f.s.liveChannel(m.Channel); ok {
				f.fn(feed.Notice{Channel: ch})
			}
		case *redis.Message:
			if m.Channel == f.s.revokedKey() {
				reason, id, ok := strings.Cut(m.Payload, " ")
				if ok && (reason == feed.Deleted || reason == feed.Banned) {
					f.fn(feed.Notice{Revoke: reason, User: id})
				}
				continue
			}
			ch, ok := f.s.liveChannel(m.Channel)
			if !ok {
				continue
			}
			n, err := parseNotice(ch, m.Payload)
			if err != nil {
				n = feed.Notice{Channel: ch} // unreadable: read the stream instead
			}
			f.fn(n)
		}
	}
}

// liveChannel is the chat channel of a live key, "<prefix>{ch:<name>}:live".
func (s *Store) liveChannel(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, s.prefix+"{ch:")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "}:live")
}

// parseNotice reads "<previous entry id> <entry id> <event json>".
func parseNotice(channel, payload string) (feed.Notice, error) {
	prevID, rest, ok1 := strings.Cut(payload, " ")
	id, data, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 {
		return feed.Notice{}, fmt.Errorf("live notice %q", payload)
	}
	prev, err := parseEntryID(prevID)
	if err != nil {
		return feed.Notice{}, err
	}
	ev, err := decode(channel, redis.XMessage{ID: id, Values: map[string]any{"d": data}})
	if err != nil {
		return feed.Notice{}, err
	}
	return feed.Notice{Channel: channel, Prev: prev, Event: &ev}, nil
}
