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
	// Channel is where the user_timed_out event is announced (default
	// general); the timeout itself holds in every channel.
	Channel string `json:"channel,omitempty"`
}

// BanInput bans a user.
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

// Timeout stops a user from sending for 1..1209600 seconds (moderators,
// on lower roles). A banned user must be unbanned first (Conflict).
func (s *Service) Timeout(ctx context.Context, actor User, id string, in TimeoutInput) (User, error) {
	if err := s.require(actor, ActionTimeoutUsers); err != nil {
		return User{}, err
	}
	var v validation
	if in.Seconds < 1 || in.Seconds > MaxTimeoutSeconds {
		v.add("seconds", "must be 1..%d", MaxTimeoutSeconds)
	}
	if p := reasonProblem(in.Reason); p != "" {
		v.add("reason", "%s", p)
	}
	if err := v.err(); err != nil {
		return User{}, err
	}
	channel, err := NormalizeChannel(in.Channel)
	if err != nil {
		return User{}, err
	}
	t, err := s.loadTarget(ctx, id)
	if err != nil {
		return User{}, err
	}
	if err := s.requireOn(actor, ActionTimeoutUsers, t); err != nil {
		return User{}, err
	}
	if t.Banned {
		return User{}, Conflict("user is banned; unban before a timeout")
	}
	if err := s.claimChannel(ctx, channel); err != nil {
		return User{}, err
	}
	now := s.clock()
	until := now.Add(time.Duration(in.Seconds) * time.Second)
	untilp := &until
	reason := strings.TrimSpace(in.Reason)
	ev := &Event{Type: EventUserTimedOut, Channel: channel,
		Moderation: &Moderation{User: t.Ref(), By: actor.Ref(), Reason: reason, Until: untilp, At: now}}
	u, err := s.store.UpdateUser(ctx, id, t.Role, UserPatch{TimedOutUntil: &untilp, ModReason: &reason}, ev)
	if err != nil {
		return User{}, fmt.Errorf("timeout %s: %w", id, err)
	}
	return u, nil
}

// Ban stops a user from sending until unbanned (moderators, on lower roles).
func (s *Service) Ban(ctx context.Context, actor User, id string, in BanInput) (User, error) {
	if err := s.require(actor, ActionBanUsers); err != nil {
		return User{}, err
	}
	if err := validateReason(in.Reason); err != nil {
		return User{}, err
	}
	channel, err := NormalizeChannel(in.Channel)
	if err != nil {
		return User{}, err
	}
	t, err := s.loadTarget(ctx, id)
	if err != nil {
		return User{}, err
	}
	if err := s.requireOn(actor, ActionBanUsers, t); err != nil {
		return User{}, err
	}
	if t.Banned {
		return User{}, Conflict("user is already banned")
	}
	if err := s.claimChannel(ctx, channel); err != nil {
		return User{}, err
	}
	reason := strings.TrimSpace(in.Reason)
	banned := true
	var none *time.Time
	ev := &Event{Type: EventUserBanned, Channel: channel,
		Moderation: &Moderation{User: t.Ref(), By: actor.Ref(), Reason: reason, At: s.clock()}}
	u, err := s.store.UpdateUser(ctx, id, t.Role, UserPatch{Banned: &banned, TimedOutUntil: &none, ModReason: &reason}, ev)
	if err != nil {
		return User{}, fmt.Errorf("ban %s: %w", id, err)
	}
	return u, nil
}

// Unban lifts a ban and any timeout; unbanning someone in good standing
// changes nothing and succeeds.
func (s *Service) Unban(ctx context.Context, actor User, id string) (User, error) {
	if err := s.require(actor, ActionBanUsers); err != nil {
		return User{}, err
	}
	t, err := s.loadTarget(ctx, id)
	if err != nil {
		return User{}, err
	}
	if err := s.requireOn(actor, ActionBanUsers, t); err != nil {
		return User{}, err
	}
	banned := false
	var none *time.Time
	empty := ""
	u, err := s.store.UpdateUser(ctx, id, t.Role, UserPatch{Banned: &banned, TimedOutUntil: &none, ModReason: &empty}, nil)
	if err != nil {
		return User{}, fmt.Errorf("unban %s: %w", id, err)
	}
	return u, nil
}

// checkModeration refuses banned and timed-out users, saying until when.
func (s *Service) checkModeration(u User, now time.Time) error {
	if u.Banned {
		return &Error{Kind: KindForbidden, Reason: "banned", Message: "you are banned from this chat"}
	}
	if u.TimedOutUntil != nil && u.TimedOutUntil.After(now) {
		return &Error{Kind: KindForbidden, Reason: "timed_out", Until: *u.TimedOutUntil,
			Message: "you are timed out until " + u.TimedOutUntil.UTC().Format(time.RFC3339)}
	}
	return nil
}
