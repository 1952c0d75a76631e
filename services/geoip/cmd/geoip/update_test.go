package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// dbipMirror answers as download.db-ip.com/free/ does, on loopback: this month's
// dbip-city-lite and dbip-asn-lite files (gzipped MMDBs) with validators, 304 for a
// request naming them, 404 for any other name; refuse answers 403 to everything.
type dbipMirror struct {
	files     map[string][]byte
	refuse    atomic.Bool
	downloads atomic.Int32
}

func (d *dbipMirror) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if d.refuse.Load() {
		http.Error(w, "blocked", http.StatusForbidden)
		return
	}
	body, ok := d.files[strings.TrimPrefix(r.URL.Path, "/free/")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if r.Header.Get("If-None-Match") == `"v1"` {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	d.downloads.Add(1)
	w.Header().Set("ETag", `"v1"`)
	w.Write(body)
}

func gzipped(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(data)
	zw.Close()
	return buf.Bytes()
}

// `geoip update` checks each database once and exits: 0 when each is current (new or
// unchanged, a line each on stdout), an error when one failed, the files then as they were.
func TestUpdateCommandDownloadsOnceAndExits(t *testing.T) {
	src := t.TempDir()
	cityMMDB := writeMMDB(t, "DBIP-City-Lite", mmdbtype.Map{"country_code": mmdbtype.String("AU"), "city": mmdbtype.String("Downloaded"),
		"latitude": mmdbtype.Float64(-33.8688), "longitude": mmdbtype.Float64(151.209)})
	asnMMDB := filepath.Join(src, "asn.mmdb")
	writeASN(t, asnMMDB, "Downloaded Org")
	month := time.Now().UTC().Format("2006-01")
	mirror := &dbipMirror{files: map[string][]byte{
		"dbip-city-lite-" + month + ".mmdb.gz": gzipped(t, cityMMDB),
		"dbip-asn-lite-" + month + ".mmdb.gz":  gzipped(t, asnMMDB),
	}}
	srv := httptest.NewServer(mirror)
	defer srv.Close()
	dir := t.TempDir()
	env := envOf(map[string]string{"GEOIP_UPDATE_SOURCE": "dbip", "GEOIP_UPDATE_URL": srv.URL + "/free/", "GEOIP_UPDATE_DIR": dir, "LOG_LEVEL": "error"})

	var out bytes.Buffer
	if err := run(context.Background(), []string{"update"}, env, &out, io.Discard); err != nil {
		t.Fatalf("update: %v\n%s", err, out.String())
	}
	cityPath, asnPath := filepath.Join(dir, "dbip-city-lite.mmdb"), filepath.Join(dir, "dbip-asn-lite.mmdb")
	for _, want := range []string{"city dbip-city-lite: updated: " + cityPath, "asn dbip-asn-lite: updated: " + asnPath} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output %q lacks %q", out.String(), want)
		}
	}
	// What it wrote is what serve opens from GEOIP_UPDATE_DIR.
	app, err := build(env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if rec, err := app.DB.Lookup(netip.MustParseAddr("1.1.1.1")); err != nil || rec.City != "Downloaded" {
		t.Errorf("city %q %v", rec.City, err)
	}
	if app.ASN == nil || app.ASN.Info().Source != asnPath {
		t.Fatalf("the downloaded ASN database is not served")
	}

	out.Reset()
	if err := run(context.Background(), []string{"update"}, env, &out, io.Discard); err != nil {
		t.Fatalf("second update: %v", err)
	}
	if strings.Count(out.String(), ": unchanged: ") != 2 || mirror.downloads.Load() != 2 {
		t.Errorf("second run downloaded again (%d downloads): %s", mirror.downloads.Load(), out.String())
	}

	mirror.refuse.Store(true)
	before, _ := os.ReadFile(cityPath)
	out.Reset()
	err = run(context.Background(), []string{"update"}, env, &out, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "2 of 2 databases failed") || !strings.Contains(out.String(), "city dbip-city-lite: failed: ") {
		t.Errorf("refused update: %v\n%s", err, out.String())
	}
	if after, _ := os.ReadFile(cityPath); !bytes.Equal(before, after) {
		t.Error("a failed update changed the file")
	}
}

func TestUpdateCommandHelpAndMisuse(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		var out bytes.Buffer
		if err := run(context.Background(), []string{"update", arg}, envOf(nil), &out, io.Discard); err != nil || !strings.Contains(out.String(), "geoip update") {
			t.Errorf("update %s: %v %q", arg, err, out.String())
		}
	}
	if err := run(context.Background(), []string{"update"}, envOf(nil), io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "GEOIP_UPDATE_SOURCE") {
		t.Errorf("update without a source: %v", err)
	}
	if err := run(context.Background(), []string{"update", "extra"}, envOf(map[string]string{"GEOIP_UPDATE_SOURCE": "dbip"}), io.Discard, io.Discard); err == nil {
		t.Error("update with an argument accepted")
	}
	if err := run(context.Background(), []string{"update"}, envOf(map[string]string{"GEOIP_UPDATE_SOURCE": "maxmind", "MAXMIND_ACCOUNT_ID": "1"}), io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "MAXMIND_LICENSE_KEY") {
		t.Errorf("maxmind without a key: %v", err)
	}
}

// /healthz says how old each database is and whether it is older than GEOIP_DB_MAX_AGE,
// staying 200 either way; /metrics has the age by database.
func TestHealthzAndMetricsSayTheDatabaseAge(t *testing.T) {
	asnPath := filepath.Join(t.TempDir(), "asn.mmdb")
	writeASN(t, asnPath, "Org") // built now
	for _, tc := range []struct {
		maxAge    string
		cityStale bool
	}{{"", true}, {"3650d", false}} {
		app, err := build(envOf(map[string]string{"GEOIP_DB_MAX_AGE": tc.maxAge, "GEOIP_ASN_DB": asnPath}), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		h := app.HTTP.Handler()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/healthz", nil))
		var body struct {
			Status    string              `json:"status"`
			Databases map[string]dbHealth `json:"databases"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != 200 || body.Status != "ok" {
			t.Fatalf("max age %q: %d %s %v", tc.maxAge, w.Code, w.Body, err)
		}
		city, asnH := body.Databases["city"], body.Databases["asn"]
		if city.Stale != tc.cityStale || city.BuildDate != app.DB.Info().BuildDate.Format(time.DateOnly) || city.AgeDays < 1 {
			t.Errorf("max age %q: city %+v", tc.maxAge, city)
		}
		if tc.cityStale && !strings.Contains(city.Message, "embedded sample") {
			t.Errorf("stale sample's message %q", city.Message)
		}
		if asnH.Stale || asnH.AgeDays != 0 || asnH.BuildDate == "" {
			t.Errorf("max age %q: asn %+v", tc.maxAge, asnH)
		}
		w = httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		for _, want := range []string{`geoip_database_age_seconds{database="city"} `, `geoip_database_age_seconds{database="asn"} `, "geoip_database_build_timestamp_seconds "} {
			if !strings.Contains(w.Body.String(), want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
		app.Close()
	}
}
