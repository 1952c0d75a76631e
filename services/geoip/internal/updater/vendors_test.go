package updater_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/apistack/platform/services/geoip/internal/asn"
	"github.com/apistack/platform/services/geoip/internal/dbfile"
	"github.com/apistack/platform/services/geoip/internal/lookup"
	"github.com/apistack/platform/services/geoip/internal/updater"
)

// The vendors' endpoints as their public documentation describes them, served on
// loopback (no test reaches the internet):
//
//   - IP2Location: GET /download/?token=T&file=PRODUCT answers a zip holding the BIN, or,
//     with status 200, the text "NO PERMISSION" for a bad token.
//   - MaxMind: GET /geoip/databases/{EditionID}/download?suffix=tar.gz with HTTP Basic
//     auth (account ID, license key) answers 302 to a presigned storage URL (another
//     host) serving EDITION_YYYYMMDD.tar.gz, which holds EDITION_YYYYMMDD/EDITION.mmdb
//     beside licence texts; suffix=tar.gz.sha256 answers "<hex>  EDITION_YYYYMMDD.tar.gz";
//     bad credentials get 401 with a short error text.
//   - DB-IP: GET /free/dbip-city-lite-YYYY-MM.mmdb.gz, a gzipped MMDB, 404 until the
//     month's file is published.
//
// Every file is served with ETag and Last-Modified and answers 304 to a request that
// names the current one (If-None-Match, If-Modified-Since), as static storage does.
type vendorFake struct {
	source  string
	edition string // GeoLite2-City, dbip-city-lite, DB11LITEBINIPV6
	month   string // DB-IP: the newest month published, YYYY-MM

	mu       sync.Mutex
	archive  []byte
	sum      string // MaxMind's published SHA-256; "" = the archive's
	etag     string
	modified time.Time
	refuse   int // a status answered to every request (401, 403); 0: none

	downloads, notModified atomic.Int32
	authAtStorage          atomic.Bool

	api, storage *httptest.Server
}

const (
	account = "424242"
	license = "l1censeK3y"
	token   = "s3cret"
)

func newVendorFake(t *testing.T, source string) *vendorFake {
	f := &vendorFake{source: source}
	switch source {
	case updater.SourceIP2Location:
		f.edition = "DB11LITEBINIPV6"
	case updater.SourceMaxMind:
		f.edition = "GeoLite2-City"
	case updater.SourceDBIP:
		f.edition, f.month = "dbip-city-lite", "2026-12"
	}
	f.storage = httptest.NewServer(http.HandlerFunc(f.serveFile))
	f.api = httptest.NewServer(http.HandlerFunc(f.serveAPI))
	t.Cleanup(f.api.Close)
	t.Cleanup(f.storage.Close)
	return f
}

// publish packs db as the vendor does, under a new ETag.
func (f *vendorFake) publish(t *testing.T, db []byte) {
	t.Helper()
	var archive []byte
	switch f.source {
	case updater.SourceIP2Location:
		archive = zipOf(t, map[string][]byte{"LICENSE_LITE.TXT": []byte("licence"), "IP2LOCATION-LITE-DB11.IPV6.BIN": db})
	case updater.SourceMaxMind:
		archive = tarGzOf(t, f.edition+"_20261204", map[string][]byte{"COPYRIGHT.txt": []byte("c"), f.edition + ".mmdb": db, "LICENSE.txt": []byte("licence")})
	case updater.SourceDBIP:
		archive = gzOf(t, db)
	}
	f.setArchive(archive)
}

func (f *vendorFake) setArchive(archive []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.archive = archive
	f.sum = ""
	f.etag = fmt.Sprintf(`"%x"`, sha256.Sum256(archive))
	f.modified = f.modified.Add(time.Hour)
	if f.modified.Before(time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)) {
		f.modified = time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	}
}

