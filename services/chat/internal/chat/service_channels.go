package chat

import (
	"context"
	"fmt"
)

// ChannelPatch changes channel settings.
type ChannelPatch struct {
	SlowModeSeconds *int `json:"slow_mode_seconds,omitempty"`
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

// UpdateChannel changes a channel's settings (moderators).
func (s *Service) UpdateChannel(ctx context.Context, actor User, name string, p ChannelPatch) (Channel, error) {
	name, err := NormalizeChannel(name)
	if err != nil {
		return Channel{}, err
	}
	am, err := s.Member(ctx, actor, name)
	if err != nil {
		return Channel{}, err
	}
	if err := s.requireIn(am, ActionManageChannel); err != nil {
		return Channel{}, err
	}
	c, err := s.store.Channel(ctx, name)
	if err != nil {
		return Channel{}, fmt.Errorf("channel %s: %w", name, err)
	}
	if p.SlowModeSeconds != nil {
		if *p.SlowModeSeconds < 0 || *p.SlowModeSeconds > MaxSlowModeSeconds {
			return Channel{}, Invalid("slow_mode_seconds", fmt.Sprintf("must be 0..%d", MaxSlowModeSeconds))
		}
		c.SlowModeSeconds = *p.SlowModeSeconds
	}
	if err := s.claimChannel(ctx, name); err != nil {
		return Channel{}, err
	}
	if err := s.store.SaveChannel(ctx, c); err != nil {
		return Channel{}, fmt.Errorf("channel %s: save: %w", name, err)
	}
	return c, nil
}
