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
