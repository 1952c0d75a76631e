package memory

import (
	"context"
	"sort"
)

// Channels returns every claimed channel (chat.Store.ClaimChannel's set):
// what a platform-wide webhook follows (webhooks.Source).
func (s *Store) Channels(context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.claimed))
	for name := range s.claimed {
		out = append(out, name)
	}
	sort.Strings(out)
	return out, nil
}
