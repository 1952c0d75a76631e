package chat

import (
	"context"
	"fmt"
	"time"
)

// AutomodUser is who a filter's or the raid watch's action is by, in
// events and moderation records.
var AutomodUser = UserRef{ID: "automod", Name: "automod", Role: RoleModerator}

// PenaltyKind is what a step of a strike ladder does to the sender.
type PenaltyKind string

// Penalties.
const (
	PenaltyWarn    PenaltyKind = "warn"    // the message is refused, nothing more
	PenaltyTimeout PenaltyKind = "timeout" // timed out for Seconds
	PenaltyBan     PenaltyKind = "ban"     // banned until a moderator unbans
)

// Penalty is one consequence of a filter hit.
type Penalty struct {
	Kind    PenaltyKind `json:"penalty"`
	Seconds int         `json:"timeout_seconds,omitempty"`
}

// StrikeLadder is the channel's ladder for `strike` filters: the n-th
// strike within StrikeExpiry of the one before takes step n, the last step
// once past the end (Nightbot's escalation).
var StrikeLadder = []Penalty{
	{Kind: PenaltyWarn},
	{Kind: PenaltyTimeout, Seconds: 60},
	{Kind: PenaltyTimeout, Seconds: 600},
	{Kind: PenaltyBan},
}

// StrikeExpiry is how long a user's strikes in a channel are remembered
// after the last one: a day without a strike starts the ladder again.
const StrikeExpiry = 24 * time.Hour

// DefaultFilterTimeoutSeconds is the timeout of a `timeout` filter that
// names none (Twitch's default timeout).
const DefaultFilterTimeoutSeconds = 600

// Punish is a filter hit's consequence for its sender, which an engine
// applies in one step (Store.Punish): with Strike the hit is counted in
// Channel, and the step of Ladder the count reaches is applied; without,
// Ladder's first step. The user is changed only if it still holds IfRole.
// InChannel (a channel's own filter) makes the ban or timeout the user's
// standing in Channel, not the platform-wide record; IfRole is then the
// role given in Channel ("" for none).
type Punish struct {
	Channel   string
	User      string
	IfRole    Role
	InChannel bool
	Strike    bool
	Ladder    []PunishStep
	// Now is the Service clock: strikes older than StrikeExpiry are gone.
	Now time.Time
}

// PunishStep is one step with what it writes: the end of a timeout, the
// reason stored on the user, and the event the channel is told (nil for
// a warning).
type PunishStep struct {
	Penalty Penalty
	Until   *time.Time
	Reason  string
	Event   *Event
	// Log is the filter hit's moderation log entry, recorded in
	// Punish.Channel's log with the step (see Store.Punish).
	Log *ModEntry
}

// Punishment is what Punish did.
type Punishment struct {
	// Strike is the user's strike count in the channel (0 without Strike).
	Strike int
	// Step is the index of the step applied.
	Step int
	User User
}

// Consequence is what a refused message did to its sender: the body of a
// 422 (apierr's "consequence") says it, so a client can show it.
type Consequence struct {
	// Action is the filter's action: block, timeout, ban or strike.
	Action FilterAction `json:"action"`
	// Penalty is what happened to the sender: warn (nothing but the
	// refusal), timeout or ban; empty for block.
	Penalty PenaltyKind `json:"penalty,omitempty"`
	// Until is the end of a timeout.
	Until *time.Time `json:"until,omitempty"`
	// Strike is the sender's strike count in the channel (strike only).
	Strike int `json:"strike,omitempty"`
	// StrikesExpireAt is when the count starts again (strike only).
	StrikesExpireAt *time.Time `json:"strikes_expire_at,omitempty"`
}

