package realtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/services/chat/internal/apierr"
	"github.com/apistack/platform/services/chat/internal/chat"
)

// Connection limits, checked before the upgrade so a refused client gets
// an HTTP answer with the error body rather than a socket, and again when
// an auth frame makes an open socket a user's. They bound what one client
// can make a replica hold (sockets, and channels, each of which costs a
// room and a feed subscription), and keep part of the replica for users
// who say who they are: addresses are cheap to come by (a /24, a /48, a
// botnet), tokens are not, so whoever holds many addresses still cannot
// lock out the broadcaster and the viewers with a token.
//
// Zero means no limit. A client address is what the rate limiter counts
// (apiserver's ClientKey): an IPv6 client is its prefix
// (RATE_LIMIT_IPV6_PREFIX, /64 by default), not each of its 2^64
// addresses; its network is the wider prefix of IPv4NetPrefix or
// IPv6NetPrefix bits that holds it.
type Limits struct {
	// MaxSockets bounds the open sockets of this replica
	// (CHAT_WS_MAX_SOCKETS, 10000); past it: 503 with Retry-After.
	MaxSockets int
	// UserReservePercent is the share of MaxSockets that only
	// authenticated sockets may take (CHAT_WS_USER_RESERVE_PERCENT, 20,
	// 0..99): anonymous ones may hold the rest, past which an anonymous
	// handshake gets 503 too_many_anonymous_sockets. A socket is anonymous
	// until it authenticates (a token in the handshake, or an auth frame),
	// so some share must stay for clients that authenticate by frame.
	UserReservePercent int
	// MaxSocketsPerUser bounds the open sockets of one authenticated user
	// on this replica (CHAT_WS_MAX_SOCKETS_PER_USER, 20); past it: 429
	// before the upgrade, or an error frame at the auth frame. The
	// broadcaster is not bound (as for the send limit): overlays and
	// tools open many.
	MaxSocketsPerUser int
	// MaxSocketsPerIP bounds the open sockets of one client address on
	// this replica (CHAT_WS_MAX_SOCKETS_PER_IP, 100); past it: 429.
	MaxSocketsPerIP int
	// MaxSocketsPerNet bounds the open sockets of one network on this
	// replica (CHAT_WS_MAX_SOCKETS_PER_NET, 1000); past it: 429. Holding
	// many addresses of one network is cheap (an IPv6 /48 is 65,536 /64s).
	MaxSocketsPerNet int
	// IPv4NetPrefix and IPv6NetPrefix are the prefix lengths of a network
	// (CHAT_WS_IPV4_NET_PREFIX, 24; CHAT_WS_IPV6_NET_PREFIX, 48; zero takes
	// these). An IPv6 network is never narrower than the client's own
	// prefix (RATE_LIMIT_IPV6_PREFIX).
	IPv4NetPrefix, IPv6NetPrefix int
	// MaxChannelsPerIP bounds the distinct channels one client address
	// has sockets on, on this replica (CHAT_WS_MAX_CHANNELS_PER_IP, 20);
	// past it: 429. More sockets on a channel it already has are fine.
	MaxChannelsPerIP int
}

// DefaultLimits are the limits when Options.Limits is nil.
var DefaultLimits = Limits{MaxSockets: 10000, UserReservePercent: 20, MaxSocketsPerUser: 20, MaxSocketsPerIP: 100,
	MaxSocketsPerNet: 1000, IPv4NetPrefix: 24, IPv6NetPrefix: 48, MaxChannelsPerIP: 20}

// maxAnonymous is how many sockets anonymous clients may hold on this
// replica, 0 for no bound of their own.
func (l *Limits) maxAnonymous() int {
	if l.MaxSockets <= 0 || l.UserReservePercent <= 0 {
		return 0
	}
	return l.MaxSockets - l.MaxSockets*l.UserReservePercent/100
}

// network names the network that holds the client ip (a ClientKey: an
// IPv4 address, an IPv6 prefix like "2001:db8:1:2::/64", or a whole IPv6
// address when RATE_LIMIT_IPV6_PREFIX is 128), like "203.0.113.0/24" or
// "2001:db8:1::/48". A key it cannot read is its own network.
func (l *Limits) network(ip string) string {
	v4, v6 := l.IPv4NetPrefix, l.IPv6NetPrefix
	if v4 <= 0 {
		v4 = DefaultLimits.IPv4NetPrefix
	}
	if v6 <= 0 {
		v6 = DefaultLimits.IPv6NetPrefix
	}
	var addr netip.Addr
	bits := 128
	if p, err := netip.ParsePrefix(ip); err == nil {
		addr, bits = p.Addr(), p.Bits()
	} else if addr, err = netip.ParseAddr(ip); err != nil {
		return ip
	}
	addr = addr.Unmap().WithZone("")
	if addr.Is4() {
		bits = min(bits, v4)
	} else {
		bits = min(bits, v6)
	}
	p, err := addr.Prefix(bits)
	if err != nil {
		return ip
	}
	return p.String()
}

