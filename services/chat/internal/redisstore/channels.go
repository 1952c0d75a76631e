package redisstore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/redis/go-redis/v9"
)

// ClaimChannel implements chat.Store.
func (s *Store) ClaimChannel(ctx context.Context, name string, max int) error {
	ok, err := claimChannel.Run(ctx, s.rdb, []string{s.prefix + "{channels}:all", s.prefix + "{channels}:open"}, name, max).Int()
	if err != nil {
		return failWrite("claim channel", err)
	}
	if ok == 0 {
		return chat.LimitReached(chat.QuotaChannels, max)
	}
	return nil
}

// ClaimOpenChannel implements chat.Store.
func (s *Store) ClaimOpenChannel(ctx context.Context, name string, c chat.OpenClaim) error {
	create := 0
	if c.Create {
		create = 1
	}
	ok, err := claimOpenChannel.Run(ctx, s.rdb, []string{s.prefix + "{channels}:all", s.prefix + "{channels}:open"},
		name, c.Now.UnixMilli(), c.Idle.Milliseconds(), c.Max, create).Int()
	switch {
	case err != nil:
		return failWrite("claim open channel", err)
	case ok == 0:
		return chat.LimitReached(chat.QuotaOpenChannels, c.Max)
	case ok < 0:
		return chat.NotFound("channel " + name)
	}
	return nil
}

// Channel implements chat.Store.
func (s *Store) Channel(ctx context.Context, name string) (chat.Channel, error) {
	var settings *redis.MapStringStringCmd
	var shield *redis.StringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		settings, shield = s.readChannel(ctx, p, name)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return chat.Channel{}, fail("read channel", err)
	}
	return parseChannel(name, settings, shield)
}

// readChannel queues the reads of a channel's settings and the automatic
// shield's end (the shield key, in ms) on p.
func (s *Store) readChannel(ctx context.Context, p redis.Pipeliner, name string) (*redis.MapStringStringCmd, *redis.StringCmd) {
	return p.HGetAll(ctx, s.ck(name, "settings")), p.Get(ctx, s.ck(name, "shield"))
}

// parseChannel reads readChannel's answers. Settings written before the
// modes have only slow_mode_seconds: the rest are off.
func parseChannel(name string, settings *redis.MapStringStringCmd, shield *redis.StringCmd) (chat.Channel, error) {
	if err := settings.Err(); err != nil {
		return chat.Channel{}, err
	}
	if err := shield.Err(); err != nil && !errors.Is(err, redis.Nil) {
		return chat.Channel{}, err
	}
	m := settings.Val()
	num := func(k string) int { n, _ := strconv.Atoi(m[k]); return n }
	c := chat.Channel{Name: name, SlowModeSeconds: num("slow_mode_seconds"), FirstMessageReview: m["first_message_review"] == "1",
		MinAccountAgeSeconds: num("min_account_age_seconds"), UniqueChat: m["unique_chat"] == "1", Shield: m["shield"] == "1",
		AutoShield: m["auto_shield"] == "1", AutoShieldFirstChatters: num("auto_shield_first_chatters"),
		AutoShieldBlocked: num("auto_shield_blocked"), ShieldQuietSeconds: num("shield_quiet_seconds")}
	if ms, err := strconv.ParseInt(shield.Val(), 10, 64); err == nil && ms > 0 {
		t := time.UnixMilli(ms).UTC()
		c.ShieldUntil = &t
	}
	return c, nil
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// SaveChannel implements chat.Store.
func (s *Store) SaveChannel(ctx context.Context, c chat.Channel) error {
	err := s.rdb.HSet(ctx, s.ck(c.Name, "settings"), "slow_mode_seconds", c.SlowModeSeconds,
		"first_message_review", flag(c.FirstMessageReview), "min_account_age_seconds", c.MinAccountAgeSeconds,
		"unique_chat", flag(c.UniqueChat), "auto_shield", flag(c.AutoShield),
		"auto_shield_first_chatters", c.AutoShieldFirstChatters, "auto_shield_blocked", c.AutoShieldBlocked,
		"shield_quiet_seconds", c.ShieldQuietSeconds).Err()
	if err != nil {
		return failWrite("save channel", err)
	}
	return nil
}
