package memory

import (
	"context"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// ClaimChannel implements chat.Store.
func (s *Store) ClaimChannel(_ context.Context, name string, max int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.claimed[name]; ok {
		return nil
	}
	if max > 0 && len(s.claimed) >= max {
		return chat.LimitReached(chat.QuotaChannels, max)
	}
	s.claimed[name] = struct{}{}
	delete(s.open, name)
	return nil
}

// ClaimOpenChannel implements chat.Store.
func (s *Store) ClaimOpenChannel(_ context.Context, name string, c chat.OpenClaim) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.claimed[name]; ok {
		return nil
	}
	if _, ok := s.open[name]; ok {
		s.open[name] = c.Now
		return nil
	}
	if !c.Create {
		return chat.NotFound("channel " + name)
	}
	if c.Max > 0 && len(s.open) >= c.Max {
		for n, at := range s.open {
			if c.Now.Sub(at) > c.Idle {
				delete(s.open, n)
			}
		}
		if len(s.open) >= c.Max {
			return chat.LimitReached(chat.QuotaOpenChannels, c.Max)
		}
	}
	s.open[name] = c.Now
	return nil
}

// Channel implements chat.Store.
func (s *Store) Channel(_ context.Context, name string) (chat.Channel, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.channels[name]; ok {
		return c.settings, nil
	}
	return chat.Channel{Name: name}, nil
}

// SaveChannel implements chat.Store.
func (s *Store) SaveChannel(_ context.Context, c chat.Channel) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.channel(c.Name)
	c.Shield, c.ShieldUntil = ch.settings.Shield, ch.settings.ShieldUntil
	ch.settings = c
	return nil
}
