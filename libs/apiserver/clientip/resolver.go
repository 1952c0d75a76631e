package clientip

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// Resolver finds the client address of a request. It is immutable and safe
// for concurrent use.
type Resolver struct {
	trusted Set
}

// NewResolver builds a Resolver that believes X-Forwarded-For only from the
// given proxies (IPs or CIDRs). An empty list trusts nobody: the peer address
// is always the client, which is the only safe default when the server may be
// reached directly.
func NewResolver(trustedProxies []string) (*Resolver, error) {
	s, err := NewSet(trustedProxies)
	if err != nil {
		return nil, fmt.Errorf("trusted proxies: %w", err)
	}
	return &Resolver{trusted: s}, nil
}

// NewResolverFromSet is NewResolver for an already parsed list.
func NewResolverFromSet(trusted Set) *Resolver { return &Resolver{trusted: trusted} }

// Trusted is the set of trusted proxies.
func (r *Resolver) Trusted() Set { return r.trusted }

// Resolve returns the client address for a connection from remoteAddr
// ("ip:port", "[ipv6]:port" or a bare IP, as in http.Request.RemoteAddr)
// that carried the given X-Forwarded-For header values, in the order they
// appeared.
//
// When the peer is not a trusted proxy, the header is ignored: anyone can
// send it. Otherwise the header is read from the right, one hop at a time,
// because each trusted proxy appends the address it received the request
// from; the first address that is not itself a trusted proxy is the client.
// If every hop is trusted the left-most one is returned. A malformed entry
// ends the walk at the trusted hop that forwarded it, since nothing to its
// left can be believed. Empty list elements are skipped (RFC 9110 5.6.1).
//
// The result is unmapped (never ::ffff:a.b.c.d) and has no zone. It is the
// zero Addr only when remoteAddr itself does not parse (for example a Unix
// socket peer); callers should treat that as one shared "unknown" client.
func (r *Resolver) Resolve(remoteAddr string, xff []string) netip.Addr {
	return r.walk(parsePeer(remoteAddr), xff)
}

// walk is Resolve for a parsed peer address.
func (r *Resolver) walk(client netip.Addr, xff []string) netip.Addr {
	if !client.IsValid() || !r.trusted.Contains(client) {
		return client
	}
	for i := len(xff) - 1; i >= 0; i-- {
		line := xff[i]
		for line != "" {
			var elem string
			if j := strings.LastIndexByte(line, ','); j >= 0 {
				elem, line = line[j+1:], line[:j]
			} else {
				elem, line = line, ""
			}
			elem = strings.TrimSpace(elem)
			if elem == "" {
				continue
			}
			hop, ok := parseHop(elem)
			if !ok {
				return client
			}
			client = hop
			if !r.trusted.Contains(client) {
				return client
			}
		}
	}
	return client
}

// ResolveRequest is Resolve for an *http.Request, reading every
// X-Forwarded-For header line.
func (r *Resolver) ResolveRequest(req *http.Request) netip.Addr {
	// The canonical key read directly: Header.Values would canonicalise it
	// on every request.
	return r.walk(parsePeer(req.RemoteAddr), req.Header["X-Forwarded-For"])
}

// parsePeer accepts what net/http puts in RemoteAddr, and a bare address for
// callers that already split the port off.
func parsePeer(s string) netip.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return normalize(ap.Addr())
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return normalize(a)
	}
	return netip.Addr{}
}

// parseHop accepts a bare address, and also "ip:port" / "[ipv6]:port",
// which some proxies (Azure, IIS) write into X-Forwarded-For.
func parseHop(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		if a.Zone() != "" {
			// A zone is only meaningful on the host that wrote it.
			return netip.Addr{}, false
		}
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil && ap.Addr().Zone() == "" {
		return ap.Addr().Unmap(), true
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		// "[2001:db8::1]" without a port.
		if a, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil && a.Is6() && a.Zone() == "" {
			return a.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

func normalize(a netip.Addr) netip.Addr { return a.Unmap().WithZone("") }
