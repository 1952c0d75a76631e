package realtime

import "testing"

// TestNetworkOfAClient: the network a client key (apiserver's ClientKey)
// is counted under, by the configured prefix lengths, never narrower than
// the key itself.
func TestNetworkOfAClient(t *testing.T) {
	for _, c := range []struct {
		v4, v6   int
		key, net string
	}{
		{0, 0, "203.0.113.77", "203.0.113.0/24"}, // zero takes the defaults
		{24, 48, "203.0.113.77", "203.0.113.0/24"},
		{16, 48, "203.0.113.77", "203.0.0.0/16"},
		{32, 48, "203.0.113.77", "203.0.113.77/32"},
		{24, 48, "::ffff:203.0.113.77", "203.0.113.0/24"},      // a mapped address is IPv4
		{24, 48, "2001:db8:1:2::/64", "2001:db8:1::/48"},       // the limiter's /64
		{24, 56, "2001:db8:1:2ff::/64", "2001:db8:1:200::/56"}, // tunable
		{24, 96, "2001:db8:1:2::/64", "2001:db8:1:2::/64"},     // never narrower than the key
		{24, 48, "2001:db8:1:2::1", "2001:db8:1::/48"},         // RATE_LIMIT_IPV6_PREFIX=128: whole addresses
		{24, 48, "fe80::1%eth0", "fe80::/48"},
		{24, 48, "not an address", "not an address"}, // its own network
	} {
		l := Limits{IPv4NetPrefix: c.v4, IPv6NetPrefix: c.v6}
		if got := l.network(c.key); got != c.net {
			t.Errorf("network(%q) with /%d, /%d = %q, want %q", c.key, c.v4, c.v6, got, c.net)
		}
	}
}

// TestAnonymousShare: anonymous sockets may hold what the reserve leaves.
func TestAnonymousShare(t *testing.T) {
	for _, c := range []struct{ max, reserve, want int }{
		{10000, 20, 8000}, {12, 25, 9}, {10, 15, 9}, {10000, 0, 0}, {0, 20, 0}, {3, 99, 1},
	} {
		l := Limits{MaxSockets: c.max, UserReservePercent: c.reserve}
		if got := l.maxAnonymous(); got != c.want {
			t.Errorf("%d sockets, %d%% reserved: anonymous may hold %d, want %d", c.max, c.reserve, got, c.want)
		}
	}
}
