// Package clientip decides which address a request comes from when it may
// have passed through reverse proxies, without letting clients forge it.
//
// A Resolver believes X-Forwarded-For only when the TCP peer is a trusted
// proxy, and then only as far back as the chain of trusted hops reaches; the
// Set type holds the address lists (trusted proxies, rate-limit allow list).
package clientip

import (
	"fmt"
	"net/netip"
	"strings"
)

// Set is an immutable list of IP prefixes; single addresses are stored as
// full-length prefixes. The zero value is empty and contains nothing.
type Set struct {
	prefixes []netip.Prefix
}

// NewSet parses IPs and CIDRs ("10.0.0.1", "10.0.0.0/8", "2001:db8::/32").
// Surrounding whitespace is ignored and blank entries are skipped; any other
// entry that does not parse is an error naming it. IPv4-mapped IPv6 entries
// are stored as IPv4 so that they match however the address arrives.
func NewSet(entries []string) (Set, error) {
	var s Set
	for _, raw := range entries {
		e := strings.TrimSpace(raw)
		if e == "" {
			continue
		}
		p, err := parseEntry(e)
		if err != nil {
			return Set{}, err
		}
		s.prefixes = append(s.prefixes, p)
	}
	return s, nil
}

// ParseSet parses a comma-separated list such as the value of
// TRUSTED_PROXIES or RATE_LIMIT_ALLOW. An empty string is an empty Set.
func ParseSet(list string) (Set, error) {
	return NewSet(strings.Split(list, ","))
}

// MustParseSet is ParseSet for constants in tests and examples; it panics on
// a bad list.
func MustParseSet(list string) Set {
	s, err := ParseSet(list)
	if err != nil {
		panic(err)
	}
	return s
}

func parseEntry(e string) (netip.Prefix, error) {
	if strings.Contains(e, "/") {
		p, err := netip.ParsePrefix(e)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("invalid CIDR %q: %w", e, err)
		}
		addr, bits := p.Addr(), p.Bits()
		if addr.Is4In6() {
			if bits < 96 {
				// Wider than the mapped range: it would match real IPv6
				// space too, which is almost certainly not what was meant.
				return netip.Prefix{}, fmt.Errorf("invalid CIDR %q: IPv4-mapped prefix shorter than /96", e)
			}
			addr, bits = addr.Unmap(), bits-96
		}
		return netip.PrefixFrom(addr, bits).Masked(), nil
	}
	addr, err := netip.ParseAddr(e)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("invalid IP address %q: %w", e, err)
	}
	if addr.Zone() != "" {
		// Zones are per-host interface names; a list shared by replicas
		// cannot meaningfully contain them.
		return netip.Prefix{}, fmt.Errorf("invalid IP address %q: zones are not allowed", e)
	}
	addr = addr.Unmap()
	return netip.PrefixFrom(addr, addr.BitLen()), nil
}

// Contains reports whether addr lies in any of the set's prefixes. The
// address is unmapped and stripped of its zone first, so ::ffff:10.0.0.1 and
// fe80::1%eth0 match 10.0.0.0/8 and fe80::/10.
func (s Set) Contains(addr netip.Addr) bool {
	if !addr.IsValid() {
		return false
	}
	addr = addr.Unmap().WithZone("")
	for _, p := range s.prefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// Len is the number of entries.
func (s Set) Len() int { return len(s.prefixes) }

// Prefixes returns a copy of the entries, for logging the effective config.
func (s Set) Prefixes() []netip.Prefix {
	return append([]netip.Prefix(nil), s.prefixes...)
}

// String is the canonical comma list, suitable for start-up logs.
func (s Set) String() string {
	parts := make([]string, len(s.prefixes))
	for i, p := range s.prefixes {
		if p.IsSingleIP() {
			parts[i] = p.Addr().String()
		} else {
			parts[i] = p.String()
		}
	}
	return strings.Join(parts, ",")
}
