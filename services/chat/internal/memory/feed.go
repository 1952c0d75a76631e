package memory

import (
	"context"
	"errors"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// memFeed is one subscriber of the store's appends. Its fields are guarded
// by the store's mutex, which also orders the notices of a channel.
type memFeed struct {
	s       *Store
	fn      func(chat.Notice)
	watched map[string]int
}

// Subscribe implements chat.FeedSource: fn is called under the store's lock
// for every event appended to a watched channel, in the channel's order.
func (s *Store) Subscribe(fn func(chat.Notice)) (chat.Feed, error) {
	if fn == nil {
		return nil, errors.New("memory: a notice handler is required")
	}
	f := &memFeed{s: s, fn: fn, watched: map[string]int{}}
	s.mu.Lock()
	s.feeds[f] = struct{}{}
	s.mu.Unlock()
	return f, nil
}

// Watch implements chat.Feed. The watch is active at once; the notice
// without an event follows in the same call.
func (f *memFeed) Watch(_ context.Context, channel string) error {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	if _, ok := f.s.feeds[f]; !ok {
		return errors.New("memory: feed closed")
	}
	f.watched[channel]++
	f.fn(chat.Notice{Channel: channel})
	return nil
}

// Unwatch implements chat.Feed.
func (f *memFeed) Unwatch(_ context.Context, channel string) error {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	if f.watched[channel]--; f.watched[channel] <= 0 {
		delete(f.watched, channel)
	}
	return nil
}

// Close implements chat.Feed.
func (f *memFeed) Close() error {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	delete(f.s.feeds, f)
	return nil
}

// revoke tells every feed to close a user's sockets (caller holds mu).
func (s *Store) revoke(n chat.Notice) {
	for f := range s.feeds {
		f.fn(n)
	}
}
