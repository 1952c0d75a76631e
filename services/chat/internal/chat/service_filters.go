package chat

import (
	"context"
	"fmt"
	"sort"
)

// Filters lists filters in the order they run (moderators: the list
// reveals the blocked terms).
func (s *Service) Filters(ctx context.Context, actor User) ([]Filter, error) {
	if err := s.require(actor, ActionManageFilters); err != nil {
		return nil, err
	}
	fs, err := s.sortedFilters(ctx)
	if err != nil {
		return nil, fmt.Errorf("list filters: %w", err)
	}
	return fs, nil
}

// CreateFilter validates, compiles and stores a filter (moderators).
func (s *Service) CreateFilter(ctx context.Context, actor User, in FilterInput) (Filter, error) {
	if err := s.require(actor, ActionManageFilters); err != nil {
		return Filter{}, err
	}
	f, _, err := newFilter(in, s.clock())
	if err != nil {
		return Filter{}, err
	}
	f, err = s.store.CreateFilter(ctx, f, s.limits)
	if err != nil {
		return Filter{}, fmt.Errorf("create filter: %w", err)
	}
	return f, nil
}

// DeleteFilter removes a filter (moderators).
func (s *Service) DeleteFilter(ctx context.Context, actor User, id string) error {
	if err := s.require(actor, ActionManageFilters); err != nil {
		return err
	}
	if err := s.store.DeleteFilter(ctx, id); err != nil {
		return fmt.Errorf("delete filter %s: %w", id, err)
	}
	return nil
}

func (s *Service) sortedFilters(ctx context.Context) ([]Filter, error) {
	fs, err := s.store.Filters(ctx)
	if err != nil {
		return nil, err
	}
	sortFilters(fs)
	return fs, nil
}

// sortFilters puts filters in the order they run: oldest first.
func sortFilters(fs []Filter) {
	sort.Slice(fs, func(i, j int) bool {
		if !fs[i].CreatedAt.Equal(fs[j].CreatedAt) {
			return fs[i].CreatedAt.Before(fs[j].CreatedAt)
		}
		if len(fs[i].ID) != len(fs[j].ID) {
			return len(fs[i].ID) < len(fs[j].ID)
		}
		return fs[i].ID < fs[j].ID
	})
}

// compiledFilters returns fs, the filters as the store holds them now, ready
// to run. Filters live in the store (so every replica applies the same ones,
// and a filter added on one replica holds on the next send on any other:
// Send reads them on every send, in the same round trip as its other
// reads) but each is compiled once per process: the cache is keyed by
// everything that shapes a matcher.
func (s *Service) compiledFilters(ctx context.Context, fs []Filter) []*compiledFilter {
	sortFilters(fs)
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[string]*compiledFilter, len(fs))
	out := make([]*compiledFilter, 0, len(fs))
	for _, f := range fs {
		key := fmt.Sprintf("%s|%s|%s|%s|%s|%d|%d", f.ID, f.Kind, f.Action, f.MinRole, f.Pattern, f.Threshold, f.MinLength)
		c, ok := s.filters[key]
		if !ok {
			var err error
			c, err = compileFilter(f)
			if err != nil {
				// Stored filters were valid when created; one that no longer
				// compiles (an older version's syntax) is skipped, not fatal.
				s.log.WarnContext(ctx, "skipping filter that does not compile", "filter", f.ID, "err", err)
				continue
			}
		}
		next[key] = c
		out = append(out, c)
	}
	s.filters = next
	return out
}
