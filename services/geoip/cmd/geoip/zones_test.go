package main

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"

	"github.com/apistack/platform/libs/apiserver/testkit"
	"github.com/apistack/platform/services/geoip/internal/config"
	"github.com/apistack/platform/services/geoip/internal/tz"
)

// The embedded sample names every record's zone: serving it never loads the polygons; nor
// does a flat DB-IP MMDB, whose zones are named when it loads. A database without zone
// names otherwise (a GeoIP2-layout MMDB) gets them loaded in the background.
func TestTimeZonePolygonsLoadOnlyWhenNeeded(t *testing.T) {
	log := testkit.Logger()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	zones := tz.New()
	db, err := openDatabase(config.Config{WatchInterval: time.Hour, UpdateInterval: 24 * time.Hour}, log, nil, zones)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	wg.Go(func() { warmZones(ctx, db, zones, log) })
	if !db.Info().ZoneNames {
		t.Fatal("the embedded sample does not name every zone")
	}
	for _, a := range []string{"8.8.8.8", "1.1.1.1", "2001:4860:4860::8888", "81.2.69.160"} {
		rec, err := db.Lookup(netip.MustParseAddr(a))
		if err != nil {
			t.Fatal(err)
		}
		if rec.HasLocation && (rec.TimeZone == "" || rec.UTCOffset == "") {
			t.Errorf("%s: no zone: %+v", a, rec)
		}
	}
	time.Sleep(200 * time.Millisecond) // a background warm-up would have started by now
	if zones.Loaded() {
		t.Error("the polygons were loaded for a database that names every zone")
	}

	// A flat MMDB without zone names (DB-IP's layout): named when it loads, no polygons kept.
	flat := writeMMDB(t, "city ipv4", mmdbtype.Map{"country_code": mmdbtype.String("AU"), "state1": mmdbtype.String("New South Wales"),
		"city": mmdbtype.String("Sydney"), "latitude": mmdbtype.Float64(-33.8688), "longitude": mmdbtype.Float64(151.209)})
	zones2 := tz.New()
	db2, err := openDatabase(config.Config{DBPath: flat, WatchInterval: time.Hour, UpdateInterval: 24 * time.Hour}, log, nil, zones2)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	wg.Go(func() { warmZones(ctx, db2, zones2, log) })
	if rec, _ := db2.Lookup(netip.MustParseAddr("1.1.1.1")); rec.TimeZone != "Australia/Sydney" || rec.UTCOffset == "" {
		t.Errorf("zone named at load: %q %q", rec.TimeZone, rec.UTCOffset)
	}
	time.Sleep(200 * time.Millisecond)
	if zones2.Loaded() {
		t.Error("the polygons were kept for a flat MMDB whose zones were named when it loaded")
	}

	// A GeoIP2-layout MMDB without zone names: the polygons are loaded in the background.
	nested := writeMMDB(t, "GeoLite2-City", mmdbtype.Map{"country": mmdbtype.Map{"iso_code": mmdbtype.String("AU")},
		"location": mmdbtype.Map{"latitude": mmdbtype.Float64(-33.8688), "longitude": mmdbtype.Float64(151.209)}})
	zones3 := tz.New()
	db3, err := openDatabase(config.Config{DBPath: nested, WatchInterval: time.Hour, UpdateInterval: 24 * time.Hour}, log, nil, zones3)
	if err != nil {
		t.Fatal(err)
	}
	defer db3.Close()
	wg.Go(func() { warmZones(ctx, db3, zones3, log) })
	deadline := time.Now().Add(60 * time.Second)
	for !zones3.Loaded() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !zones3.Loaded() {
		t.Error("the polygons were not loaded for a database without zone names")
	}
	if rec, _ := db3.Lookup(netip.MustParseAddr("1.1.1.1")); rec.TimeZone != "Australia/Sydney" {
		t.Errorf("zone from coordinates: %q", rec.TimeZone)
	}
}

// writeMMDB writes an IPv4 MMDB of one record for 1.1.1.0/24 and returns its path.
func writeMMDB(t *testing.T, dbType string, rec mmdbtype.Map) string {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: dbType, RecordSize: 28, IPVersion: 4})
	if err != nil {
		t.Fatal(err)
	}
	_, n, _ := net.ParseCIDR("1.1.1.0/24")
	if err := tree.Insert(n, rec); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "db.mmdb")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tree.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}
