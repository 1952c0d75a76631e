package webhooks

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// Timeout bounds one delivery (and one send-hook call's connection):
// connecting, sending and reading the answer.
const Timeout = 5 * time.Second

// MaxAnswer is how much of an endpoint's answer is read (the rest is
// dropped): a receiver cannot make chat hold more.
const MaxAnswer = 64 << 10

// ErrRefusedDestination is a destination in a range chat does not send to
// (CHAT_WEBHOOK_ALLOW_PRIVATE=false).
var ErrRefusedDestination = errors.New("destination address refused")

// blocked are the ranges refused besides what netip classifies (loopback,
// private, link-local, multicast, unspecified): shared address space
// (carrier-grade NAT), the IETF and documentation ranges, 6to4 relays,
// NAT64 and the benchmark range, which reach inward on some networks.
var blocked = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("192.88.99.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("2002::/16"),
}

// Public reports whether a is an address chat may send to by default:
// not loopback, private (RFC 1918 and unique-local fc00::/7), link-local,
// multicast, unspecified or one of the blocked ranges, in any IPv4-mapped
// IPv6 form (::ffff:127.0.0.1 is 127.0.0.1).
func Public(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	for _, p := range blocked {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// guard is a net.Dialer Control function: it runs after DNS resolution,
// on the address about to be connected, so a name that resolves inward
// (or is re-bound to after registration) is refused where it matters.
func guard(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrRefusedDestination, address)
	}
	if !Public(ap.Addr()) {
		return fmt.Errorf("%w: %s is not a public address (CHAT_WEBHOOK_ALLOW_PRIVATE=false)", ErrRefusedDestination, ap.Addr())
	}
	return nil
}

// NewClient returns the HTTP client of deliveries and of the send hook:
// no proxy, no redirects followed (a 3xx is an answer, and a failure),
// timeout bounding the whole exchange, and, unless allowPrivate, every
// connection checked by guard at dial time.
func NewClient(timeout time.Duration, allowPrivate bool, maxConnsPerHost int) *http.Client {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = guard
	}
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    maxConnsPerHost,
		MaxConnsPerHost:        maxConnsPerHost,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: 16 << 10,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// Refused reports whether err is a destination refused by the guard.
func Refused(err error) bool { return errors.Is(err, ErrRefusedDestination) }
