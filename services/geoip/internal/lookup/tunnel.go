package lookup

import "net/netip"

// TunnelledIPv4 returns the IPv4 address a 6to4 or Teredo address carries, and the bit
// offset of its block in the IPv6 address: 6to4 (2002::/16, RFC 3056) holds it in bits
// 16-47; Teredo (2001::/32, RFC 4380) holds the client's, inverted, in the last 32 bits,
// after the server's address and the port, which are the address's own. Such an address
// stands for the host behind that IPv4 address: databases answer it from the IPv4 row
// (ip2location-go's rule), and it is reserved when that address is.
func TunnelledIPv4(addr netip.Addr) (v4 netip.Addr, offset int, ok bool) {
	a := addr.As16()
	switch {
	case a[0] == 0x20 && a[1] == 0x02:
		return netip.AddrFrom4([4]byte{a[2], a[3], a[4], a[5]}), 16, true
	case a[0] == 0x20 && a[1] == 0x01 && a[2] == 0 && a[3] == 0:
		return netip.AddrFrom4([4]byte{^a[12], ^a[13], ^a[14], ^a[15]}), 96, true
	}
	return netip.Addr{}, 0, false
}
