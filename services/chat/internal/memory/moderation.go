package memory

import (
	"context"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// strikes is a user's strike count in a channel and when the last came.
type strikes struct {
	n    int
	last time.Time
}

// Punish implements chat.Store.
func (s *Store) Punish(_ context.Context, p chat.Punish) (chat.Punishment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[p.User]
	if !ok {
		return chat.Punishment{}, chat.NotFound("user")
	}
	role := u.Role
	if p.InChannel {
		role = s.standings[p.Channel][p.User].Role
	}
	if role != p.IfRole {
		return chat.Punishment{}, chat.Conflict("the user's role changed meanwhile; try again")
	}
	var out chat.Punishment
	if p.Strike {
		k := onceKey{p.Channel, p.User}
		if p.InChannel {
			// A channel's own filters count strikes apart from the
			// platform-wide ones, as the Redis engine does.
			k.channel = "own:" + p.Channel
		}
		st := s.strikes[k]
		if p.Now.Sub(st.last) > chat.StrikeExpiry {
			st.n = 0
		}
		st.n++
		st.last = p.Now
		s.strikes[k] = st
		out.Strike = st.n
		out.Step = min(st.n, len(p.Ladder)) - 1
	}
	step := p.Ladder[out.Step]
	if p.InChannel {
		st := s.standings[p.Channel][p.User]
		switch step.Penalty.Kind {
		case chat.PenaltyTimeout:
			st.TimedOutUntil, st.ModReason = step.Until, step.Reason
		case chat.PenaltyBan:
			st.Banned, st.TimedOutUntil, st.ModReason = true, nil, step.Reason
		}
		s.putStanding(p.Channel, p.User, st)
	} else {
		switch step.Penalty.Kind {
		case chat.PenaltyTimeout:
			u.TimedOutUntil, u.ModReason = step.Until, step.Reason
		case chat.PenaltyBan:
			u.Banned, u.TimedOutUntil, u.ModReason = true, nil, step.Reason
		}
		s.users[u.ID] = u
	}
	if step.Event != nil {
		s.append(s.channel(step.Event.Channel), *step.Event)
	}
	s.recordModp(step.Log)
	if step.Penalty.Kind == chat.PenaltyBan && !p.InChannel {
		s.revoke(chat.Notice{Revoke: chat.RevokeBanned, User: u.ID})
	}
	out.User = u
	return out, nil
}

// watchRaid counts w's first-time chatter and turns shield mode on when
// the count reaches the threshold (chat.Raid); the caller holds mu.
func (s *Store) watchRaid(c *channel, w chat.Watch) {
	r := w.Raid
	if r == nil || w.Chatter == "" {
		return
	}
	since := r.Now.Add(-chat.AutoShieldWindow)
	for u, at := range c.raid {
		if !at.After(since) {
			delete(c.raid, u)
		}
	}
	c.raid[w.Chatter] = r.Now
	if len(c.raid) >= r.Threshold {
		s.tripShield(c, *r)
	}
}

// tripShield turns the automatic shield on (or keeps it on) until
// r.Now+r.Quiet unless a moderator holds the watch off, announcing it
// when it was not on already; the caller holds mu.
func (s *Store) tripShield(c *channel, r chat.Raid) {
	if c.shieldOff.After(r.Now) {
		return
	}
	was := c.settings.ShieldUntil
	until := r.Now.Add(r.Quiet)
	c.settings.ShieldUntil = &until
	if was == nil || !was.After(r.Now) {
		s.append(c, r.Event)
		s.recordMod(r.Log)
	}
}

// CountBlocked implements chat.Store: the times of the refused messages
// of the last window, at most the threshold's newest.
func (s *Store) CountBlocked(_ context.Context, name string, r chat.Raid) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.channel(name)
	since := r.Now.Add(-chat.AutoShieldWindow)
	if c.blocked == nil {
		c.blocked = map[string]time.Time{}
	}
	for u, at := range c.blocked {
		if !at.After(since) {
			delete(c.blocked, u)
		}
	}
	c.blocked[r.Sender] = r.Now
	if len(c.blocked) >= r.Threshold {
		s.tripShield(c, r)
	}
	return nil
}

// EndShield implements chat.Store.
func (s *Store) EndShield(_ context.Context, name string, e chat.ShieldEnd) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.channels[name]
	if !ok || c.settings.ShieldUntil == nil {
		return time.Time{}, nil
	}
	if until := *c.settings.ShieldUntil; until.After(e.Now) {
		return until, nil
	}
	c.settings.ShieldUntil = nil
	if !c.settings.Shield {
		s.append(c, e.Event)
		s.recordMod(e.Log)
	}
	return time.Time{}, nil
}

// SwitchShield implements chat.Store.
func (s *Store) SwitchShield(_ context.Context, name string, sw chat.ShieldSwitch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.channel(name)
	c.settings.Shield = sw.On
	if !sw.On {
		c.settings.ShieldUntil = nil
		c.shieldOff = sw.HoldOff
		clear(c.raid)
		clear(c.blocked)
	}
	s.append(c, sw.Event)
	s.recordMod(sw.Log)
	return nil
}
