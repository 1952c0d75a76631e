package memory

import (
	"context"
	"sort"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// HoldMessage implements chat.Store.
func (s *Store) HoldMessage(_ context.Context, h chat.HeldMessage, max int, w chat.Watch, log *chat.ModEntry) (chat.HeldMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.channel(h.Channel)
	s.expireHeld(c, h.CreatedAt)
	if len(c.held) >= max {
		return chat.HeldMessage{}, chat.LimitReached(chat.QuotaHeld, max)
	}
	c.heldSeq++
	h.ID = c.heldSeq
	c.held[h.ID] = h
	s.watchRaid(c, w)
	if log != nil {
		e := *log
		e.HeldID = h.ID
		s.recordMod(e)
	}
	return h, nil
}

// expireHeld drops the held messages expired at now; the caller holds mu.
func (s *Store) expireHeld(c *channel, now time.Time) {
	for id, h := range c.held {
		if !h.ExpiresAt.After(now) {
			delete(c.held, id)
		}
	}
}

// HeldMessages implements chat.Store.
func (s *Store) HeldMessages(_ context.Context, name string, now time.Time) ([]chat.HeldMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []chat.HeldMessage{}
	c, ok := s.channels[name]
	if !ok {
		return out, nil
	}
	s.expireHeld(c, now)
	for _, h := range c.held {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// HeldMessage implements chat.Store.
func (s *Store) HeldMessage(_ context.Context, name string, id int64, now time.Time) (chat.HeldMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.channels[name]; ok {
		if h, ok := c.held[id]; ok && h.ExpiresAt.After(now) {
			return h, nil
		}
	}
	return chat.HeldMessage{}, chat.NotFound("held message")
}

// DropHeld implements chat.Store.
func (s *Store) DropHeld(_ context.Context, name string, id int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.channels[name]; ok {
		if _, ok := c.held[id]; ok {
			delete(c.held, id)
			return nil
		}
	}
	return chat.NotFound("held message")
}
