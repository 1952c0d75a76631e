package memory

import (
	"context"
	"errors"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// ReadForSend implements chat.Store: what a send reads, under one lock.
func (s *Store) ReadForSend(_ context.Context, r chat.SendReads) chat.SendState {
	s.mu.Lock()
	defer s.mu.Unlock()
	var st chat.SendState
	if r.User != "" {
		u, ok := s.users[r.User]
		if ok {
			st.User = u
		} else {
			st.UserErr = chat.NotFound("user")
		}
	}
	st.Filters = s.filterList("")
	st.ChannelFilters = []chat.Filter{}
	if r.In != "" {
		st.ChannelFilters = s.filterList(r.In)
	}
	if r.Member != "" {
		st.Standing = s.standings[r.In][r.Member]
	}
	if r.Channel != "" {
		st.Channel = chat.Channel{Name: r.Channel}
		if c, ok := s.channels[r.Channel]; ok {
			st.Channel = c.settings
			_, st.Chatter = c.chatters[r.Chatter]
		}
	}
	if r.Unique.Key != "" {
		if until, ok := s.gates[r.Unique.Channel+"\x00"+r.Unique.Key]; ok && until.After(r.Now) {
			st.UniqueWait = until.Sub(r.Now)
		}
	}
	if r.CountUser != "" {
		st.SendWait, st.CountErr = s.countSend(r.CountUser, r.Limit, r.Now)
	}
	if r.Trigger != "" {
		st.Command, st.CommandErr = s.command(r.In, r.Trigger)
		if errors.Is(st.CommandErr, chat.ErrNotFound) && r.In != "" {
			st.Command, st.CommandErr = s.command("", r.Trigger)
		}
	}
	if r.Once.Key != "" {
		if rec := s.onceFor(onceKey{r.Once.Channel, r.Once.Key}); rec != nil {
			st.Once = rec.rec
		}
	}
	return st
}

// countSend counts with GCRA, as redis_rate computes it in Redis: each
// message moves the user's arrival time on by Window/Max; a message may go
// while that time is at most Window ahead. The caller holds s.mu.
func (s *Store) countSend(user string, l chat.SendLimit, now time.Time) (time.Duration, error) {
	if err := l.Validate(); err != nil || l.Off() {
		return 0, err
	}
	tat := s.sends[user]
	if tat.Before(now) {
		tat = now
	}
	emission := l.Window / time.Duration(l.Max)
	next := tat.Add(emission)
	if wait := next.Sub(now) - emission*time.Duration(l.Max); wait > 0 {
		return wait, nil
	}
	s.sends[user] = next
	// Forget users with a full burst now and then; the map holds at most
	// one entry per user anyway.
	if len(s.sends) > 10000 {
		for k, t := range s.sends {
			if !t.After(now) {
				delete(s.sends, k)
			}
		}
	}
	return 0, nil
}
