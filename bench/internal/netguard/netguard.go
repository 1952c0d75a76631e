// Package netguard keeps every benchmark connection on loopback: target URLs are
// checked up front and the dialer refuses any non-loopback peer at connect time.
package netguard

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// CheckURL accepts http, https, ws and wss URLs whose host is a loopback address
// literal or "localhost" resolving only to loopback addresses.
func CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("parse target %q: %w", raw, err)
	}
	switch u.Scheme {
	case "http", "https", "ws", "wss":
	default:
		return nil, fmt.Errorf("target %q: scheme %q is not http(s) or ws(s)", raw, u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return nil, fmt.Errorf("target %q: no host", raw)
	}
	if err := CheckHost(host); err != nil {
		return nil, fmt.Errorf("target %q: %w", raw, err)
	}
	return u, nil
}

// CheckHost accepts loopback address literals and "localhost" when every address it
// resolves to is loopback.
func CheckHost(host string) error {
	if a, err := netip.ParseAddr(host); err == nil {
		if !a.Unmap().IsLoopback() {
			return fmt.Errorf("host %s is not a loopback address: load goes to loopback only", host)
		}
		return nil
	}
	if host != "localhost" {
		return fmt.Errorf("host %q is not a loopback address literal or localhost", host)
	}
	addrs, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", host)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", host, err)
	}
	for _, a := range addrs {
		if !a.Unmap().IsLoopback() {
			return fmt.Errorf("localhost resolves to non-loopback %s", a)
		}
	}
	return nil
}

// control is a net.Dialer Control hook that refuses non-loopback peers, so that
// redirects or odd name resolution cannot send load elsewhere.
func control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("dial %s %s: %w", network, address, err)
	}
	if !ap.Addr().Unmap().IsLoopback() {
		return fmt.Errorf("dial %s %s: refused, not a loopback address", network, address)
	}
	return nil
}

// Dialer returns a dialer that only connects to loopback addresses.
func Dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: control}
}

// Transport returns an HTTP transport for a benchmark: loopback-only dialing,
// keep-alive with at least maxConns idle connections per host, no proxy, no compression.
func Transport(maxConns int) *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           Dialer(5 * time.Second).DialContext,
		MaxIdleConns:          maxConns + 16,
		MaxIdleConnsPerHost:   maxConns + 16,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
		ResponseHeaderTimeout: 30 * time.Second,
	}
}

// Sources returns n loopback source addresses, 127.0.1.1, 127.0.2.1, ...: one
// address has about 28,000 ephemeral ports towards one server port, so tens of
// thousands of sockets need several, and each in a /24 of its own so that a
// server counting clients per /24 sees n clients. n is at most 65,535.
func Sources(n int) ([]netip.Addr, error) {
	if n < 1 || n > 0xffff {
		return nil, fmt.Errorf("%d source addresses: want 1..65535", n)
	}
	out := make([]netip.Addr, n)
	for i := range out {
		k := i + 1
		out[i] = netip.AddrFrom4([4]byte{127, byte(k >> 8), byte(k), 1})
	}
	return out, nil
}

// TransportFrom is Transport with every connection made from the loopback
// address src.
func TransportFrom(src netip.Addr, maxConns int) (*http.Transport, error) {
	if !src.Unmap().IsLoopback() {
		return nil, fmt.Errorf("source %s is not a loopback address", src)
	}
	t := Transport(maxConns)
	d := Dialer(5 * time.Second)
	d.LocalAddr = &net.TCPAddr{IP: src.AsSlice()}
	t.DialContext = d.DialContext
	return t, nil
}
