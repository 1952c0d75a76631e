// Package addrgen makes random public-looking IPv4 and IPv6 addresses and fills them
// into URL templates, so load hits many database records rather than one cached answer.
package addrgen

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
)

// nonPublicV4 lists IPv4 ranges that are not routable public unicast (RFC 6890 and
// friends); a geoip service answers them without a lookup, so they would flatter it.
var nonPublicV4 = mustPrefixes(
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
	"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16",
	"198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/3",
)

// publicV6 are the regional registries' /12 blocks, where real allocations (and so
// database records) live; uniformly random 2000::/3 addresses mostly miss all data.
var publicV6 = mustPrefixes("2400::/12", "2600::/12", "2800::/12", "2a00::/12", "2c00::/12")

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// IsPublicV4 reports whether a is outside every non-public IPv4 range.
func IsPublicV4(a netip.Addr) bool {
	if !a.Is4() {
		return false
	}
	for _, p := range nonPublicV4 {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// IsPublicV6 reports whether a lies inside one of the registries' blocks used here.
func IsPublicV6(a netip.Addr) bool {
	if !a.Is6() || a.Is4In6() {
		return false
	}
	for _, p := range publicV6 {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Generator draws addresses; it is not safe for concurrent use (one per worker).
type Generator struct {
	r      *rand.Rand
	v6Frac float64
}

// New returns a generator that answers IPv6 with probability v6Frac (0..1).
func New(seed uint64, v6Frac float64) (*Generator, error) {
	if v6Frac < 0 || v6Frac > 1 {
		return nil, fmt.Errorf("IPv6 fraction %v is outside 0..1", v6Frac)
	}
	return &Generator{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), v6Frac: v6Frac}, nil
}

// Next returns the next random public-looking address.
func (g *Generator) Next() netip.Addr {
	if g.v6Frac > 0 && g.r.Float64() < g.v6Frac {
		return g.nextV6()
	}
	return g.nextV4()
}

func (g *Generator) nextV4() netip.Addr {
	for {
		u := g.r.Uint32()
		a := netip.AddrFrom4([4]byte{byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)})
		if IsPublicV4(a) {
			return a
		}
	}
}

func (g *Generator) nextV6() netip.Addr {
	p := publicV6[g.r.IntN(len(publicV6))]
	var b [16]byte
	hi, lo := g.r.Uint64(), g.r.Uint64()
	for i := 0; i < 8; i++ {
		b[i] = byte(hi >> (56 - 8*i))
		b[8+i] = byte(lo >> (56 - 8*i))
	}
	// keep the prefix bits, randomise the rest
	pb := p.Addr().As16()
	bitsLeft := p.Bits()
	for i := 0; i < 16 && bitsLeft > 0; i++ {
		n := min(bitsLeft, 8)
		mask := byte(0xff << (8 - n))
		b[i] = pb[i]&mask | b[i]&^mask
		bitsLeft -= n
	}
	return netip.AddrFrom16(b)
}

// Placeholder is the marker replaced by an address in URL templates.
const Placeholder = "{ip}"

// Template is a URL with one {ip} placeholder, split once so filling is a concatenation.
type Template struct {
	prefix, suffix string
	hasIP          bool
}

// ParseTemplate splits raw at its {ip} placeholder; a template without one is sent as is.
func ParseTemplate(raw string) (Template, error) {
	n := strings.Count(raw, Placeholder)
	switch n {
	case 0:
		return Template{prefix: raw}, nil
	case 1:
		i := strings.Index(raw, Placeholder)
		return Template{prefix: raw[:i], suffix: raw[i+len(Placeholder):], hasIP: true}, nil
	default:
		return Template{}, fmt.Errorf("template %q has %d %s placeholders, want at most one", raw, n, Placeholder)
	}
}

// Fill returns the URL for address a; IPv6 goes into the path as text, unbracketed,
// the way ipapi-style clients write it (/2a00:1450::1/json/).
func (t Template) Fill(a netip.Addr) string {
	if !t.hasIP {
		return t.prefix
	}
	return t.prefix + a.String() + t.suffix
}

// Example returns the template filled with a fixed address, for messages and checks.
func (t Template) Example() string { return t.Fill(netip.MustParseAddr("8.8.8.8")) }
