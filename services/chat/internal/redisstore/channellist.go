package redisstore

import (
	"context"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// Channels returns every claimed channel (chat.Store.ClaimChannel's set):
// what a platform-wide webhook follows (webhooks.Source).
func (s *Store) Channels(ctx context.Context) ([]string, error) {
	names, err := s.rdb.SMembers(ctx, s.prefix+"{channels}:all").Result()
	if err != nil {
		return nil, chat.Unavailable("channels", err)
	}
	return names, nil
}
