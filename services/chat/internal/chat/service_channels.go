package chat

import (
	"context"
	"fmt"
)

// ChannelPatch changes channel settings; nil leaves a field alone.
type ChannelPatch struct {
	SlowModeSeconds         *int  `json:"slow_mode_seconds,omitempty"`
	FirstMessageReview      *bool `json:"first_message_review,omitempty"`
	MinAccountAgeSeconds    *int  `json:"min_account_age_seconds,omitempty"`
	UniqueChat              *bool `json:"unique_chat,omitempty"`
	Shield                  *bool `json:"shield,omitempty"`
	AutoShield              *bool `json:"auto_shield,omitempty"`
	AutoShieldFirstChatters *int  `json:"auto_shield_first_chatters,omitempty"`
	AutoShieldBlocked       *int  `json:"auto_shield_blocked,omitempty"`
	ShieldQuietSeconds      *int  `json:"shield_quiet_seconds,omitempty"`
}

// Channel returns a channel's settings.
func (s *Service) Channel(ctx context.Context, actor *User, name string) (Channel, error) {
	if err := s.canRead(actor); err != nil {
		return Channel{}, err
	}
	name, err := NormalizeChannel(name)
	if err != nil {
		return Channel{}, err
	}
	c, err := s.store.Channel(ctx, name)
	if err != nil {
		return Channel{}, fmt.Errorf("channel %s: %w", name, err)
	}
	return c, nil
}

// UpdateChannel changes a channel's settings (moderators). Switching
// shield mode is announced in the channel (shield_mode); switching it off
// also ends an automatic shield, and the moderator's word wins: the raid
// watch counts again from the off and cannot switch it back on within
// ShieldHoldOff, only after, if the raid goes on.
func (s *Service) UpdateChannel(ctx context.Context, actor User, name string, p ChannelPatch) (Channel, error) {
	name, err := NormalizeChannel(name)
	if err != nil {
		return Channel{}, err
	}
	if err := s.requireHere(ctx, actor, name, ActionManageChannel); err != nil {
		return Channel{}, err
	}
	c, err := s.store.Channel(ctx, name)
	if err != nil {
		return Channel{}, fmt.Errorf("channel %s: %w", name, err)
	}
	var v validation
	setInt := func(dst *int, p *int, field string, lo, hi int) {
		if p == nil {
			return
		}
		if *p < lo || *p > hi {
			v.add(field, "must be %d..%d", lo, hi)
			return
		}
		*dst = *p
	}
	setBool := func(dst *bool, p *bool) {
		if p != nil {
			*dst = *p
		}
	}
	setInt(&c.SlowModeSeconds, p.SlowModeSeconds, "slow_mode_seconds", 0, MaxSlowModeSeconds)
	setInt(&c.MinAccountAgeSeconds, p.MinAccountAgeSeconds, "min_account_age_seconds", 0, MaxMinAccountAgeSeconds)
	setInt(&c.AutoShieldFirstChatters, p.AutoShieldFirstChatters, "auto_shield_first_chatters", 0, MaxAutoShieldFirstChatters)
	setInt(&c.AutoShieldBlocked, p.AutoShieldBlocked, "auto_shield_blocked", 0, MaxAutoShieldBlocked)
	if p.ShieldQuietSeconds != nil && *p.ShieldQuietSeconds != 0 {
		setInt(&c.ShieldQuietSeconds, p.ShieldQuietSeconds, "shield_quiet_seconds", MinShieldQuietSeconds, MaxShieldQuietSeconds)
	} else if p.ShieldQuietSeconds != nil {
		c.ShieldQuietSeconds = 0
	}
	setBool(&c.FirstMessageReview, p.FirstMessageReview)
	setBool(&c.UniqueChat, p.UniqueChat)
	setBool(&c.AutoShield, p.AutoShield)
	if err := v.err(); err != nil {
		return Channel{}, err
	}
	if err := s.claimChannel(ctx, name); err != nil {
		return Channel{}, err
	}
	if err := s.store.SaveChannel(ctx, c); err != nil {
		return Channel{}, fmt.Errorf("channel %s: save: %w", name, err)
	}
	if p.Shield != nil {
		now := s.clock()
		by := s.actorRef(ctx, actor, name)
		sw := ShieldSwitch{On: *p.Shield, Event: Event{Type: EventShieldMode, Channel: name,
			Shield: &ShieldChange{On: *p.Shield, By: actor.Ref(), At: now}},
			Log: modEntry(name, ModShieldOff, by, nil, "", now)}
		if sw.On {
			sw.Log.Action = ModShieldOn
		}
		if !sw.On {
			sw.HoldOff = now.Add(ShieldHoldOff)
		}
		if err := s.store.SwitchShield(ctx, name, sw); err != nil {
			return Channel{}, fmt.Errorf("channel %s: shield: %w", name, err)
		}
	}
	if c, err = s.store.Channel(ctx, name); err != nil {
		return Channel{}, fmt.Errorf("channel %s: %w", name, err)
	}
	return c, nil
}
