package chat

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Moderation limits (Twitch's).
const (
	MaxTimeoutSeconds = 1209600 // 14 days
	maxReasonRunes    = 500
)

// TimeoutInput times a user out.
type TimeoutInput struct {
	Seconds int    `json:"seconds"`
	Reason  string `json:"reason,omitempty"`
	// Channel, when set, is the one channel the timeout holds in (checked
	// with the roles held there) and where it is announced. Without it the
	// timeout holds platform-wide, needs a platform-wide role, and is
	// announced in general.
	Channel string `json:"channel,omitempty"`
}

// BanInput bans a user; Channel as in TimeoutInput.
type BanInput struct {
	Reason  string `json:"reason,omitempty"`
	Channel string `json:"channel,omitempty"`
}

// validateReason checks the reason of a timeout or ban, which every reader
// of the channel is sent: at most maxReasonRunes, and the control
// characters a message may not hold (controlProblem).
func validateReason(reason string) error {
	if p := reasonProblem(reason); p != "" {
		return Invalid("reason", p)
	}
	return nil
}

func reasonProblem(reason string) string {
	if runeLen(reason) > maxReasonRunes {
		return fmt.Sprintf("at most %d characters", maxReasonRunes)
	}
	return controlProblem(reason)
}

// moderation is what Timeout, Ban and Unban share: the actor and the
// target as seen where the action holds (one channel, or the platform),
// the actor's right to act on the target there, and the channel the event
// is announced in.
type moderation struct {
	actor, target Member
	announce      string
}

// input, when not nil, checks the request's input once the actor may act.
func (s *Service) moderate(ctx context.Context, actor User, id, channel string, a Action, input func() error) (moderation, error) {
	am, err := s.actorIn(ctx, actor, channel, a)
	if err != nil {
		return moderation{}, err
	}
	if input != nil {
		if err := input(); err != nil {
			return moderation{}, err
		}
	}
	t, err := s.loadTarget(ctx, id)
	if err != nil {
		return moderation{}, err
	}
	where := am.Channel
	tm, err := s.Member(ctx, t, where)
	if err != nil {
		return moderation{}, err
	}
	if err := s.requireOnIn(am, a, tm); err != nil {
		return moderation{}, err
	}
	announce := where
	if announce == "" {
		announce = DefaultChannel
	}
	return moderation{actor: am, target: tm, announce: announce}, nil
}

// banned reports whether the ban the action is about is in place.
func (m moderation) banned() bool {
	if m.target.Channel != "" {
		return m.target.Standing.Banned
	}
	return m.target.User.Banned
}

// event is the moderation event of typ, scoped as the action is.
func (m moderation) event(typ EventType, reason string, until *time.Time, at time.Time) *Event {
	mod := &Moderation{User: m.target.Ref(), By: m.actor.Ref(), Reason: reason, Until: until, At: at}
	if m.target.Channel != "" {
		mod.Scope = ScopeChannel
	}
	return &Event{Type: typ, Channel: m.announce, Moderation: mod}
}

// log is the moderation log entry of action a, in the announcing channel.
func (m moderation) log(a ModAction, reason string, at time.Time) ModEntry {
	return modEntry(m.announce, a, m.actor.Ref(), refp(m.target.Ref()), reason, at)
}

// apply stores the change: in the channel's standing, or on the user.
//
// log is recorded in the announcing channel's moderation log in the same
// step.
func (s *Service) applyModeration(ctx context.Context, m moderation, p UserPatch, ev *Event, log ModEntry) (Member, error) {
	t := m.target
	if t.Channel != "" {
		st := t.Standing
		if p.Banned != nil {
			st.Banned = *p.Banned
		}
		if p.TimedOutUntil != nil {
			st.TimedOutUntil = *p.TimedOutUntil
		}
		if p.ModReason != nil {
			st.ModReason = *p.ModReason
		}
		if err := s.store.SetModeration(ctx, t.Channel, t.User.ID, st, ev, &log); err != nil {
			return Member{}, err
		}
		t.Standing = st
		return t, nil
	}
	u, err := s.store.UpdateUser(ctx, t.User.ID, t.User.Role, p, ev, &log)
	if err != nil {
		return Member{}, err
	}
	return Member{User: u}, nil
}

// Timeout stops a user from sending for 1..1209600 seconds (moderators,
// on lower roles), in one channel or platform-wide (TimeoutInput). A
// banned user must be unbanned first (Conflict).
func (s *Service) Timeout(ctx context.Context, actor User, id string, in TimeoutInput) (Member, error) {
	var v validation
	if in.Seconds < 1 || in.Seconds > MaxTimeoutSeconds {
		v.add("seconds", "must be 1..%d", MaxTimeoutSeconds)
	}
	if p := reasonProblem(in.Reason); p != "" {
		v.add("reason", "%s", p)
	}
	m, err := s.moderate(ctx, actor, id, in.Channel, ActionTimeoutUsers, v.err)
	if err != nil {
		return Member{}, err
	}
	if m.banned() {
		return Member{}, Conflict("user is banned; unban before a timeout")
	}
	if err := s.claimChannel(ctx, m.announce); err != nil {
		return Member{}, err
	}
	now := s.clock()
	until := now.Add(time.Duration(in.Seconds) * time.Second)
	untilp := &until
	reason := strings.TrimSpace(in.Reason)
	ev := m.event(EventUserTimedOut, reason, untilp, now)
	log := m.log(ModTimeout, reason, now)
	log.Until = untilp
	out, err := s.applyModeration(ctx, m, UserPatch{TimedOutUntil: &untilp, ModReason: &reason}, ev, log)
	if err != nil {
		return Member{}, fmt.Errorf("timeout %s: %w", id, err)
	}
	return out, nil
}

// Ban stops a user from sending until unbanned (moderators, on lower
// roles), in one channel or platform-wide (BanInput). A ban in a channel
// also closes the user's sockets on that channel.
func (s *Service) Ban(ctx context.Context, actor User, id string, in BanInput) (Member, error) {
	m, err := s.moderate(ctx, actor, id, in.Channel, ActionBanUsers, func() error { return validateReason(in.Reason) })
	if err != nil {
		return Member{}, err
	}
	if m.banned() {
		return Member{}, Conflict("user is already banned")
	}
	if err := s.claimChannel(ctx, m.announce); err != nil {
		return Member{}, err
	}
	reason := strings.TrimSpace(in.Reason)
	banned := true
	var none *time.Time
	now := s.clock()
	ev := m.event(EventUserBanned, reason, nil, now)
	out, err := s.applyModeration(ctx, m, UserPatch{Banned: &banned, TimedOutUntil: &none, ModReason: &reason}, ev, m.log(ModBan, reason, now))
	if err != nil {
		return Member{}, fmt.Errorf("ban %s: %w", id, err)
	}
	return out, nil
}

// Unban lifts a ban and any timeout, in one channel (channel set) or
// platform-wide; unbanning someone in good standing changes nothing and
// succeeds.
func (s *Service) Unban(ctx context.Context, actor User, id, channel string) (Member, error) {
	m, err := s.moderate(ctx, actor, id, channel, ActionBanUsers, nil)
	if err != nil {
		return Member{}, err
	}
	if m.target.Channel != "" && !m.target.Standing.moderated() {
		return m.target, nil
	}
	banned := false
	var none *time.Time
	empty := ""
	out, err := s.applyModeration(ctx, m, UserPatch{Banned: &banned, TimedOutUntil: &none, ModReason: &empty}, nil, m.log(ModUnban, "", s.clock()))
	if err != nil {
		return Member{}, fmt.Errorf("unban %s: %w", id, err)
	}
	return out, nil
}

// checkModeration refuses members banned or timed out platform-wide or in
// their channel, saying until when (the later of the two timeouts).
func (s *Service) checkModeration(m Member, now time.Time) error {
	u, st := m.User, m.Standing
	if u.Banned {
		return &Error{Kind: KindForbidden, Reason: "banned", Message: "you are banned from this chat"}
	}
	if st.Banned {
		return &Error{Kind: KindForbidden, Reason: "banned", Message: "you are banned from channel " + m.Channel}
	}
	until := u.TimedOutUntil
	if st.TimedOutUntil != nil && (until == nil || st.TimedOutUntil.After(*until)) {
		until = st.TimedOutUntil
	}
	if until != nil && until.After(now) {
		return &Error{Kind: KindForbidden, Reason: "timed_out", Until: *until,
			Message: "you are timed out until " + until.UTC().Format(time.RFC3339)}
	}
	return nil
}
