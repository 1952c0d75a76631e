package answer

import (
	"net/netip"
	"testing"

	"github.com/apistack/platform/services/geoip/internal/lookup"
)

// BenchmarkAppendJSON encodes one located record, with the country's keys copied from
// countryTable (facts) and written field by field (fields), for the side-by-side cost.
func BenchmarkAppendJSON(b *testing.B) {
	rec := lookup.Record{Country: "DE", Region: "Bavaria", City: "Munich (Moosach)", TimeZone: "Europe/Berlin",
		UTCOffset: "+0100", Latitude: 48.1769, Longitude: 11.5327, HasLocation: true, Network: netip.MustParsePrefix("5.6.0.0/16")}
	loc, _ := newLocation(netip.MustParseAddr("5.6.7.8"), rec, nil)
	plain := loc
	plain.facts = nil
	buf := make([]byte, 0, 1024)
	for _, c := range []struct {
		name string
		loc  *Location
	}{{"facts", &loc}, {"fields", &plain}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				buf = appendJSON(buf[:0], c.loc)
			}
		})
	}
}
