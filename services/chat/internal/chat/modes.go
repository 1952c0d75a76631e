package chat

import (
	"context"
	"fmt"
	"time"
)

// Channel modes (PATCH /channels/{channel}) and shield mode. Senders from
// vip up (ActionBypassChatModes) are not checked by any of them.
const (
	// UniqueChatWindow: with unique_chat, the same text from the same
	// sender within this window is refused (429, reason unique_chat).
	UniqueChatWindow = 30 * time.Second
	// MaxMinAccountAgeSeconds bounds min_account_age_seconds (90 days).
	MaxMinAccountAgeSeconds = 90 * 24 * 3600

	// The shield preset: while shield mode is on, the channel's modes are
	// at least these (a stricter setting of the channel's own stays).
	ShieldSlowModeSeconds      = 10
	ShieldMinAccountAgeSeconds = 3600
	// ShieldFirstMessageReview: shield mode holds every first message.

	// The raid watch (auto_shield) has two triggers, counted in the
	// store so that every replica counts together:
	// DefaultAutoShieldFirstChatters users who never sent in the channel,
	// or DefaultAutoShieldBlocked messages refused by a filter, within
	// AutoShieldWindow, turn shield mode on for DefaultShieldQuietSeconds
	// after the last trip; then it goes off by itself, announced. 40 fresh
	// accounts within 10 s trip it at the 30th.
	AutoShieldWindow               = time.Minute
	DefaultAutoShieldFirstChatters = 30
	MaxAutoShieldFirstChatters     = 10000
	DefaultAutoShieldBlocked       = 30
	MaxAutoShieldBlocked           = 10000
	DefaultShieldQuietSeconds      = 300
	MinShieldQuietSeconds          = 60
	MaxShieldQuietSeconds          = 24 * 3600
	// ShieldHoldOff is how long a moderator's "off" keeps the raid watch
	// from switching shield mode back on: the counts start again at the
	// off, and a raid that goes on (the threshold reached again by what
	// came after the off) switches it on once this has passed.
	ShieldHoldOff = AutoShieldWindow
)

// Modes are the checks a send meets in a channel, with shield mode's
// preset applied.
type Modes struct {
	SlowModeSeconds      int
	FirstMessageReview   bool
	MinAccountAgeSeconds int
	UniqueChat           bool
	Shield               bool
}

// ShieldOn reports whether shield mode is on at now: switched on by a
// moderator, or by the raid watch until ShieldUntil.
func (c Channel) ShieldOn(now time.Time) bool {
	return c.Shield || c.ShieldUntil != nil && c.ShieldUntil.After(now)
}

// Modes returns the checks in force at now.
func (c Channel) Modes(now time.Time) Modes {
	m := Modes{SlowModeSeconds: c.SlowModeSeconds, FirstMessageReview: c.FirstMessageReview,
		MinAccountAgeSeconds: c.MinAccountAgeSeconds, UniqueChat: c.UniqueChat}
	if c.ShieldOn(now) {
		m.Shield = true
		m.SlowModeSeconds = max(m.SlowModeSeconds, ShieldSlowModeSeconds)
		m.MinAccountAgeSeconds = max(m.MinAccountAgeSeconds, ShieldMinAccountAgeSeconds)
		m.FirstMessageReview = true
	}
	return m
}

// firstChatters is the raid watch's threshold.
func (c Channel) firstChatters() int {
	if c.AutoShieldFirstChatters > 0 {
		return c.AutoShieldFirstChatters
	}
	return DefaultAutoShieldFirstChatters
}

// blockedThreshold is the raid watch's threshold of refused messages.
func (c Channel) blockedThreshold() int {
	if c.AutoShieldBlocked > 0 {
		return c.AutoShieldBlocked
	}
	return DefaultAutoShieldBlocked
}

// shieldQuiet is how long an automatic shield lasts after its last trip.
func (c Channel) shieldQuiet() time.Duration {
	if c.ShieldQuietSeconds > 0 {
		return time.Duration(c.ShieldQuietSeconds) * time.Second
	}
	return DefaultShieldQuietSeconds * time.Second
}

// Watch is what a user's message tells its channel, in the step that
// stores or holds it (Store.AppendSent, Store.HoldMessage).
type Watch struct {
	// Chatter, on an appended message, makes its sender a chatter of the
	// channel: first_message_review lets them through from then on.
	Chatter string
	// Raid, when set, counts Chatter as a first-time chatter.
	Raid *Raid
}

