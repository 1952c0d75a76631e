package memory

import (
	"context"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// Standing implements chat.Store.
func (s *Store) Standing(_ context.Context, channel, id string) (chat.Standing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.standings[channel][id], nil
}

// ChannelRoles implements chat.Store.
func (s *Store) ChannelRoles(_ context.Context, channel string) (map[string]chat.Role, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]chat.Role{}
	for id, st := range s.standings[channel] {
		if st.Role != "" {
			out[id] = st.Role
		}
	}
	return out, nil
}

// SetChannelRole implements chat.Store.
func (s *Store) SetChannelRole(_ context.Context, channel, id string, ifRole, role chat.Role, max int, log *chat.ModEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sts := s.standings[channel]
	st := sts[id]
	if st.Role != ifRole {
		return chat.Conflict("the user's role in the channel changed meanwhile; try again")
	}
	if role != "" && st.Role == "" && max > 0 {
		n := 0
		for _, o := range sts {
			if o.Role != "" {
				n++
			}
		}
		if n >= max {
			return chat.LimitReached(chat.QuotaChannelRoles, max)
		}
	}
	st.Role = role
	s.putStanding(channel, id, st)
	s.recordModp(log)
	return nil
}

// SetModeration implements chat.Store.
func (s *Store) SetModeration(_ context.Context, channel, id string, m chat.Standing, ev *chat.Event, log *chat.ModEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.standings[channel][id]
	st.Banned, st.TimedOutUntil, st.ModReason = m.Banned, m.TimedOutUntil, m.ModReason
	s.putStanding(channel, id, st)
	if ev != nil {
		s.append(s.channel(ev.Channel), *ev)
	}
	s.recordModp(log)
	return nil
}

// putStanding stores st, or forgets it when it is none; the caller holds
// s.mu.
func (s *Store) putStanding(channel, id string, st chat.Standing) {
	sts := s.standings[channel]
	if st == (chat.Standing{}) {
		delete(sts, id)
		return
	}
	if sts == nil {
		sts = map[string]chat.Standing{}
		s.standings[channel] = sts
	}
	sts[id] = st
}
