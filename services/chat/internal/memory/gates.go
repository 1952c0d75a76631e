package memory

import (
	"context"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// Acquire implements chat.Store.
func (s *Store) Acquire(_ context.Context, now time.Time, gates ...chat.Gate) (time.Duration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.passGates(now, gates), nil
}

// passGates passes every gate or none (Acquire); the caller holds s.mu.
func (s *Store) passGates(now time.Time, gates []chat.Gate) time.Duration {
	var wait time.Duration
	for _, g := range gates {
		if until, ok := s.gates[g.Channel+"\x00"+g.Key]; ok {
			wait = max(wait, until.Sub(now))
		}
	}
	if wait > 0 {
		return wait
	}
	for _, g := range gates {
		s.gates[g.Channel+"\x00"+g.Key] = now.Add(g.For)
	}
	// Forget expired gates now and then so the map does not grow forever.
	if len(s.gates) > 10000 {
		for k, until := range s.gates {
			if !until.After(now) {
				delete(s.gates, k)
			}
		}
	}
	return 0
}