// source is what one client address holds on this replica.
type source struct {
	sockets  int
	network  string         // Limits.network of the address
	channels map[string]int // channel -> sockets
}

// The reasons of refusals (the error body's reason) and the limit label
// of chat_ws_refused_total that counts each.
const (
	reasonReplica   = "too_many_sockets"
	reasonAnonymous = "too_many_anonymous_sockets"
	reasonUser      = "too_many_sockets_per_user"
	reasonIP        = "too_many_sockets_per_ip"
	reasonNet       = "too_many_sockets_per_net"
	reasonChannels  = "too_many_channels_per_ip"
)

var refusedLabel = map[string]string{
	reasonReplica: "replica_sockets", reasonAnonymous: "anonymous_sockets", reasonUser: "user_sockets",
	reasonIP: "ip_sockets", reasonNet: "net_sockets", reasonChannels: "ip_channels",
}

// refuse counts a refusal and returns its answer: 503 for what this
// replica lacks (another replica may have room), 429 for what the client
// holds already.
func (h *Hub) refuse(reason, message string) *apiserver.Error {
	h.metrics.refused.WithLabelValues(refusedLabel[reason]).Inc()
	status, retry := http.StatusTooManyRequests, "10"
	if reason == reasonReplica || reason == reasonAnonymous {
		status, retry = http.StatusServiceUnavailable, "5"
	}
	return &apiserver.Error{Status: status, Header: http.Header{"Retry-After": {retry}}, Message: message,
		Extra: map[string]any{apierr.FieldReason: reason}}
}

// userFull reports whether u holds its maximum of sockets here (h.mu held).
func (h *Hub) userFull(u *chat.User) bool {
	l := h.opts.Limits
	return l.MaxSocketsPerUser > 0 && u.Role != chat.RoleBroadcaster && h.users[u.ID] >= l.MaxSocketsPerUser
}

func (h *Hub) refuseUser() *apiserver.Error {
	return h.refuse(reasonUser, fmt.Sprintf("Too many sockets for your account: at most %d at a time on this replica; close one first",
		h.opts.Limits.MaxSocketsPerUser))
}

// admit reserves a socket on channel for ip and user (nil: anonymous), or
// says which limit refuses it. The caller must release the reservation
// once the socket ends (or if the upgrade fails).
func (h *Hub) admit(ip, channel string, user *chat.User) error {
	l := h.opts.Limits
	h.mu.Lock()
	defer h.mu.Unlock()
	if l.MaxSockets > 0 && h.sockets >= l.MaxSockets {
		return h.refuse(reasonReplica, fmt.Sprintf("This replica holds its maximum of %d sockets; retry shortly (another replica may answer)", l.MaxSockets))
	}
	if user == nil {
		if n := l.maxAnonymous(); n > 0 && h.anonymous >= n {
			return h.refuse(reasonAnonymous, fmt.Sprintf("This replica keeps its last %d sockets for users with a token: "+
				"connect with a token (an Authorization header, or the subprotocol bearer.<token>), or retry shortly (another replica may answer)", l.MaxSockets-n))
		}
	} else if h.userFull(user) {
		return h.refuseUser()
	}
	s := h.sources[ip]
	if s == nil {
		s = &source{network: l.network(ip), channels: map[string]int{}}
	}
	if l.MaxSocketsPerIP > 0 && s.sockets >= l.MaxSocketsPerIP {
		return h.refuse(reasonIP, fmt.Sprintf("Too many sockets from your address: at most %d at a time", l.MaxSocketsPerIP))
	}
	if l.MaxSocketsPerNet > 0 && h.networks[s.network] >= l.MaxSocketsPerNet {
		return h.refuse(reasonNet, fmt.Sprintf("Too many sockets from your network (%s): at most %d at a time", s.network, l.MaxSocketsPerNet))
	}
	if _, ok := s.channels[channel]; !ok && l.MaxChannelsPerIP > 0 && len(s.channels) >= l.MaxChannelsPerIP {
		return h.refuse(reasonChannels, fmt.Sprintf("Too many channels from your address: sockets on at most %d distinct channels at a time", l.MaxChannelsPerIP))
	}
	h.sources[ip] = s
	s.sockets++
	s.channels[channel]++
	h.networks[s.network]++
	h.sockets++
	if user == nil {
		h.anonymous++
	} else {
		h.users[user.ID]++
	}
	return nil
}

// release returns a reservation made by admit for user ("" anonymous).
func (h *Hub) release(ip, channel, user string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.releaseLocked(ip, channel, user)
}

// releaseConn returns the reservation of c, counted under the user c
// holds now (authenticate moves it, under the same lock).
func (h *Hub) releaseConn(c *conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var user string
	if u := c.user.Load(); u != nil {
		user = u.ID
	}
	h.releaseLocked(c.ip, c.channel, user)
}

