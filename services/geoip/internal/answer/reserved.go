package answer

import (
	"encoding/binary"
	"net/netip"

	"github.com/apistack/platform/services/geoip/internal/lookup"
)

// reservedPrefixes are the special-purpose ranges (IANA IPv4 and IPv6 Special-Purpose
// Address Registries) that netip's predicates do not already cover. No location database
// has data for them, and a lookup would only answer an empty record.
var reservedPrefixes = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",       // "this network"
		"100.64.0.0/10",   // carrier-grade NAT
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // TEST-NET-1
		"192.88.99.0/24",  // deprecated 6to4 relay anycast
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // TEST-NET-2
		"203.0.113.0/24",  // TEST-NET-3
		"240.0.0.0/4",     // reserved, includes 255.255.255.255
		"100::/64",        // discard-only
		"2001:2::/48",     // benchmarking
		"2001:10::/28",    // ORCHID (deprecated)
		"2001:20::/28",    // ORCHIDv2
		"2001:db8::/32",   // documentation
		"3fff::/20",       // documentation (RFC 9637)
		"5f00::/16",       // SRv6 SIDs
		"64:ff9b:1::/48",  // local-use IPv4/IPv6 translation
		"fec0::/10",       // deprecated site-local
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

// reserved4 and reserved6 are reservedPrefixes by family, IPv4 as masked numbers: every
// answer asks isReserved, and testing a public IPv4 address against all its prefixes with
// Prefix.Contains cost more than the JSON encoding of a cached answer.
var reserved4, reserved6 = func() (v4 []struct{ base, mask uint32 }, v6 []netip.Prefix) {
	for _, p := range reservedPrefixes {
		if !p.Addr().Is4() {
			v6 = append(v6, p)
			continue
		}
		a := p.Addr().As4()
		mask := ^uint32(0) << (32 - p.Bits())
		v4 = append(v4, struct{ base, mask uint32 }{binary.BigEndian.Uint32(a[:]) & mask, mask})
	}
	return v4, v6
}()

// globalUnicast6 is where every allocated IPv6 address is; the rest of the space is
// reserved by IANA.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// isReserved reports whether addr (already unmapped) is in a range that is never a
// public host on the Internet.
func isReserved(addr netip.Addr) bool {
	if addr.Is4() {
		a := addr.As4()
		ip := binary.BigEndian.Uint32(a[:])
		for _, p := range reserved4 {
			if ip&p.mask == p.base {
				return true
			}
		}
		// 10/8, 172.16/12, 192.168/16, 127/8, 169.254/16, 224/4 (multicast, link-local
		// multicast included); 0.0.0.0 is in 0.0.0.0/8 above.
		return addr.IsPrivate() || addr.IsLoopback() || addr.IsLinkLocalUnicast() || addr.IsMulticast()
	}
	if addr.IsPrivate() || addr.IsLoopback() || addr.IsLinkLocalUnicast() || addr.IsMulticast() ||
		addr.IsUnspecified() || addr.IsLinkLocalMulticast() || addr.IsInterfaceLocalMulticast() {
		return true
	}
	if !globalUnicast6.Contains(addr) {
		return true // unique-local, NAT64 (64:ff9b::/96), IPv4-compatible, unallocated...
	}
	// 6to4 and Teredo stand for the IPv4 host they carry: 6to4 of 10.1.2.3 or Teredo of
	// 192.168.1.1 is no more public than that address.
	if v4, _, ok := lookup.TunnelledIPv4(addr); ok {
		return isReserved(v4)
	}
	for _, p := range reserved6 {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}
