package httpapi

import "net/netip"

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
		"2002:a00::/24",   // 6to4 of 10.0.0.0/8
		"2002:ac10::/28",  // 6to4 of 172.16.0.0/12
		"2002:c0a8::/32",  // 6to4 of 192.168.0.0/16
		"2002:7f00::/24",  // 6to4 of 127.0.0.0/8
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

// globalUnicast6 is where every allocated IPv6 address is; the rest of the space is
// reserved by IANA.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// isReserved reports whether addr (already unmapped) is in a range that is never a
// public host on the Internet.
func isReserved(addr netip.Addr) bool {
	if addr.IsPrivate() || addr.IsLoopback() || addr.IsLinkLocalUnicast() || addr.IsMulticast() ||
		addr.IsUnspecified() || addr.IsLinkLocalMulticast() || addr.IsInterfaceLocalMulticast() {
		return true
	}
	if addr.Is6() && !globalUnicast6.Contains(addr) {
		return true // unique-local, NAT64 (64:ff9b::/96), IPv4-compatible, unallocated...
	}
	for _, p := range reservedPrefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}
