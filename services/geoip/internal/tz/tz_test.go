package tz_test

import (
	"math"
	"math/rand/v2"
	"sync"
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
		rec := finder.Resolve(tt.rec, tt.at)
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

// BenchmarkName asks the same coordinates again and again: a cache hit.
func BenchmarkName(b *testing.B) {
	if err := finder.Warm(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		finder.Name(37.422, -122.085)
	}
}

// TestNameCacheAnswersAsTheFirstSearch asks more distinct coordinates than the cache has
// slots, twice in different orders: collisions replace entries, and every answer must
// still be the one the polygon search gave first.
func TestNameCacheAnswersAsTheFirstSearch(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 5_000
	}
	rng := rand.New(rand.NewPCG(1, 2))
	type point struct{ lat, lon float64 }
	points := make([]point, n)
	want := make([]string, n)
	fresh := tz.New()
	for i := range points {
		// Mostly land, where zones change over short distances.
		points[i] = point{rng.Float64()*120 - 55, rng.Float64()*360 - 180}
		want[i] = fresh.Name(points[i].lat, points[i].lon)
	}
	for i := n - 1; i >= 0; i-- {
		if got := fresh.Name(points[i].lat, points[i].lon); got != want[i] {
			t.Fatalf("%v: %q, first search %q", points[i], got, want[i])
		}
	}
	// Nearby coordinates are distinct keys: the cache must not answer one for the other.
	a, b := fresh.Name(45.5, -73.6), fresh.Name(45.5, -73.60000000000001)
	if a != "America/Toronto" || b != "America/Toronto" {
		t.Errorf("Montreal: %q %q", a, b)
	}
}

// TestNameConcurrent is for the race detector: cache slots are read and replaced from
// many goroutines.
func TestNameConcurrent(t *testing.T) {
	coords := [][2]float64{{37.422, -122.085}, {-33.8688, 151.209}, {47.3769, 8.5417}, {27.7172, 85.324}}
	want := make([]string, len(coords))
	for i, c := range coords {
		want[i] = finder.Name(c[0], c[1])
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				k := (i + g) % len(coords)
				if got := finder.Name(coords[k][0], coords[k][1]); got != want[k] {
					t.Errorf("%v: %q; want %q", coords[k], got, want[k])
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkNameUncached is the polygon search itself: a new coordinate every time.
func BenchmarkNameUncached(b *testing.B) {
	if err := finder.Warm(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	lat := 37.0
	for b.Loop() {
		lat += 1e-9
		finder.Name(lat, -122.085)
	}
}

// BenchmarkResolveStoredZone is the per-lookup cost when the database carries the zone
// name (BINs made by geoip convert): the zone's rules from a map and the offset now.
func BenchmarkResolveStoredZone(b *testing.B) {
	rec := lookup.Record{TimeZone: "America/Los_Angeles", Latitude: 37.422, Longitude: -122.085, HasLocation: true}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		rec = finder.Resolve(rec, now)
	}
}

// The offset of a period is reused inside it and recomputed across a transition, in
// either direction of time (requests carry their own clock readings).
func TestOffsetFollowsTransitions(t *testing.T) {
	f := tz.New()
	// America/Los_Angeles: PST until 2026-03-08 10:00 UTC, PDT until 2026-11-01 09:00 UTC.
	for _, tt := range []struct {
		at   time.Time
		want string
	}{
		{time.Date(2026, 3, 8, 9, 59, 59, 0, time.UTC), "-0800"},
		{time.Date(2026, 3, 8, 10, 0, 0, 0, time.UTC), "-0700"},
		{time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), "-0700"},
		{time.Date(2026, 11, 1, 8, 59, 59, 0, time.UTC), "-0700"},
		{time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC), "-0800"},
		{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "-0800"}, // back before both
		{time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC), "-0700"},
	} {
		if got := f.Offset("America/Los_Angeles", tt.at); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.at, got, tt.want)
		}
	}
	if got := f.Offset("UTC", time.Now()); got != "+0000" { // no transitions at all
		t.Errorf("UTC: %s", got)
	}
	if got := f.Offset("Asia/Kathmandu", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); got != "+0545" {
		t.Errorf("Kathmandu: %s", got)
	}
}

// TestOffsetConcurrentFirstUse has goroutines ask zones for the first time together (each
// new zone copies the zone map): every answer must be the zone's offset, under -race.
func TestOffsetConcurrentFirstUse(t *testing.T) {
	names := []string{"Europe/Zurich", "America/Los_Angeles", "Asia/Kathmandu", "Australia/Sydney",
		"America/St_Johns", "Pacific/Chatham", "Asia/Kolkata", "UTC", "Mars/Olympus_Mons"}
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	want := make([]string, len(names))
	for i, n := range names {
		if loc, err := time.LoadLocation(n); err == nil {
			_, off := now.In(loc).Zone()
			want[i] = lookup.FormatOffset(off)
		}
	}
	for range 20 {
		f := tz.New() // a fresh zone map; no polygons are loaded for Offset
		start := make(chan struct{})
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				<-start
				for i := range 50 {
					k := (i + g) % len(names)
					if got := f.Offset(names[k], now); got != want[k] {
						t.Errorf("%s: %q; want %q", names[k], got, want[k])
						return
					}
				}
			})
		}
		close(start)
		wg.Wait()
	}
}

func TestOffsetEndIsTheNextTransition(t *testing.T) {
	z := tz.New()
	ny := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	end := z.OffsetEnd("America/New_York", ny)
	want := time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC) // 02:00 EDT, the end of daylight saving
	if end != want.UnixNano() {
		t.Errorf("New York's offset at %s ends %s, want %s", ny, time.Unix(0, end).UTC(), want)
	}
	if off := z.Offset("America/New_York", time.Unix(0, end-1)); off != "-0400" {
		t.Errorf("just before the end: %s, want -0400", off)
	}
	if off := z.Offset("America/New_York", time.Unix(0, end)); off != "-0500" {
		t.Errorf("at the end: %s, want -0500", off)
	}
	for _, name := range []string{"", "Not/AZone", "Asia/Kolkata"} {
		if end := z.OffsetEnd(name, ny); end != math.MaxInt64 {
			t.Errorf("%q: offset ends %d, want never", name, end)
		}
	}
}
