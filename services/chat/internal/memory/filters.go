package memory

import (
	"context"
	"strconv"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// CreateFilter implements chat.Store.
func (s *Store) CreateFilter(_ context.Context, f chat.Filter, lim chat.Limits) (chat.Filter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := s.scope(f.Channel, true)
	if lim.Filters > 0 && len(sc.filters) >= lim.Filters {
		return chat.Filter{}, chat.LimitReached(chat.QuotaFilters, lim.Filters)
	}
	if f.Kind == chat.FilterRegex && lim.RegexFilters > 0 {
		n := 0
		for _, g := range sc.filters {
			if g.Kind == chat.FilterRegex {
				n++
			}
		}
		if n >= lim.RegexFilters {
			return chat.Filter{}, chat.LimitReached(chat.QuotaRegexFilters, lim.RegexFilters)
		}
	}
	sc.filterN++
	f.ID = "f" + strconv.FormatInt(sc.filterN, 10)
	sc.filters[f.ID] = f
	return f, nil
}

// Filters implements chat.Store.
func (s *Store) Filters(_ context.Context, scope string) ([]chat.Filter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.filterList(scope), nil
}

// filterList copies the filters of a scope; the caller holds s.mu.
func (s *Store) filterList(scope string) []chat.Filter {
	sc := s.scope(scope, false)
	if sc == nil {
		return []chat.Filter{}
	}
	out := make([]chat.Filter, 0, len(sc.filters))
	for _, f := range sc.filters {
		out = append(out, f)
	}
	return out
}

// DeleteFilter implements chat.Store.
func (s *Store) DeleteFilter(_ context.Context, scope, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := s.scope(scope, false)
	if sc == nil {
		return chat.NotFound("filter")
	}
	if _, ok := sc.filters[id]; !ok {
		return chat.NotFound("filter")
	}
	delete(sc.filters, id)
	return nil
}
