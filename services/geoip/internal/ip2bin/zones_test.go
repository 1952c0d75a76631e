package ip2bin_test

import (
	"net/netip"
	"testing"

	"github.com/apistack/platform/services/geoip/internal/binwriter"
	"github.com/apistack/platform/services/geoip/internal/ip2bin"
)

func TestZoneNamesEverywhere(t *testing.T) {
	build := func(locs ...binwriter.Location) bool {
		t.Helper()
		b := binwriter.NewBuilder()
		for i, loc := range locs {
			p := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(10 + i), 0, 0, 0}), 8)
			if err := b.AddPrefix(p, b.Intern(loc)); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				if err := b.AddPrefix(netip.MustParsePrefix("2001:4860::/32"), b.Intern(loc)); err != nil {
					t.Fatal(err)
				}
			}
		}
		var buf bytesBuffer
		if _, err := b.Write(&buf, binwriter.Options{}); err != nil {
			t.Fatal(err)
		}
		db, err := ip2bin.OpenBytes(buf.b, "fixture")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		return db.Info().ZoneNames
	}
	named := mountainView
	named.TimeZone = "America/Los_Angeles"
	if !build(named, zurich, countryOnly) {
		t.Error("every located row names its zone (the country-only row has no coordinates), yet ZoneNames is false")
	}
	if build(named, mountainView) { // mountainView has "-07:00"
		t.Error("a located row with an offset instead of a name, yet ZoneNames is true")
	}
	if build(sydney) { // no zone at all
		t.Error("a located row without a zone, yet ZoneNames is true")
	}
}