// refuse turns a filter hit into the sender's answer, applying its action
// first: block refuses; timeout, ban and strike refuse and change the
// user in one step of the store (Punish), so a refusal reported is a
// consequence applied. The answer is KindBlocked (422) with the
// consequence. The action holds in the filter's scope: a platform-wide
// filter's ban or timeout is platform-wide, a channel's own filter's holds
// in that channel only (the member's standing there).
func (s *Service) refuse(ctx context.Context, m Member, f *Filter, now time.Time) error {
	u, channel := m.User, m.Channel
	blocked := &Error{Kind: KindBlocked, Reason: string(f.Kind), Consequence: &Consequence{Action: f.Action},
		Message: fmt.Sprintf("message blocked by a %s filter (%s)", f.Kind, f.ID)}
	p := Punish{Channel: channel, User: u.ID, IfRole: u.Role, Now: now}
	if f.Channel != "" {
		p.InChannel, p.IfRole = true, m.Standing.Role
	}
	reason := fmt.Sprintf("automod: %s filter %s", f.Kind, f.ID)
	switch f.Action {
	case ActionBlock:
		s.logModeration(ctx, filterHit(m, f, PunishStep{Reason: reason}, now))
		return blocked
	case ActionTimeout:
		p.Ladder = []PunishStep{s.punishStep(m, p.InChannel, Penalty{Kind: PenaltyTimeout, Seconds: f.TimeoutSeconds}, reason, now)}
	case ActionBan:
		p.Ladder = []PunishStep{s.punishStep(m, p.InChannel, Penalty{Kind: PenaltyBan}, reason, now)}
	case ActionStrike:
		p.Strike = true
		for _, pen := range StrikeLadder {
			p.Ladder = append(p.Ladder, s.punishStep(m, p.InChannel, pen, reason, now))
		}
	default:
		return fmt.Errorf("filter %s: action %q refuses nothing", f.ID, f.Action)
	}
	for i := range p.Ladder {
		e := filterHit(m, f, p.Ladder[i], now)
		p.Ladder[i].Log = &e
	}
	if err := s.claimFor(ctx, m, channel, now); err != nil {
		return err
	}
	done, err := s.store.Punish(ctx, p)
	if err != nil {
		return fmt.Errorf("send: %s filter %s: %w", f.Action, f.ID, err)
	}
	step := p.Ladder[done.Step]
	c := blocked.Consequence
	c.Penalty, c.Until = step.Penalty.Kind, step.Until
	if p.Strike {
		c.Strike = done.Strike
		exp := now.Add(StrikeExpiry)
		c.StrikesExpireAt = &exp
		blocked.Message += fmt.Sprintf("; strike %d: %s", done.Strike, step.Penalty.Kind)
	} else {
		blocked.Message += "; " + string(step.Penalty.Kind)
	}
	if step.Until != nil {
		blocked.Message += " until " + step.Until.UTC().Format(time.RFC3339)
	}
	return blocked
}

// punishStep builds a step and its event for m in its channel; inChannel
// marks the event as a channel ban or timeout.
func (s *Service) punishStep(m Member, inChannel bool, p Penalty, reason string, now time.Time) PunishStep {
	channel := m.Channel
	st := PunishStep{Penalty: p, Reason: reason}
	switch p.Kind {
	case PenaltyTimeout:
		until := now.Add(time.Duration(p.Seconds) * time.Second)
		st.Until = &until
		st.Event = &Event{Type: EventUserTimedOut, Channel: channel,
			Moderation: &Moderation{User: m.Ref(), By: AutomodUser, Reason: reason, Until: &until, At: now}}
	case PenaltyBan:
		st.Event = &Event{Type: EventUserBanned, Channel: channel,
			Moderation: &Moderation{User: m.Ref(), By: AutomodUser, Reason: reason, At: now}}
	}
	if st.Event != nil && inChannel {
		st.Event.Moderation.Scope = ScopeChannel
	}
	return st
}

// filterHit is the moderation log entry of f's hit on m's message, with
// what step did to m.
func filterHit(m Member, f *Filter, step PunishStep, now time.Time) ModEntry {
	e := modEntry(m.Channel, ModFilterHit, AutomodUser, refp(m.Ref()), step.Reason, now)
	e.Rule, e.FilterAction, e.Penalty, e.Until = f.ID, f.Action, step.Penalty.Kind, step.Until
	return e
}
