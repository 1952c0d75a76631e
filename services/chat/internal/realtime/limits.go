package realtime

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/apistack/platform/libs/apiserver"
)

// Connection limits, checked before the upgrade so a refused client gets
// an HTTP answer with the error body rather than a socket. They bound what
// one client can make a replica hold (sockets, and channels, each of which
// costs a room and a feed subscription), so one address opening sockets on
// many channels meets its own limit long before it could slow anyone else.
// Zero means no limit. A client address is what the rate limiter counts
// (apiserver's ClientKey): an IPv6 client is its prefix
// (RATE_LIMIT_IPV6_PREFIX, /64 by default), not each of its 2^64 addresses.
type Limits struct {
	// MaxSockets bounds the open sockets of this replica
	// (CHAT_WS_MAX_SOCKETS, 10000); past it: 503 with Retry-After.
	MaxSockets int
	// MaxSocketsPerIP bounds the open sockets of one client address on
	// this replica (CHAT_WS_MAX_SOCKETS_PER_IP, 100); past it: 429.
	MaxSocketsPerIP int
	// MaxChannelsPerIP bounds the distinct channels one client address
	// has sockets on, on this replica (CHAT_WS_MAX_CHANNELS_PER_IP, 20);
	// past it: 429. More sockets on a channel it already has are fine.
	MaxChannelsPerIP int
}

// DefaultLimits are the limits when Options.Limits is nil.
var DefaultLimits = Limits{MaxSockets: 10000, MaxSocketsPerIP: 100, MaxChannelsPerIP: 20}

// source is what one client address holds on this replica.
type source struct {
	sockets  int
	channels map[string]int // channel -> sockets
}

// admit reserves a socket on channel for ip, or says which limit refuses
// it. The caller must release the reservation once the socket ends (or
// if the upgrade fails).
func (h *Hub) admit(ip, channel string) error {
	l := h.opts.Limits
	h.mu.Lock()
	defer h.mu.Unlock()
	if l.MaxSockets > 0 && h.sockets >= l.MaxSockets {
		h.metrics.refused.WithLabelValues("replica_sockets").Inc()
		return &apiserver.Error{Status: http.StatusServiceUnavailable, Header: http.Header{"Retry-After": {"5"}},
			Message: fmt.Sprintf("This replica holds its maximum of %d sockets; retry shortly (another replica may answer)", l.MaxSockets),
			Extra:   map[string]any{"reason": "too_many_sockets"}}
	}
	s := h.sources[ip]
	if s == nil {
		s = &source{channels: map[string]int{}}
	}
	if l.MaxSocketsPerIP > 0 && s.sockets >= l.MaxSocketsPerIP {
		h.metrics.refused.WithLabelValues("ip_sockets").Inc()
		return &apiserver.Error{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"10"}},
			Message: fmt.Sprintf("Too many sockets from your address: at most %d at a time", l.MaxSocketsPerIP),
			Extra:   map[string]any{"reason": "too_many_sockets_per_ip"}}
	}
	if _, ok := s.channels[channel]; !ok && l.MaxChannelsPerIP > 0 && len(s.channels) >= l.MaxChannelsPerIP {
		h.metrics.refused.WithLabelValues("ip_channels").Inc()
		return &apiserver.Error{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"10"}},
			Message: fmt.Sprintf("Too many channels from your address: sockets on at most %d distinct channels at a time", l.MaxChannelsPerIP),
			Extra:   map[string]any{"reason": "too_many_channels_per_ip"}}
	}
	h.sources[ip] = s
	s.sockets++
	s.channels[channel]++
	h.sockets++
	return nil
}

// release returns a reservation made by admit.
func (h *Hub) release(ip, channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sockets--
	s := h.sources[ip]
	if s == nil {
		return
	}
	s.sockets--
	if s.channels[channel]--; s.channels[channel] <= 0 {
		delete(s.channels, channel)
	}
	if s.sockets <= 0 {
		delete(h.sources, ip)
	}
}

// LimitsFromEnv reads CHAT_WS_MAX_SOCKETS, CHAT_WS_MAX_SOCKETS_PER_IP and
// CHAT_WS_MAX_CHANNELS_PER_IP (whole numbers, 0 for no limit); unset ones
// keep DefaultLimits.
func LimitsFromEnv(getenv func(string) string) (Limits, error) {
	l := DefaultLimits
	for _, v := range []struct {
		name string
		dst  *int
	}{
		{"CHAT_WS_MAX_SOCKETS", &l.MaxSockets},
		{"CHAT_WS_MAX_SOCKETS_PER_IP", &l.MaxSocketsPerIP},
		{"CHAT_WS_MAX_CHANNELS_PER_IP", &l.MaxChannelsPerIP},
	} {
		s := strings.TrimSpace(getenv(v.name))
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return Limits{}, fmt.Errorf("%s=%q: want a whole number, 0 for no limit", v.name, s)
		}
		*v.dst = n
	}
	return l, nil
}
