package dbfile_test

import (
	"math/rand/v2"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/apistack/platform/services/geoip/internal/dbfile"
	"github.com/apistack/platform/services/geoip/internal/mmdb"
	"github.com/apistack/platform/services/geoip/internal/testdb"
	"github.com/apistack/platform/services/geoip/internal/tz"
)

// An MMDB opened to serve names its records' zones when it loads, the zones the polygons
// give at lookup time: the records (and so the answers) are those of the file read as it
// is and completed by the time zone finder, and the file says it needs no polygons.
func TestMMDBZonesNamedAtLoadAreThePolygons(t *testing.T) {
	if testing.Short() {
		t.Skip("full-data test skipped in -short mode")
	}
	path := testdb.MMDB(t, testdb.IPv4)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	named, err := dbfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer named.Close()
	// The polygons are freed, and the IPv4 index (5 MiB) and the zone table (2.5 MB) are
	// off the heap: at geoip's GOGC each live megabyte would let the server's heap grow by two.
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 2<<20 {
		t.Errorf("the heap grew by %d KB to open the MMDB", grew>>10)
	}
	if !named.Info().ZoneNames {
		t.Error("the DB-IP file does not say every located record has a zone: the server would load the polygons")
	}
	raw, err := mmdb.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	zones := tz.New()
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(5, 6))
	located := 0
	for range 200_000 {
		a := netip.AddrFrom4([4]byte{byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32())})
		got, err := named.Lookup(a)
		if err != nil {
			t.Fatal(err)
		}
		want, err := raw.Lookup(a)
		if err != nil {
			t.Fatal(err)
		}
		if want.TimeZone != "" {
			t.Fatalf("%s: the file names zone %q; the test expects DB-IP's files, which name none", a, want.TimeZone)
		}
		if want.HasLocation {
			located++
		}
		if got, want := zones.Resolve(got, now), zones.Resolve(want, now); got.TimeZone != want.TimeZone || got.UTCOffset != want.UTCOffset || got.City != want.City || got.Network != want.Network {
			t.Fatalf("%s: named at load %+v, by the polygons %+v", a, got, want)
		}
	}
	if located < 100_000 {
		t.Fatalf("only %d located records: the test does not test", located)
	}
}
