package updater_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
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

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apistack/platform/libs/apiserver/testkit"
	"github.com/apistack/platform/services/geoip/internal/binwriter"
	"github.com/apistack/platform/services/geoip/internal/dbfile"
	"github.com/apistack/platform/services/geoip/internal/sample"
	"github.com/apistack/platform/services/geoip/internal/updater"
)

var quiet = testkit.Logger()

func binWithCity(t testing.TB, city string) []byte {
	t.Helper()
	b := binwriter.NewBuilder()
	id := b.Intern(binwriter.Location{Country: "US", City: city, Latitude: 37.4, Longitude: -122})
	if err := b.AddPrefix(netip.MustParsePrefix("8.8.8.0/24"), id); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := b.Write(&buf, binwriter.Options{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// corruptBody damages a BIN behind a valid header: the first IPv4 row's city
// points past the end of the file.
func corruptBody(good []byte) []byte {
	data := append([]byte(nil), good...)
	base4 := int(binary.LittleEndian.Uint32(data[9:])) - 1
	binary.LittleEndian.PutUint32(data[base4+4+2*4:], uint32(len(data)+4096))
	return data
}

func zipOf(t testing.TB, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, data := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// service imitates IP2Location's download endpoint: it checks token and product and
// answers with body.
type service struct {
	body     atomic.Pointer[[]byte]
	requests atomic.Int32
}

func (s *service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if r.URL.Query().Get("token") != "s3cret" || r.URL.Query().Get("file") != "DB11LITEBINIPV6" {
		io.WriteString(w, "NO PERMISSION")
		return
	}
	w.Header().Set("Content-Type", "application/zip")
	w.Write(*s.body.Load())
}

func setup(t *testing.T, token string) (*service, *dbfile.Manager, *updater.Updater, *prometheus.Registry, string) {
	t.Helper()
	svc := &service{}
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	m, err := dbfile.New(dbfile.Config{Fallback: sample.Open, PollInterval: -1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	target := filepath.Join(t.TempDir(), "data", "DB11LITEBINIPV6.BIN")
	u, err := updater.New(updater.Config{Token: token, Product: "DB11LITEBINIPV6", Target: target,
		URL: srv.URL + "/download/", Logger: quiet}, m)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if err := u.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	return svc, m, u, reg, target
}

func city(t *testing.T, m *dbfile.Manager) string {
	t.Helper()
	rec, err := m.Lookup(netip.MustParseAddr("8.8.8.8"))
	if err != nil {
		t.Fatal(err)
	}
	return rec.City
}

func TestUpdateDownloadsUnpacksAndSwaps(t *testing.T) {
	svc, m, u, reg, target := setup(t, "s3cret")
	bin := binWithCity(t, "Downloaded")
	body := zipOf(t, map[string][]byte{"LICENSE_LITE.TXT": []byte("licence"), "IP2LOCATION-LITE-DB11.IPV6.BIN": bin})
	svc.body.Store(&body)

	if err := u.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := city(t, m); got != "Downloaded" {
		t.Errorf("city %q after update", got)
	}
	if got, _ := os.ReadFile(target); !bytes.Equal(got, bin) {
		t.Error("target file is not the downloaded database")
	}
	if m.Info().Source != target {
		t.Errorf("serving %q", m.Info().Source)
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(target), ".geoip-*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
	if counterValue(t, reg, "geoip_database_update_failures_total") != 0 {
		t.Error("failure counted")
	}
}

func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func TestFailedUpdatesKeepTheCurrentDatabase(t *testing.T) {
	good := binWithCity(t, "Downloaded")
	tests := []struct {
		name    string
		token   string
		body    []byte
		wantErr string
		reason  string // the install refusal counted by the database manager; "": none
	}{
		{"service refuses", "wrong", nil, `answered "NO PERMISSION"`, ""},
		{"not a zip", "s3cret", []byte("PK but not really a zip"), "unpack", ""},
		{"no database in zip", "s3cret", zipOf(t, map[string][]byte{"README.TXT": []byte("x")}), "no .BIN", ""},
		{"corrupt database", "s3cret", zipOf(t, map[string][]byte{"X.BIN": good[:100]}), "install", "corrupt"},
		// A valid header before a corrupt body (issue 13, finding 5): the whole
		// file is walked before it is installed.
		{"body corrupt", "s3cret", zipOf(t, map[string][]byte{"X.BIN": corruptBody(good)}), "corrupt bin: ipv4 row 0", "corrupt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, m, u, reg, target := setup(t, tt.token)
			dbReg := prometheus.NewRegistry()
			if err := m.RegisterMetrics(dbReg); err != nil {
				t.Fatal(err)
			}
			svc.body.Store(&tt.body)
			before := m.Version()
			err := u.Update(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v; want one containing %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "wrong") {
				t.Errorf("error leaks the token: %v", err)
			}
			if m.Version() != before || m.Info().Source != sample.Source {
				t.Error("a failed update changed the database")
			}
			if _, err := os.Stat(target); !os.IsNotExist(err) {
				t.Errorf("a failed update wrote the target: %v", err)
			}
			if got := counterValue(t, reg, "geoip_database_update_failures_total"); got != 1 {
				t.Errorf("failures %v", got)
			}
			for reason, got := range refusals(t, dbReg) {
				if want := map[bool]float64{true: 1}[reason == tt.reason]; got != want {
					t.Errorf("install refusals for %s: %v, want %v", reason, got, want)
				}
			}
		})
	}
}

// refusals reads geoip_database_reload_failures_total by reason.
func refusals(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "geoip_database_reload_failures_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" {
					out[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no geoip_database_reload_failures_total")
	}
	return out
}

func TestDownloadErrorsDoNotLeakTheToken(t *testing.T) {
	m, err := dbfile.New(dbfile.Config{Fallback: sample.Open, PollInterval: -1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	u, err := updater.New(updater.Config{Token: "s3cret/+", Product: "DB11LITEBINIPV6",
		Target: filepath.Join(t.TempDir(), "x.BIN"), URL: "http://127.0.0.1:1/download/", Logger: quiet}, m)
	if err != nil {
		t.Fatal(err)
	}
	err = u.Update(context.Background())
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %v", err)
	}
}

func TestRunUpdatesAtStartWhenTheTargetIsMissing(t *testing.T) {
	svc, m, u, _, _ := setup(t, "s3cret")
	body := zipOf(t, map[string][]byte{"X.BIN": binWithCity(t, "At Start")})
	svc.body.Store(&body)
	swaps, stop := m.Subscribe()
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { u.Run(ctx); close(done) }()
	select {
	case <-swaps:
	case <-time.After(60 * time.Second):
		t.Fatal("no update within 60s")
	}
	cancel()
	<-done
	if got := city(t, m); got != "At Start" {
		t.Errorf("city %q", got)
	}
	if svc.requests.Load() != 1 {
		t.Errorf("%d downloads; want 1", svc.requests.Load())
	}
}

func TestConfigIsChecked(t *testing.T) {
	for name, cfg := range map[string]updater.Config{
		"no token":       {Product: "DB11LITEBINIPV6", Target: "x"},
		"no product":     {Token: "t", Target: "x"},
		"no target":      {Token: "t", Product: "p"},
		"interval short": {Token: "t", Product: "p", Target: "x", Interval: time.Second},
	} {
		if _, err := updater.New(cfg, nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// recordingInstaller notes each install before handing it on.
type recordingInstaller struct {
	next   updater.Installer
	events *[]string
}

func (r recordingInstaller) InstallFile(src, dst string) error {
	*r.events = append(*r.events, "install "+filepath.Base(src))
	return r.next.InstallFile(src, dst)
}

// TestUnpackedDatabaseIsSyncedBeforeInstall: the unpacked database is flushed to disk,
// whole, before the installer renames it over the serving file; a crash after the rename
// then finds the new file complete. A failing sync installs nothing.
func TestUnpackedDatabaseIsSyncedBeforeInstall(t *testing.T) {
	svc := &service{}
	srv := httptest.NewServer(svc)
	defer srv.Close()
	m, err := dbfile.New(dbfile.Config{Fallback: sample.Open, PollInterval: -1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	bin := binWithCity(t, "Synced")
	body := zipOf(t, map[string][]byte{"IP2LOCATION-LITE-DB11.IPV6.BIN": bin})
	svc.body.Store(&body)
	target := filepath.Join(t.TempDir(), "DB11LITEBINIPV6.BIN")
	var events []string
	u, err := updater.New(updater.Config{Token: "s3cret", Product: "DB11LITEBINIPV6", Target: target,
		URL: srv.URL + "/download/", Logger: quiet}, recordingInstaller{m, &events})
	if err != nil {
		t.Fatal(err)
	}
	var syncErr error
	updater.SetSyncFile(u, func(f *os.File) error {
		st, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, fmt.Sprintf("sync %s %d bytes", filepath.Base(f.Name()), st.Size()))
		if syncErr != nil {
			return syncErr
		}
		return f.Sync()
	})

	if err := u.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 || !strings.HasPrefix(events[0], "sync ") || !strings.HasPrefix(events[1], "install ") {
		t.Fatalf("events %q, want a sync, then the install", events)
	}
	name := strings.TrimPrefix(events[1], "install ")
	if want := fmt.Sprintf("sync %s %d bytes", name, len(bin)); events[0] != want {
		t.Errorf("synced %q, want %q: the installed file, whole", events[0], want)
	}
	if city(t, m) != "Synced" {
		t.Fatal("the update was not installed")
	}

	events, syncErr = nil, errors.New("disk full")
	body2 := zipOf(t, map[string][]byte{"IP2LOCATION-LITE-DB11.IPV6.BIN": binWithCity(t, "Unsynced")})
	svc.body.Store(&body2)
	if err := u.Update(context.Background()); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("update with a failing sync: %v", err)
	}
	if len(events) != 1 || city(t, m) != "Synced" {
		t.Errorf("a file that could not be synced was installed: events %q, city %q", events, city(t, m))
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(target), ".geoip-*")); len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}
