package tz_test

import (
	"testing"
	"time"

	"github.com/apistack/platform/services/geoip/internal/lookup"
	"github.com/apistack/platform/services/geoip/internal/tz"
)

// One Finder for the package: loading the polygons is the slow part.
var finder = tz.New()

func TestNameFromCoordinates(t *testing.T) {
	tests := []struct {
		place    string
		lat, lon float64
		want     string
	}{
		{"Mountain View", 37.422, -122.085, "America/Los_Angeles"},
		{"Sydney", -33.8688, 151.209, "Australia/Sydney"},
		{"Zurich", 47.3769, 8.5417, "Europe/Zurich"},
		{"Kathmandu", 27.7172, 85.324, "Asia/Kathmandu"},
		{"Montreal", 45.5019, -73.5674, "America/Toronto"},
		{"Phoenix", 33.4484, -112.074, "America/Phoenix"},
	}
	for _, tt := range tests {
		if got := finder.Name(tt.lat, tt.lon); got != tt.want {
			t.Errorf("%s: %q; want %q", tt.place, got, tt.want)
		}
	}
}

func TestResolveIncludesDaylightSaving(t *testing.T) {
	winter := time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)
	summer := time.Date(2026, 7, 15, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		rec  lookup.Record
		at   time.Time
		zone string
		off  string
	}{
		{"derived, winter", lookup.Record{Latitude: 37.422, Longitude: -122.085, HasLocation: true}, winter, "America/Los_Angeles", "-0800"},
		{"derived, summer", lookup.Record{Latitude: 37.422, Longitude: -122.085, HasLocation: true}, summer, "America/Los_Angeles", "-0700"},
		{"southern summer", lookup.Record{Latitude: -33.8688, Longitude: 151.209, HasLocation: true}, winter, "Australia/Sydney", "+1100"},
		{"no DST", lookup.Record{Latitude: 33.4484, Longitude: -112.074, HasLocation: true}, summer, "America/Phoenix", "-0700"},
		{"quarter hour", lookup.Record{Latitude: 27.7172, Longitude: 85.324, HasLocation: true}, summer, "Asia/Kathmandu", "+0545"},
		{"database zone wins", lookup.Record{TimeZone: "Europe/Zurich", Latitude: 37.4, Longitude: -122, HasLocation: true}, summer, "Europe/Zurich", "+0200"},
		{"no location keeps database offset", lookup.Record{UTCOffset: "-0700"}, summer, "", "-0700"},
		{"nothing", lookup.Record{}, summer, "", ""},
	}
	for _, tt := range tests {
		rec := tt.rec
		finder.Resolve(&rec, tt.at)
		if rec.TimeZone != tt.zone || rec.UTCOffset != tt.off {
			t.Errorf("%s: %q %q; want %q %q", tt.name, rec.TimeZone, rec.UTCOffset, tt.zone, tt.off)
		}
	}
}

func TestOffsetOfUnknownZoneIsEmpty(t *testing.T) {
	if got := finder.Offset("Mars/Olympus_Mons", time.Now()); got != "" {
		t.Errorf("offset %q", got)
	}
}

func BenchmarkName(b *testing.B) {
	if err := finder.Warm(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		finder.Name(37.422, -122.085)
	}
}