func (f *vendorFake) serveAPI(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	refuse, sum, archive := f.refuse, f.sum, f.archive
	f.mu.Unlock()
	switch f.source {
	case updater.SourceIP2Location:
		if r.URL.Path != "/download/" || r.URL.Query().Get("token") != token || refuse != 0 || r.URL.Query().Get("file") != f.edition {
			w.Write([]byte("NO PERMISSION"))
			return
		}
		f.serveFile(w, r)
	case updater.SourceMaxMind:
		if r.URL.Path != "/geoip/databases/"+f.edition+"/download" {
			http.NotFound(w, r)
			return
		}
		if user, pass, ok := r.BasicAuth(); !ok || user != account || pass != license || refuse != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"code":"ACCOUNT_ID_OR_LICENSE_KEY_INVALID","error":"Invalid account ID or license key"}`))
			return
		}
		name := f.edition + "_20261204.tar.gz"
		switch r.URL.Query().Get("suffix") {
		case "tar.gz":
			http.Redirect(w, r, f.storage.URL+"/r2/"+name+"?X-Amz-Signature=pr3signed", http.StatusFound)
		case "tar.gz.sha256":
			if sum == "" {
				s := sha256.Sum256(archive)
				sum = hex.EncodeToString(s[:])
			}
			fmt.Fprintf(w, "%s  %s\n", sum, name)
		default:
			http.Error(w, "bad suffix", http.StatusBadRequest)
		}
	case updater.SourceDBIP:
		if refuse != 0 {
			w.WriteHeader(refuse)
			return
		}
		if r.URL.Path != "/free/"+f.edition+"-"+f.month+".mmdb.gz" {
			http.NotFound(w, r)
			return
		}
		f.serveFile(w, r)
	}
}

// serveFile answers as static storage does: the file with its validators, or 304.
func (f *vendorFake) serveFile(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" && strings.HasPrefix(r.URL.Path, "/r2/") {
		f.authAtStorage.Store(true)
	}
	f.mu.Lock()
	archive, etag, modified := f.archive, f.etag, f.modified
	f.mu.Unlock()
	ims, _ := http.ParseTime(r.Header.Get("If-Modified-Since"))
	if r.Header.Get("If-None-Match") == etag || (!ims.IsZero() && !modified.After(ims)) {
		f.notModified.Add(1)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	f.downloads.Add(1)
	w.Header().Set("ETag", etag)
	w.Header().Set("Last-Modified", modified.Format(http.TimeFormat))
	w.Write(archive)
}

func (f *vendorFake) url() string {
	switch f.source {
	case updater.SourceIP2Location:
		return f.api.URL + "/download/"
	case updater.SourceDBIP:
		return f.api.URL + "/free/"
	}
	return f.api.URL
}

func tarGzOf(t testing.TB, dir string, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	tw.WriteHeader(&tar.Header{Name: dir + "/", Typeflag: tar.TypeDir, Mode: 0o755})
	for _, name := range []string{"COPYRIGHT.txt", "LICENSE.txt"} { // the small ones around the database
		if data, ok := files[name]; ok {
			tw.WriteHeader(&tar.Header{Name: dir + "/" + name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))})
			tw.Write(data)
		}
	}
	for name, data := range files {
		if strings.HasSuffix(name, ".mmdb") {
			tw.WriteHeader(&tar.Header{Name: dir + "/" + name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))})
			tw.Write(data)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gzOf(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	gz.Write(data)
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// mmdbWithCity is a GeoLite2-City-layout database placing 8.8.8.0/24 in city.
func mmdbWithCity(t testing.TB, city string) []byte {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "GeoLite2-City", RecordSize: 28})
	if err != nil {
		t.Fatal(err)
	}
	_, n, _ := net.ParseCIDR("8.8.8.0/24")
	if err := tree.Insert(n, mmdbtype.Map{
		"country":  mmdbtype.Map{"iso_code": mmdbtype.String("US")},
		"city":     mmdbtype.Map{"names": mmdbtype.Map{"en": mmdbtype.String(city)}},
		"location": mmdbtype.Map{"latitude": mmdbtype.Float64(37.4), "longitude": mmdbtype.Float64(-122), "time_zone": mmdbtype.String("America/Los_Angeles")},
	}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := tree.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// mmdbWithOrg is a GeoLite2-ASN-layout database placing 8.8.8.0/24 in org's AS.
func mmdbWithOrg(t testing.TB, org string) []byte {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "GeoLite2-ASN", RecordSize: 24})
	if err != nil {
		t.Fatal(err)
	}
	_, n, _ := net.ParseCIDR("8.8.8.0/24")
	if err := tree.Insert(n, mmdbtype.Map{"autonomous_system_number": mmdbtype.Uint32(15169), "autonomous_system_organization": mmdbtype.String(org)}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := tree.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// cityDB is a city database in the vendor's format, and the target's extension.
func cityDB(t testing.TB, source, city string) ([]byte, string) {
	if source == updater.SourceIP2Location {
		return binWithCity(t, city), ".BIN"
	}
	return mmdbWithCity(t, city), ".mmdb"
}

type vendorRig struct {
	fake   *vendorFake
	m      *dbfile.Manager
	u      *updater.Updater
	reg    *prometheus.Registry
	target string
	before []byte // the database serving before the update under test
	cfg    updater.Config
}

// newVendorRig serves "Before" from the target (installed by a first update, which
// also records the vendor's validators), with an updater speaking to fake.
func newVendorRig(t *testing.T, source string) *vendorRig {
	t.Helper()
	f := newVendorFake(t, source)
	before, ext := cityDB(t, source, "Before")
	f.publish(t, before)
	target := filepath.Join(t.TempDir(), "data", "city"+ext)
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, before, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := dbfile.New(dbfile.Config{Path: target, PollInterval: -1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	r := &vendorRig{fake: f, m: m, target: target, before: before}
	r.cfg = updater.Config{Source: source, Token: token, AccountID: account, LicenseKey: license,
		Databases: []updater.Database{{Name: "city", Edition: f.edition, Target: target, Installer: m}},
		URL:       f.url(), Logger: quiet, Now: func() time.Time { return time.Date(2026, 12, 7, 15, 0, 0, 0, time.UTC) }}
	r.u, r.reg = r.newUpdater(t)
	return r
}

func (r *vendorRig) newUpdater(t *testing.T) (*updater.Updater, *prometheus.Registry) {
	t.Helper()
	u, err := updater.New(r.cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if err := u.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	return u, reg
}

func (r *vendorRig) update(t *testing.T) updater.Result {
	t.Helper()
	res := r.u.UpdateEach(context.Background())
	if len(res) != 1 {
		t.Fatalf("%d results", len(res))
	}
	return res[0]
}

var vendors = []string{updater.SourceIP2Location, updater.SourceMaxMind, updater.SourceDBIP}

// A new file at the source is downloaded, checked, and swapped in while lookups go on:
// every lookup answers, from the old database or the new one, never an error.
func TestEachVendorUpdateSwapsInTheNewDatabase(t *testing.T) {
	for _, source := range vendors {
		t.Run(source, func(t *testing.T) {
			r := newVendorRig(t, source)
			after, _ := cityDB(t, source, "After")
			r.fake.publish(t, after)

			stop := make(chan struct{})
			var lookups sync.WaitGroup
			var bad atomic.Value
			lookups.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					rec, err := r.m.Lookup(netip.MustParseAddr("8.8.8.8"))
					if err != nil || (rec.City != "Before" && rec.City != "After") {
						bad.Store(fmt.Sprintf("%q %v", rec.City, err))
					}
				}
			})
			res := r.update(t)
			close(stop)
			lookups.Wait()
			if res.Outcome != updater.Updated || res.Err != nil {
				t.Fatalf("%+v", res)
			}
			if v := bad.Load(); v != nil {
				t.Errorf("a lookup during the swap answered %s", v)
			}
			if got := city(t, r.m); got != "After" {
				t.Errorf("city %q after the update", got)
			}
			if got, _ := os.ReadFile(r.target); !bytes.Equal(got, after) {
				t.Error("the target is not the new database")
			}
			if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(r.target), ".geoip-*")); len(leftovers) > 0 {
				t.Errorf("temporary files left: %v", leftovers)
			}
			if r.fake.authAtStorage.Load() {
				t.Error("the license key was sent to the storage host the download redirected to")
			}
			if got := counterValue(t, r.reg, "geoip_database_update_failures_total"); got != 0 {
				t.Errorf("failures %v", got)
			}
		})
	}
}

// A daily check of an unchanged file asks conditionally and downloads nothing, in this
// process and in the next (`geoip update` from cron): the validators are kept on disk.
func TestEachVendorUnchangedFileIsNotDownloaded(t *testing.T) {
	for _, source := range vendors {
		t.Run(source, func(t *testing.T) {
			r := newVendorRig(t, source)
			if res := r.update(t); res.Outcome != updater.Updated {
				t.Fatalf("first check: %+v", res)
			}
			version, downloads := r.m.Version(), r.fake.downloads.Load()
			if res := r.update(t); res.Outcome != updater.Unchanged || res.Err != nil {
				t.Fatalf("second check: %+v", res)
			}
			next, _ := r.newUpdater(t) // a new process: only the state on disk remembers
			if res := next.UpdateEach(context.Background())[0]; res.Outcome != updater.Unchanged {
				t.Fatalf("check from a new process: %+v", res)
			}
			if got := r.fake.downloads.Load(); got != downloads {
				t.Errorf("%d downloads after the checks of an unchanged file, want %d", got, downloads)
			}
			if got := r.fake.notModified.Load(); got != 2 {
				t.Errorf("%d answers 304, want 2", got)
			}
			if r.m.Version() != version {
				t.Error("an unchanged file was swapped in again")
			}
			if got := counterValue(t, r.reg, "geoip_database_update_unchanged_total"); got != 1 {
				t.Errorf("unchanged %v", got)
			}
			// The file removed by hand: the next check downloads it whatever the validators say.
			os.Remove(r.target)
			if res := r.update(t); res.Outcome != updater.Updated {
				t.Errorf("check with the file gone: %+v", res)
			}
		})
	}
}

// Each failure leaves the database serving and its file as they were.
func TestEachVendorFailureKeepsTheServingDatabase(t *testing.T) {
	type failure struct {
		name    string
		break_  func(t *testing.T, r *vendorRig)
		wantErr map[string]string // by source
	}
	failures := []failure{
		{"bad checksum", func(t *testing.T, r *vendorRig) {
			after, _ := cityDB(t, r.fake.source, "After")
			r.fake.publish(t, after)
			r.fake.mu.Lock()
			defer r.fake.mu.Unlock()
			if r.fake.source == updater.SourceMaxMind {
				r.fake.sum = strings.Repeat("ab", 32) // published for another file
				return
			}
			// IP2Location and DB-IP publish no checksum file: the archive's own
			// checksums (zip's and gzip's CRC-32) catch a damaged byte.
			a := append([]byte(nil), r.fake.archive...)
			a[len(a)-8] ^= 0xff // gzip's CRC-32 of the data
			if r.fake.source == updater.SourceIP2Location {
				a = zipWithDamagedData(t, after)
			}
			r.fake.archive = a
		}, map[string]string{
			updater.SourceMaxMind:     "the published one " + strings.Repeat("ab", 32),
			updater.SourceIP2Location: "zip: checksum error",
			updater.SourceDBIP:        "gzip: invalid checksum",
		}},
		{"truncated archive", func(t *testing.T, r *vendorRig) {
			after, _ := cityDB(t, r.fake.source, "After")
			r.fake.publish(t, after)
			r.fake.mu.Lock()
			defer r.fake.mu.Unlock()
			r.fake.archive = r.fake.archive[:len(r.fake.archive)*2/3]
			r.fake.sum = sumOf(r.fake.archive) // a checksum for the short file: the archive itself must refuse it
		}, map[string]string{
			updater.SourceMaxMind:     "unexpected EOF",
			updater.SourceIP2Location: "unpack",
			updater.SourceDBIP:        "unexpected EOF",
		}},
		{"auth refused", func(t *testing.T, r *vendorRig) {
			after, _ := cityDB(t, r.fake.source, "After")
			r.fake.publish(t, after)
			r.fake.mu.Lock()
			defer r.fake.mu.Unlock()
			r.fake.refuse = http.StatusUnauthorized
			if r.fake.source == updater.SourceDBIP {
				r.fake.refuse = http.StatusForbidden // no key: a refusal is the host's, such as a block
			}
		}, map[string]string{
			updater.SourceMaxMind:     `refused the credentials: status 401 Unauthorized: "{\"code\":\"ACCOUNT_ID_OR_LICENSE_KEY_INVALID\"`,
			updater.SourceIP2Location: `answered "NO PERMISSION"`,
			updater.SourceDBIP:        "refused the credentials: status 403 Forbidden",
		}},
	}
	for _, source := range vendors {
		for _, fl := range failures {
			t.Run(source+"/"+fl.name, func(t *testing.T) {
				r := newVendorRig(t, source)
				if res := r.update(t); res.Outcome != updater.Updated {
					t.Fatalf("first check: %+v", res)
				}
				version := r.m.Version()
				fl.break_(t, r)
				res := r.update(t)
				if res.Outcome != updater.Failed || res.Err == nil || !strings.Contains(res.Err.Error(), fl.wantErr[source]) {
					t.Fatalf("%+v; want a failure saying %q", res, fl.wantErr[source])
				}
				for _, secret := range []string{token, license} {
					if strings.Contains(res.Err.Error(), secret) {
						t.Errorf("the error leaks a secret: %v", res.Err)
					}
				}
				if r.m.Version() != version || city(t, r.m) != "Before" {
					t.Error("a failed update changed the serving database")
				}
				if got, _ := os.ReadFile(r.target); !bytes.Equal(got, r.before) {
					t.Error("a failed update changed the database file")
				}
				if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(r.target), ".geoip-*")); len(leftovers) > 0 {
					t.Errorf("temporary files left: %v", leftovers)
				}
				if got := counterValue(t, r.reg, "geoip_database_update_failures_total"); got != 1 {
					t.Errorf("failures %v", got)
				}
				// Repaired at the source, the next check installs the new file: a
				// failure records no validators that would make it look current.
				r.fake.mu.Lock()
				r.fake.refuse = 0
				r.fake.mu.Unlock()
				after, _ := cityDB(t, source, "After")
				r.fake.publish(t, after)
				if res := r.update(t); res.Outcome != updater.Updated || city(t, r.m) != "After" {
					t.Errorf("after the repair: %+v, city %q", res, city(t, r.m))
				}
			})
		}
	}
}

func sumOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// zipWithDamagedData is a zip of db, stored uncompressed, with a byte of the data flipped:
// the zip's CRC-32 no longer matches.
func zipWithDamagedData(t *testing.T, db []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: "IP2LOCATION-LITE-DB11.IPV6.BIN", Method: zip.Store})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(db)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	out := buf.Bytes()
	i := bytes.Index(out, db[:64])
	if i < 0 {
		t.Fatal("stored data not found")
	}
	out[i+len(db)/2] ^= 0xff
	return out
}

// MaxMind's city and ASN editions are kept current by one updater: GeoLite2-ASN goes to
// the ASN database's file and manager.
func TestMaxMindKeepsCityAndASNCurrent(t *testing.T) {
	cityFake := newVendorFake(t, updater.SourceMaxMind)
	cityFake.publish(t, mmdbWithCity(t, "After"))
	asnFake := newVendorFake(t, updater.SourceMaxMind)
	asnFake.edition = "GeoLite2-ASN"
	asnFake.setArchive(tarGzOf(t, "GeoLite2-ASN_20261204", map[string][]byte{"GeoLite2-ASN.mmdb": mmdbWithOrg(t, "New Org")}))
	// One host serves both editions, as download.maxmind.com does.
	mux := http.NewServeMux()
	mux.Handle("/geoip/databases/GeoLite2-City/", http.HandlerFunc(cityFake.serveAPI))
	mux.Handle("/geoip/databases/GeoLite2-ASN/", http.HandlerFunc(asnFake.serveAPI))
	api := httptest.NewServer(mux)
	defer api.Close()

	dir := t.TempDir()
	asnPath := filepath.Join(dir, "GeoLite2-ASN.mmdb")
	if err := os.WriteFile(asnPath, mmdbWithOrg(t, "Old Org"), 0o644); err != nil {
		t.Fatal(err)
	}
	asnDB, err := dbfile.New(dbfile.Config{Path: asnPath, Name: "asn", MetricsName: "asn_database", PollInterval: -1, Logger: quiet,
		Open: func(p string) (lookup.DB, error) { return asn.Load(p) }})
	if err != nil {
		t.Fatal(err)
	}
	defer asnDB.Close()
	cityPath := filepath.Join(dir, "GeoLite2-City.mmdb")
	// No manager serves the city database here (as in `geoip update`): the file installer
	// verifies it and puts it in place.
	u, err := updater.New(updater.Config{Source: updater.SourceMaxMind, AccountID: account, LicenseKey: license, URL: api.URL, Logger: quiet,
		Databases: []updater.Database{
			{Name: "city", Edition: "GeoLite2-City", Target: cityPath, Installer: dbfile.FileInstaller{}},
			{Name: "asn", Edition: "GeoLite2-ASN", Target: asnPath, Installer: asnDB},
		}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range u.UpdateEach(context.Background()) {
		if r.Outcome != updater.Updated {
			t.Errorf("%+v", r)
		}
	}
	rec, err := asnDB.Lookup(netip.MustParseAddr("8.8.8.8"))
	if err != nil || rec.Org != "New Org" {
		t.Errorf("asn %q %v", rec.Org, err)
	}
	m, err := dbfile.New(dbfile.Config{Path: cityPath, PollInterval: -1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := city(t, m); got != "After" {
		t.Errorf("city %q", got)
	}
}

// DB-IP publishes a month's file in its first days: until then last month's is the
// newest, and the updater falls back to it.
func TestDBIPFallsBackToLastMonth(t *testing.T) {
	r := newVendorRig(t, updater.SourceDBIP)
	r.fake.month = "2026-11"
	r.cfg.Now = func() time.Time { return time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC) }
	r.u, r.reg = r.newUpdater(t)
	after, _ := cityDB(t, updater.SourceDBIP, "November")
	r.fake.publish(t, after)
	if res := r.update(t); res.Outcome != updater.Updated || city(t, r.m) != "November" {
		t.Fatalf("%+v, city %q", res, city(t, r.m))
	}
	// Nothing published in either month: a failure, the database untouched.
	r.fake.month = "2026-09"
	res := r.update(t)
	if res.Outcome != updater.Failed || !strings.Contains(res.Err.Error(), "404") || city(t, r.m) != "November" {
		t.Errorf("%+v, city %q", res, city(t, r.m))
	}
}
