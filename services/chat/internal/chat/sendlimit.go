package chat

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// SendLimit is the per-user message rate (CHAT_SEND_LIMIT): Max messages at
// once, then Max per Window, counted with GCRA as go-redis/redis_rate does
// (a user who spreads messages evenly never meets it; a refused message
// counts nothing). The zero SendLimit is off. It sits beside slow mode: slow
// mode is a channel's setting, this limit holds for a user in every channel.
type SendLimit struct {
	Max    int
	Window time.Duration
}

// DefaultSendLimit is Twitch's limit for ordinary chatters: 20 messages per
// 30 seconds.
var DefaultSendLimit = SendLimit{Max: 20, Window: 30 * time.Second}

// Off reports whether the limit is turned off.
func (l SendLimit) Off() bool { return l == SendLimit{} }

// Validate reports whether the limit can be enforced: both fields positive,
// and at least a nanosecond per message.
func (l SendLimit) Validate() error {
	switch {
	case l.Off():
		return nil
	case l.Max <= 0:
		return fmt.Errorf("send limit: max %d is not positive", l.Max)
	case l.Window < time.Duration(l.Max):
		return fmt.Errorf("send limit: %d messages per %s is finer than a nanosecond each", l.Max, l.Window)
	}
	return nil
}

// String is like "20 req/30s", or "off".
func (l SendLimit) String() string {
	if l.Off() {
		return "off"
	}
	return fmt.Sprintf("%d req/%s", l.Max, l.Window)
}

// ReasonSendLimit is the Reason of the slow_mode error a user over the send
// limit gets (slow mode's own is "slow_mode").
const ReasonSendLimit = "send_limit"

// countsSends reports whether u's messages count against the send limit:
// never the broadcaster's.
func (s *Service) countsSends(u User) bool {
	return !s.sendLimit.Off() && u.Role != RoleBroadcaster
}

// checkSendLimit judges the count of one message of u (made by
// ReadForSend). The broadcaster is never limited (a sender held
// since before a promotion was counted, but is not refused). A store that
// could not count lets the message through (the send then reports on its
// own whether it was stored): the limit protects the chat from floods, and
// refusing every message while only the counter fails would be the bigger
// outage.
func (s *Service) checkSendLimit(ctx context.Context, u User, wait time.Duration, err error) error {
	if !s.countsSends(u) {
		return nil
	}
	switch {
	case errors.Is(err, ErrUnavailable):
		s.log.WarnContext(ctx, "send limit not checked: the store could not count; the message goes through", "user", u.ID, "err", err)
		return nil
	case err != nil:
		return fmt.Errorf("send limit: %w", err)
	case wait > 0:
		return &Error{Kind: KindSlowMode, Reason: ReasonSendLimit, RetryAfter: wait,
			Message: fmt.Sprintf("too many messages: at most %d per %s; wait %ds", s.sendLimit.Max, s.sendLimit.Window, int(roundUpSecond(wait)/time.Second))}
	}
	return nil
}

// SendLimit returns the send limit in force (zero when off).
func (s *Service) SendLimit() SendLimit { return s.sendLimit }
