package chat

import (
	"context"
	"fmt"
	"sort"
)

// A filter belongs to a channel (FilterInput.Channel) or to the platform,
// like a command. A send runs the platform-wide filters first, then its
// channel's own.

// filterScope normalises the scope a request names and checks that actor
// may manage filters there.
func (s *Service) filterScope(ctx context.Context, actor User, channel string) (string, error) {
	am, err := s.actorIn(ctx, actor, channel, ActionManageFilters)
	return am.Channel, err
}

// Filters lists the filters of a channel or of the platform in the order
// they run (moderators there: the list reveals the blocked terms).
func (s *Service) Filters(ctx context.Context, actor User, channel string) ([]Filter, error) {
	where, err := s.filterScope(ctx, actor, channel)
	if err != nil {
		return nil, err
	}
	fs, err := s.store.Filters(ctx, where)
	if err != nil {
		return nil, fmt.Errorf("list filters: %w", err)
	}
	sortFilters(fs)
	return fs, nil
}

// CreateFilter validates, compiles and stores a filter (moderators).
func (s *Service) CreateFilter(ctx context.Context, actor User, in FilterInput) (Filter, error) {
	where, err := s.filterScope(ctx, actor, in.Channel)
	if err != nil {
		return Filter{}, err
	}
	f, _, err := newFilter(in, s.clock())
	if err != nil {
		return Filter{}, err
	}
	f.Channel = where
	if err := s.claimOwner(ctx, where); err != nil {
		return Filter{}, err
	}
	f, err = s.store.CreateFilter(ctx, f, s.limits)
	if err != nil {
		return Filter{}, fmt.Errorf("create filter: %w", err)
	}
	return f, nil
}

// DeleteFilter removes a filter of a channel or of the platform
// (moderators there).
func (s *Service) DeleteFilter(ctx context.Context, actor User, channel, id string) error {
	where, err := s.filterScope(ctx, actor, channel)
	if err != nil {
		return err
	}
	if err := s.store.DeleteFilter(ctx, where, id); err != nil {
		return fmt.Errorf("delete filter %s: %w", id, err)
	}
	return nil
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

// maxCompiledFilters bounds the compiled-filter cache in filters of
// Limits.Filters: the platform's and those of the channels sent to lately.
const maxCompiledFilters = 8

// compiledFilters returns the filters a send in a channel runs, ready to
// run: the platform-wide ones (platform) first, then the channel's own
// (own), each in creation order. Filters live in the store (so every
// replica applies the same ones, and a filter added on one replica holds
// on the next send on any other: Send reads them on every send, in the
// same round trip as its other reads) but each is compiled once per
// process: the cache is keyed by everything that shapes a matcher, and
// emptied when it holds more than maxCompiledFilters times the filter
// limit (sends spread over many channels with filters of their own).
func (s *Service) compiledFilters(ctx context.Context, platform, own []Filter) []*compiledFilter {
	sortFilters(platform)
	sortFilters(own)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.filters) > maxCompiledFilters*s.limits.Filters {
		s.filters = map[string]*compiledFilter{}
	}
	out := make([]*compiledFilter, 0, len(platform)+len(own))
	for _, fs := range [][]Filter{platform, own} {
		for _, f := range fs {
			key := fmt.Sprintf("%s|%s|%s|%s|%s|%s|%d|%d", f.Channel, f.ID, f.Kind, f.Action, f.MinRole, f.Pattern, f.Threshold, f.MinLength)
			c, ok := s.filters[key]
			if !ok {
				var err error
				c, err = compileFilter(f)
				if err != nil {
					// Stored filters were valid when created; one that no longer
					// compiles (an older version's syntax) is skipped, not fatal.
					s.log.WarnContext(ctx, "skipping filter that does not compile", "filter", f.ID, "channel", f.Channel, "err", err)
					continue
				}
				s.filters[key] = c
			}
			out = append(out, c)
		}
	}
	return out
}
