package chat

import (
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

	// The raid watch (auto_shield): DefaultAutoShieldFirstChatters users
	// who never sent in the channel, sending within AutoShieldWindow,
	// turn shield mode on for DefaultShieldQuietSeconds after the last
	// such trip. 40 fresh accounts within 10 s trip it at the 30th.
	AutoShieldWindow               = time.Minute
	DefaultAutoShieldFirstChatters = 30
	MaxAutoShieldFirstChatters     = 10000
	DefaultShieldQuietSeconds      = 300
	MinShieldQuietSeconds          = 60
	MaxShieldQuietSeconds          = 24 * 3600
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

// shieldQuiet is how long an automatic shield lasts after its last trip,
// and how long a moderator's "off" keeps the raid watch from tripping.
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

// Raid is the raid watch's count of one first-time chatter: when
// Threshold distinct ones came within AutoShieldWindow of Now, and shield
// mode is not on automatically already nor held off by a moderator, the
// engine turns it on until Now+Quiet and appends Event (shield_mode) in
// the same step. Counted in the store, so every replica counts together.
type Raid struct {
	Now       time.Time
	Threshold int
	Quiet     time.Duration
	Event     Event
	// Log is the shield_on entry recorded with Event.
	Log ModEntry
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
	until := now.Add(c.shieldQuiet())
	reason := fmt.Sprintf("%d first-time chatters within %s", c.firstChatters(), AutoShieldWindow)
	log := modEntry(channel, ModShieldOn, AutomodUser, nil, reason, now)
	log.Rule, log.Until = RuleRaidWatch, &until
	return &Raid{Now: now, Threshold: c.firstChatters(), Quiet: c.shieldQuiet(),
		Event: Event{Type: EventShieldMode, Channel: channel,
			Shield: &ShieldChange{On: true, Auto: true, Until: &until, By: AutomodUser, Reason: reason, At: now}},
		Log: log}
}

// ShieldSwitch is a moderator switching shield mode (Store.SwitchShield):
// the channel's Shield is set to On; switching off also ends an automatic
// shield and keeps the raid watch from tripping until HoldOff. Event is
// appended in the same step.
type ShieldSwitch struct {
	On      bool
	HoldOff time.Time
	Event   Event
	// Log is the switch's moderation log entry, recorded with Event.
	Log ModEntry
}
