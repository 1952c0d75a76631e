package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// CreateFilter implements chat.Store.
func (s *Store) CreateFilter(ctx context.Context, f chat.Filter, lim chat.Limits) (chat.Filter, error) {
	f.ID = ""
	scope := f.Channel
	f.Channel = "" // the key says it
	data, err := json.Marshal(f)
	if err != nil {
		return chat.Filter{}, fmt.Errorf("encode filter: %w", err)
	}
	id, err := createFilter.Run(ctx, s.rdb, []string{s.fk(scope, "all"), s.fk(scope, "seq")}, data, lim.Filters, lim.RegexFilters, string(f.Kind)).Text()
	switch {
	case err == nil:
	case strings.HasPrefix(err.Error(), "LIMIT filters"):
		return chat.Filter{}, chat.LimitReached(chat.QuotaFilters, lim.Filters)
	case strings.HasPrefix(err.Error(), "LIMIT regex"):
		return chat.Filter{}, chat.LimitReached(chat.QuotaRegexFilters, lim.RegexFilters)
	default:
		return chat.Filter{}, failWrite("create filter", err)
	}
	f.ID, f.Channel = id, scope
	return f, nil
}

// Filters implements chat.Store.
func (s *Store) Filters(ctx context.Context, scope string) ([]chat.Filter, error) {
	m, err := s.rdb.HGetAll(ctx, s.fk(scope, "all")).Result()
	if err != nil {
		return nil, fail("list filters", err)
	}
	return decodeFilters(scope, m)
}

// decodeFilters reads the filters of scope; the scope is the key's, not
// stored in each filter.
func decodeFilters(scope string, m map[string]string) ([]chat.Filter, error) {
	out := make([]chat.Filter, 0, len(m))
	for id, data := range m {
		var f chat.Filter
		if err := json.Unmarshal([]byte(data), &f); err != nil {
			return nil, fmt.Errorf("decode filter %s: %w", id, err)
		}
		f.ID, f.Channel = id, scope
		out = append(out, f)
	}
	return out, nil
}

// DeleteFilter implements chat.Store.
func (s *Store) DeleteFilter(ctx context.Context, scope, id string) error {
	n, err := s.rdb.HDel(ctx, s.fk(scope, "all"), id).Result()
	if err != nil {
		return failWrite("delete filter", err)
	}
	if n == 0 {
		return chat.NotFound("filter")
	}
	return nil
}