// Raid is the raid watch's count of one first-time chatter (Watch) or one
// refused message (Store.CountBlocked): when Threshold of them came
// within AutoShieldWindow of Now (distinct users for chatters), and
// shield mode is not held off by a moderator (ShieldHoldOff), the engine
// turns it on until Now+Quiet and, unless it was on automatically
// already, appends Event (shield_mode) in the same step. Counted in the
// store, so every replica counts together.
type Raid struct {
	Now       time.Time
	Threshold int
	Quiet     time.Duration
	Event     Event
	// Log is the shield_on entry recorded with Event.
	Log ModEntry
	// Sender is whose refused message Store.CountBlocked counts: the count
	// is of distinct senders within the window, so one account's refused
	// messages count once.
	Sender string
}

// ShieldChange is the payload of a shield_mode event.
type ShieldChange struct {
	On bool `json:"on"`
	// Auto: the raid watch switched it (By is automod).
	Auto bool `json:"auto"`
	// Until is when an automatic shield ends unless it trips again.
	Until  *time.Time `json:"until,omitempty"`
	By     UserRef    `json:"by"`
	Reason string     `json:"reason,omitempty"`
	At     time.Time  `json:"at"`
}

// raidFor returns the raid watch's count for a first-time chatter of c,
// or nil when the channel has no auto_shield.
func raidFor(c Channel, channel string, now time.Time) *Raid {
	if !c.AutoShield {
		return nil
	}
	return shieldTrip(c, channel, now, c.firstChatters(),
		fmt.Sprintf("%d first-time chatters within %s", c.firstChatters(), AutoShieldWindow))
}

// blockedFor returns the raid watch's count for a message a filter
// refused in c, or nil when the channel has no auto_shield.
func blockedFor(c Channel, channel string, now time.Time) *Raid {
	if !c.AutoShield {
		return nil
	}
	return shieldTrip(c, channel, now, c.blockedThreshold(),
		fmt.Sprintf("%d senders blocked by filters within %s", c.blockedThreshold(), AutoShieldWindow))
}

func shieldTrip(c Channel, channel string, now time.Time, threshold int, reason string) *Raid {
	until := now.Add(c.shieldQuiet())
	log := modEntry(channel, ModShieldOn, AutomodUser, nil, reason, now)
	log.Rule, log.Until = RuleRaidWatch, &until
	return &Raid{Now: now, Threshold: threshold, Quiet: c.shieldQuiet(),
		Event: Event{Type: EventShieldMode, Channel: channel,
			Shield: &ShieldChange{On: true, Auto: true, Until: &until, By: AutomodUser, Reason: reason, At: now}},
		Log: log}
}

// ShieldSwitch is a moderator switching shield mode (Store.SwitchShield):
// the channel's Shield is set to On; switching off also ends an automatic
// shield, forgets the raid watch's counts and keeps it from tripping until
// HoldOff. Event is appended in the same step.
type ShieldSwitch struct {
	On      bool
	HoldOff time.Time
	Event   Event
	// Log is the switch's moderation log entry, recorded with Event.
	Log ModEntry
}

// ShieldEnd is the end of an automatic shield (Store.EndShield): at or
// after Now, the engine forgets the shield and, unless a moderator's
// shield is on (then nothing changes for the channel's readers), appends
// Event (shield_mode, on false) in the same step, once however many
// replicas ask.
type ShieldEnd struct {
	Now   time.Time
	Event Event
	// Log is the automod's shield_off entry, recorded with Event.
	Log ModEntry
}

// EndAutoShield ends the channel's automatic shield if its quiet period is
// over, announcing it (shield_mode, on false, auto), and returns the end
// of an automatic shield still on (zero when none is). Replicas call it
// when an automatic shield they know of is due (live delivery's rooms),
// and a send that finds one overdue does: the off is announced once.
func (s *Service) EndAutoShield(ctx context.Context, channel string) (time.Time, error) {
	channel, err := NormalizeChannel(channel)
	if err != nil {
		return time.Time{}, err
	}
	now := s.clock()
	ev := Event{Type: EventShieldMode, Channel: channel,
		Shield: &ShieldChange{On: false, Auto: true, By: AutomodUser, Reason: "quiet period over", At: now}}
	log := modEntry(channel, ModShieldOff, AutomodUser, nil, "quiet period over", now)
	log.Rule = RuleRaidWatch
	until, err := s.store.EndShield(ctx, channel, ShieldEnd{Now: now, Event: ev, Log: log})
	if err != nil {
		return time.Time{}, fmt.Errorf("channel %s: end shield: %w", channel, err)
	}
	return until, nil
}

// countBlocked tells the raid watch of a message a filter refused in the
// member's channel (an auto_shield channel); a failure is logged, not
// returned: the refusal stands either way.
func (s *Service) countBlocked(ctx context.Context, m Member, c Channel, now time.Time) {
	r := blockedFor(c, m.Channel, now)
	if r == nil {
		return
	}
	r.Sender = m.User.ID
	if err := s.store.CountBlocked(ctx, m.Channel, *r); err != nil {
		s.log.WarnContext(ctx, "raid watch: count a blocked message", "channel", m.Channel, "err", err)
	}
}
