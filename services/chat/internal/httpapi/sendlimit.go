package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver/ratelimit"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// DefaultSendLimit is Twitch's limit for ordinary chatters: 20 messages
// per 30 seconds (CHAT_SEND_LIMIT).
var DefaultSendLimit = ratelimit.Limit{Max: 20, Window: 30 * time.Second}

// ParseSendLimit reads CHAT_SEND_LIMIT: "<max>/<window>" like "20/30s" or
// "100/1m", or "off" (also "0") to turn the limit off, which returns the
// zero Limit.
func ParseSendLimit(s string) (ratelimit.Limit, error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "":
		return DefaultSendLimit, nil
	case "off", "0", "false":
		return ratelimit.Limit{}, nil
	}
	maxText, windowText, ok := strings.Cut(s, "/")
	if !ok {
		return ratelimit.Limit{}, fmt.Errorf("CHAT_SEND_LIMIT=%q: want <max>/<window> like 20/30s, or off", s)
	}
	n, err := strconv.Atoi(strings.TrimSpace(maxText))
	if err != nil || n < 1 {
		return ratelimit.Limit{}, fmt.Errorf("CHAT_SEND_LIMIT=%q: the max must be a positive integer", s)
	}
	w, err := ratelimit.ParseWindow(strings.TrimSpace(windowText))
	if err != nil {
		return ratelimit.Limit{}, fmt.Errorf("CHAT_SEND_LIMIT=%q: the window must be a number and a unit (ms, s, m, h, d)", s)
	}
	l := ratelimit.Limit{Max: n, Window: w}
	if err := l.Validate(); err != nil {
		return ratelimit.Limit{}, fmt.Errorf("CHAT_SEND_LIMIT=%q: %w", s, err)
	}
	return l, nil
}

// SendLimiter sends messages through the chat service after a per-user
// rate limit (GCRA: Max at once, then Max per Window). The broadcaster is
// never limited. Counters live in Redis when a client is given, so every
// replica counts one user together; a Redis failure lets the message
// through (the send itself then reports whether it was stored).
//
// It is the one send path of the API; live delivery's socket sends use it
// too, so both transports apply the same limit.
type SendLimiter struct {
	svc   *chat.Service
	limit ratelimit.Limit
	lim   ratelimit.Limiter
	log   *slog.Logger
}

// NewSendLimiter returns a sender over svc. A zero limit turns limiting
// off; rdb nil keeps the counters in memory.
func NewSendLimiter(svc *chat.Service, limit ratelimit.Limit, rdb redis.UniversalClient, log *slog.Logger) (*SendLimiter, error) {
	if log == nil {
		log = slog.Default()
	}
	s := &SendLimiter{svc: svc, limit: limit, log: log}
	if limit == (ratelimit.Limit{}) {
		return s, nil
	}
	if err := limit.Validate(); err != nil {
		return nil, fmt.Errorf("send limit: %w", err)
	}
	if rdb == nil {
		s.lim = ratelimit.NewMemory(ratelimit.MemoryConfig{})
		return s, nil
	}
	rl, err := ratelimit.NewRedis(rdb, ratelimit.RedisConfig{KeyPrefix: "chat:sendlimit:"})
	if err != nil {
		return nil, fmt.Errorf("send limit: %w", err)
	}
	s.lim = ratelimit.NewGuard(rl, ratelimit.GuardConfig{Logger: log})
	return s, nil
}

// Limit is the limit applied (zero when off).
func (s *SendLimiter) Limit() ratelimit.Limit { return s.limit }

// Send checks the sender's limit, then runs chat.Service.Send. Over the
// limit it returns a chat error of kind slow_mode with reason
// "send_limit" and the wait, which StatusError answers with 429.
func (s *SendLimiter) Send(ctx context.Context, actor chat.User, in chat.SendInput) (chat.SendResult, error) {
	if s.lim != nil && actor.Role != chat.RoleBroadcaster {
		res, err := s.lim.Allow(ctx, actor.ID, s.limit)
		switch {
		case errors.Is(err, ratelimit.ErrBackend):
			// Fail open: the Guard counted and logged it.
		case err != nil:
			return chat.SendResult{}, fmt.Errorf("send limit: %w", err)
		case !res.Allowed:
			return chat.SendResult{}, &chat.Error{Kind: chat.KindSlowMode, Reason: "send_limit", RetryAfter: res.RetryAfter,
				Message: fmt.Sprintf("too many messages: at most %d per %s; wait %ds", s.limit.Max, s.limit.Window, retrySeconds(res.RetryAfter))}
		}
	}
	return s.svc.Send(ctx, actor, in)
}