func (h *Hub) releaseLocked(ip, channel, user string) {
	h.sockets--
	if user == "" {
		h.anonymous--
	} else {
		h.dropUser(user)
	}
	s := h.sources[ip]
	if s == nil {
		return
	}
	s.sockets--
	if s.channels[channel]--; s.channels[channel] <= 0 {
		delete(s.channels, channel)
	}
	if h.networks[s.network]--; h.networks[s.network] <= 0 {
		delete(h.networks, s.network)
	}
	if s.sockets <= 0 {
		delete(h.sources, ip)
	}
}

func (h *Hub) dropUser(id string) {
	if h.users[id]--; h.users[id] <= 0 {
		delete(h.users, id)
	}
}

// errConnGone: the connection ended while its auth frame was checked.
var errConnGone = errors.New("the connection is closing")

// authenticate makes u the user of c after an auth frame: c's socket
// moves from the anonymous ones (or its previous user's) to u's, unless u
// holds its maximum already (an *apiserver.Error, 429
// too_many_sockets_per_user; c stays as it was). Every change of c.user
// after the upgrade goes through here, under h.mu, so releaseConn gives
// back what admit and authenticate counted.
func (h *Hub) authenticate(c *conn, u *chat.User) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.conns[c]; !ok {
		return errConnGone // cleanup has run or is running: nothing to move
	}
	prev := c.user.Load()
	if prev == nil || prev.ID != u.ID {
		if h.userFull(u) {
			return h.refuseUser()
		}
		if prev == nil {
			h.anonymous--
		} else {
			h.dropUser(prev.ID)
		}
		h.users[u.ID]++
	}
	c.user.Store(u)
	return nil
}

// limitFrame is the error frame of a limit refused after the upgrade: the
// status, message and reason the handshake would have answered.
func limitFrame(id json.RawMessage, err error) errorFrame {
	var e *apiserver.Error
	if !errors.As(err, &e) {
		return errorFor(id, err)
	}
	extra := map[string]any{apierr.FieldRetryAfter: 10}
	for k, v := range e.Extra {
		extra[k] = v
	}
	return errorFrame{Type: typeError, ID: id, Code: codeRateLimited, Status: e.Status, Message: e.Message, Extra: extra}
}

// LimitsFromEnv reads CHAT_WS_MAX_SOCKETS, CHAT_WS_USER_RESERVE_PERCENT,
// CHAT_WS_MAX_SOCKETS_PER_USER, CHAT_WS_MAX_SOCKETS_PER_IP,
// CHAT_WS_MAX_SOCKETS_PER_NET, CHAT_WS_IPV4_NET_PREFIX,
// CHAT_WS_IPV6_NET_PREFIX and CHAT_WS_MAX_CHANNELS_PER_IP; unset ones keep
// DefaultLimits. Every invalid value is reported, by name.
func LimitsFromEnv(getenv func(string) string) (Limits, error) {
	l := DefaultLimits
	const limit = "want a whole number, 0 for no limit"
	var errs []error
	for _, v := range []struct {
		name     string
		dst      *int
		min, max int
		want     string
	}{
		{"CHAT_WS_MAX_SOCKETS", &l.MaxSockets, 0, 0, limit},
		{"CHAT_WS_USER_RESERVE_PERCENT", &l.UserReservePercent, 0, 99,
			"want a percentage of CHAT_WS_MAX_SOCKETS 0..99 that only sockets with a token may take, 0 for no reserve"},
		{"CHAT_WS_MAX_SOCKETS_PER_USER", &l.MaxSocketsPerUser, 0, 0, limit},
		{"CHAT_WS_MAX_SOCKETS_PER_IP", &l.MaxSocketsPerIP, 0, 0, limit},
		{"CHAT_WS_MAX_SOCKETS_PER_NET", &l.MaxSocketsPerNet, 0, 0, limit},
		{"CHAT_WS_IPV4_NET_PREFIX", &l.IPv4NetPrefix, 1, 32, "want a prefix length 1..32, like 24"},
		{"CHAT_WS_IPV6_NET_PREFIX", &l.IPv6NetPrefix, 1, 128, "want a prefix length 1..128, like 48"},
		{"CHAT_WS_MAX_CHANNELS_PER_IP", &l.MaxChannelsPerIP, 0, 0, limit},
	} {
		s := strings.TrimSpace(getenv(v.name))
		if s == "" {
			continue
		}
		digits := s
		if strings.HasSuffix(v.name, "_PREFIX") {
			digits = strings.TrimPrefix(s, "/") // "/24" as RATE_LIMIT_IPV6_PREFIX takes it
		}
		n, err := strconv.Atoi(digits)
		if err != nil || n < v.min || v.max > 0 && n > v.max {
			errs = append(errs, fmt.Errorf("%s=%q: %s", v.name, s, v.want))
			continue
		}
		*v.dst = n
	}
	if err := errors.Join(errs...); err != nil {
		return Limits{}, err
	}
	return l, nil
}
