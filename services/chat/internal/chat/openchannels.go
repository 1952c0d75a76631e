package chat

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// What a channel is, and who may make one (issue 41).
//
// A channel exists once it is claimed. The platform claims a channel when
// someone it empowered acts there: the administrator or a platform-wide
// moderator names a role, sets modes, adds a command or a filter, or
// moderates in it, or anyone whose role in it is moderator or higher
// sends there. Those channels count against CHAT_MAX_CHANNELS and are
// never reclaimed.
//
// With CHAT_OPEN_CHANNELS on (the default, as before), a viewer's first
// message to a new name opens the channel. Open channels are a pool of
// their own, up to CHAT_MAX_CHANNELS again, so viewers can never use up
// the platform's channels; an open channel nobody wrote to for
// OpenChannelIdle is reclaimed when a new one needs its place (its place
// only: what was written stays readable as before), and the platform's
// first act in an open channel makes it the platform's. With
// CHAT_OPEN_CHANNELS off, a viewer may write only where a channel exists
// (404 elsewhere).

// OpenChannelIdle is how long an open channel nobody wrote to keeps its
// place in the pool.
const OpenChannelIdle = time.Hour

// openRefresh is how often a replica tells the store that an open channel
// it keeps writing to is still in use: well within OpenChannelIdle, so a
// channel written to at least once per OpenChannelIdle-openRefresh is
// never reclaimed, at one store call per channel per openRefresh.
const openRefresh = OpenChannelIdle / 4

// OpenClaim is how a viewer's write claims a channel (Store.ClaimOpenChannel).
type OpenClaim struct {
	// Create lets the claim open a new channel (CHAT_OPEN_CHANNELS).
	Create bool
	// Max is the size of the open pool (<= 0: no limit).
	Max int
	// Now is the write's time; Idle how long an unwritten open channel
	// keeps its place.
	Now  time.Time
	Idle time.Duration
}

// openChannels remembers when this process last claimed each open
// channel, so a write costs a store call only every openRefresh.
type openChannels struct {
	mu    sync.Mutex
	names map[string]time.Time
}

func (c *openChannels) fresh(name string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.names[name]
	return ok && now.Sub(at) < openRefresh
}

func (c *openChannels) add(name string, now time.Time, max int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.names == nil {
		c.names = map[string]time.Time{}
	}
	if _, ok := c.names[name]; ok || len(c.names) < max {
		c.names[name] = now
	}
}

// claimFor claims channel for a write by m: the platform's claim when m
// holds moderator or higher there, else an open claim (see above).
func (s *Service) claimFor(ctx context.Context, m Member, channel string, now time.Time) error {
	if m.Role().AtLeast(RoleModerator) || s.claimed.has(channel) {
		return s.claimChannel(ctx, channel)
	}
	if s.open.fresh(channel, now) {
		return nil
	}
	err := s.store.ClaimOpenChannel(ctx, channel, OpenClaim{Create: s.openChannels, Max: s.limits.Channels, Now: now, Idle: OpenChannelIdle})
	if KindOf(err) == KindNotFound {
		return &Error{Kind: KindNotFound, Reason: "no_channel", Message: fmt.Sprintf("channel %s not found: channels are made by the platform here (CHAT_OPEN_CHANNELS=false)", channel)}
	}
	if err != nil {
		return fmt.Errorf("channel %s: %w", channel, err)
	}
	s.open.add(channel, now, s.limits.Channels)
	return nil
}
