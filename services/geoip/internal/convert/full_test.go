package convert_test

import (
	"math/rand/v2"
	"net/netip"
	"os"
	"strconv"
	"testing"

	"github.com/apistack/platform/services/geoip/internal/ip2bin"
	"github.com/apistack/platform/services/geoip/internal/lookup"
	"github.com/apistack/platform/services/geoip/internal/mmdb"
	"github.com/apistack/platform/services/geoip/internal/testdb"
	"github.com/apistack/platform/services/geoip/internal/tz"
)

// TestConvertedBINAnswersWhatTheSourceAnswers is the converter's proof on the full DB-IP
// Lite data: 100,000 random addresses (60% IPv4 over the whole space, 40% IPv6 in the
// blocks the registries allocate), plus the first and last address of the source network
// of every third of them, must get the same country, region, city and coordinates from
// the BIN (through ip2location-go) as from the MMDB, and the BIN must hold the IANA zone
// the service would derive from the source's coordinates (DB-IP has no zone names).
//
// Excluded: 6to4 (2002::/16) and Teredo (2001::/32) addresses, which ip2location-go
// deliberately answers from the embedded IPv4 address, where the MMDB has one record for
// the whole block.
func TestConvertedBINAnswersWhatTheSourceAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("full-data test skipped in -short mode")
	}
	binPath := testdb.ConvertedBIN(t)
	bin, err := ip2bin.Load(binPath)
	if err != nil {
		t.Fatal(err)
	}
	defer bin.Close()
	src4, err := mmdb.Load(testdb.MMDB(t, testdb.IPv4))
	if err != nil {
		t.Fatal(err)
	}
	defer src4.Close()
	src6, err := mmdb.Load(testdb.MMDB(t, testdb.IPv6))
	if err != nil {
		t.Fatal(err)
	}
	defer src6.Close()

	seed := uint64(20260605)
	if s := os.Getenv("GEOIP_EQUIV_SEED"); s != "" {
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("GEOIP_EQUIV_SEED: %v", err)
		}
	}
	t.Logf("seed %d (set GEOIP_EQUIV_SEED to vary)", seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	// Blocks with IPv6 allocations: 2001::/16 and the RIR /12s.
	v6Tops := []uint16{0x2001}
	for _, base := range []uint16{0x2400, 0x2600, 0x2800, 0x2a00, 0x2c00} {
		for i := uint16(0); i < 16; i++ {
			v6Tops = append(v6Tops, base+i)
		}
	}
	var addrs []netip.Addr
	for len(addrs) < 60_000 {
		var b [4]byte
		u := rng.Uint32()
		b[0], b[1], b[2], b[3] = byte(u>>24), byte(u>>16), byte(u>>8), byte(u)
		addrs = append(addrs, netip.AddrFrom4(b))
	}
	for len(addrs) < 100_000 {
		var b [16]byte
		top := v6Tops[rng.IntN(len(v6Tops))]
		b[0], b[1] = byte(top>>8), byte(top)
		for i := 2; i < 16; i += 8 {
			u := rng.Uint64()
			for j := 0; j < 8 && i+j < 16; j++ {
				b[i+j] = byte(u >> (8 * j))
			}
		}
		a := netip.AddrFrom16(b)
		if remapped(a) {
			continue
		}
		addrs = append(addrs, a)
	}
	// Edges: the first and last address of the source network holding every third random
	// address (walking all 15 million networks instead takes minutes under -race).
	edges := 0
	for i, a := range addrs[:100_000] {
		if i%3 != 0 {
			continue
		}
		src := src4
		if a.Is6() {
			src = src6
		}
		res := src.Reader().Lookup(a)
		if !res.Found() {
			continue
		}
		p := res.Prefix()
		for _, e := range []netip.Addr{p.Addr(), last(p)} {
			if !remapped(e) {
				addrs = append(addrs, e)
				edges++
			}
		}
	}
	t.Logf("%d random addresses, %d network edges", 100_000, edges)

	zones := tz.New()
	if err := zones.Warm(); err != nil {
		t.Fatal(err)
	}
	found, mismatches, zoned := 0, 0, 0
	for _, a := range addrs {
		src := src4
		if a.Is6() {
			src = src6
		}
		want, err := src.Lookup(a)
		if err != nil {
			t.Fatalf("mmdb %s: %v", a, err)
		}
		got, err := bin.Lookup(a)
		if err != nil {
			t.Fatalf("bin %s: %v", a, err)
		}
		if want.Found() {
			found++
		}
		if want.HasLocation && want.TimeZone == "" {
			want.TimeZone = zones.Name(want.Latitude, want.Longitude)
		}
		if got.TimeZone != "" {
			zoned++
		}
		if !same(got, want) {
			mismatches++
			if mismatches <= 10 {
				t.Errorf("%s:\n bin  %+v\n mmdb %+v", a, got, want)
			}
		}
	}
	if mismatches > 0 {
		t.Fatalf("%d of %d addresses differ", mismatches, len(addrs))
	}
	if found < len(addrs)/2 {
		t.Fatalf("only %d of %d addresses had data: the sample misses the data", found, len(addrs))
	}
	if zoned < found*9/10 {
		t.Fatalf("only %d of %d located addresses have a zone in the BIN", zoned, found)
	}
	t.Logf("%d addresses agree (%d with data, %d with a time zone)", len(addrs), found, zoned)
}

func same(bin, src lookup.Record) bool {
	if bin.Country != src.Country || bin.Region != src.Region || bin.City != src.City ||
		bin.TimeZone != src.TimeZone {
		return false
	}
	if !src.Found() {
		return !bin.Found()
	}
	// The BIN stores coordinates as float32.
	return float32(bin.Latitude) == float32(src.Latitude) && float32(bin.Longitude) == float32(src.Longitude)
}

var (
	sixToFour = netip.MustParsePrefix("2002::/16")
	teredo    = netip.MustParsePrefix("2001::/32")
)

func remapped(a netip.Addr) bool { return sixToFour.Contains(a) || teredo.Contains(a) }

func last(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
