package dbfile_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/apistack/platform/libs/apiserver/testkit"
	"github.com/apistack/platform/services/geoip/internal/binwriter"
	"github.com/apistack/platform/services/geoip/internal/dbfile"
	"github.com/apistack/platform/services/geoip/internal/ip2bin"
	"github.com/apistack/platform/services/geoip/internal/lookup"
	"github.com/apistack/platform/services/geoip/internal/sample"
)

var quiet = testkit.Logger()

// binWithCity writes a BIN where 8.8.8.0/24 and 2001:4860::/32 are in city.
func binWithCity(t testing.TB, city string) []byte {
	t.Helper()
	b := binwriter.NewBuilder()
	id := b.Intern(binwriter.Location{Country: "US", CountryName: "United States", Region: "California",
		City: city, Latitude: 37.422, Longitude: -122.085})
	if err := b.AddPrefix(netip.MustParsePrefix("8.8.8.0/24"), id); err != nil {
		t.Fatal(err)
	}
	if err := b.AddPrefix(netip.MustParsePrefix("2001:4860::/32"), id); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := b.Write(&buf, binwriter.Options{Date: time.Date(2026, 6, 5, 0, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writeAtomically replaces path the way deployments should: write beside, then rename.
func writeAtomically(t testing.TB, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func city(t testing.TB, m *dbfile.Manager, addr string) string {
	t.Helper()
	rec, err := m.Lookup(netip.MustParseAddr(addr))
	if err != nil {
		t.Fatalf("lookup %s: %v", addr, err)
	}
	return rec.City
}

func newManager(t testing.TB, cfg dbfile.Config) *dbfile.Manager {
	t.Helper()
	cfg.Logger = quiet
	m, err := dbfile.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// awaitSwap waits for the next swap notification; the long timeout only matters when the
// code is broken, so a slow shared machine does not make the test flaky.
func awaitSwap(t testing.TB, ch <-chan lookup.Info) lookup.Info {
	t.Helper()
	select {
	case info := <-ch:
		return info
	case <-time.After(60 * time.Second):
		t.Fatal("no database swap within 60s")
		return lookup.Info{}
	}
}

func TestServesFallbackWithoutPath(t *testing.T) {
	m := newManager(t, dbfile.Config{Fallback: sample.Open, PollInterval: -1})
	if got := m.Info().Source; got != sample.Source {
		t.Errorf("source %q", got)
	}
	if got := city(t, m, "8.8.8.8"); got == "" {
		t.Error("sample has no city for 8.8.8.8")
	}
	if err := m.Reload(); err == nil {
		t.Error("reload without a path succeeded")
	}
}

func TestNewFailsWithoutAUsableDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.BIN")
	os.WriteFile(path, []byte("garbage"), 0o644)
	for name, cfg := range map[string]dbfile.Config{
		"bad file":     {Path: path},
		"missing file": {Path: path + ".missing"},
		"nothing":      {},
	} {
		cfg.Logger = quiet
		if m, err := dbfile.New(cfg); err == nil {
			m.Close()
			t.Errorf("%s: New succeeded", name)
		}
	}
}

func TestReloadsOnSignal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.BIN")
	writeAtomically(t, path, binWithCity(t, "Old Town"))
	m := newManager(t, dbfile.Config{Path: path, PollInterval: -1})
	swaps, stop := m.Subscribe()
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hup := make(chan os.Signal, 1)
	go m.Watch(ctx, hup)

	before := m.Version()
	writeAtomically(t, path, binWithCity(t, "New Town"))
	hup <- os.Interrupt // any signal value; main wires SIGHUP
	info := awaitSwap(t, swaps)
	if info.Version() == before || m.Version() != info.Version() {
		t.Errorf("version %q -> %q (manager %q)", before, info.Version(), m.Version())
	}
	if got := city(t, m, "8.8.8.8"); got != "New Town" {
		t.Errorf("city after reload %q", got)
	}
}

func TestReloadsWhenTheFileChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.BIN")
	writeAtomically(t, path, binWithCity(t, "Old Town"))
	m := newManager(t, dbfile.Config{Path: path, PollInterval: 10 * time.Millisecond})
	swaps, stop := m.Subscribe()
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Watch(ctx, nil)

	// A different size guarantees a different stat even on coarse file system clocks.
	writeAtomically(t, path, binWithCity(t, "A Much Longer New Town Name"))
	awaitSwap(t, swaps)
	if got := city(t, m, "2001:4860::1"); got != "A Much Longer New Town Name" {
		t.Errorf("city after change %q", got)
	}
}

func TestBadFileIsRefusedAndTheOldOneKeepsServing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.BIN")
	good := binWithCity(t, "Old Town")
	writeAtomically(t, path, good)
	m := newManager(t, dbfile.Config{Path: path, PollInterval: -1})
	reg := prometheus.NewRegistry()
	if err := m.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	version := m.Version()
	for name, data := range map[string][]byte{
		"garbage":   []byte("this is not a database"),
		"truncated": good[:len(good)/3],
		"empty":     nil,
	} {
		writeAtomically(t, path, data)
		if err := m.Reload(); err == nil {
			t.Errorf("%s: reload succeeded", name)
		}
		if got := city(t, m, "8.8.8.8"); got != "Old Town" || m.Version() != version {
			t.Errorf("%s: serving %q version %s after a refused reload", name, got, m.Version())
		}
	}
	os.Remove(path)
	if err := m.Reload(); err == nil {
		t.Error("reload of a missing file succeeded")
	}
	if got := counter(t, reg, "geoip_database_reload_failures_total"); got != 4 {
		t.Errorf("failures counter %v; want 4", got)
	}
	if got := counter(t, reg, "geoip_database_reloads_total"); got != 0 {
		t.Errorf("reloads counter %v; want 0", got)
	}
}

func counter(t testing.TB, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			sum := 0.0 // over every label value
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
			return sum
		}
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}

func TestMetricsDescribeTheDatabaseServing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.BIN")
	writeAtomically(t, path, binWithCity(t, "Old Town"))
	m := newManager(t, dbfile.Config{Path: path, PollInterval: -1})
	reg := prometheus.NewRegistry()
	if err := m.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	writeAtomically(t, path, binWithCity(t, "New Town"))
	if err := m.Reload(); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP geoip_database_info The database serving now; always 1.
# TYPE geoip_database_info gauge
geoip_database_info{build_date="2026-06-05",format="bin",records="6",type="IP2Location DB11",version="` + m.Version() + `"} 1
# HELP geoip_database_reloads_total Databases swapped in after start-up.
# TYPE geoip_database_reloads_total counter
geoip_database_reloads_total 1
# HELP geoip_database_build_timestamp_seconds Build date of the database serving now, as a Unix time.
# TYPE geoip_database_build_timestamp_seconds gauge
geoip_database_build_timestamp_seconds 1.7806176e+09
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"geoip_database_info", "geoip_database_reloads_total", "geoip_database_build_timestamp_seconds"); err != nil {
		t.Error(err)
	}
}

// TestLookupsDuringSwapsAreClean runs lookups from several goroutines while databases are
// swapped in and out (run with -race): every lookup answers from the old or the new one.
func TestLookupsDuringSwapsAreClean(t *testing.T) {
	dir := t.TempDir()
	paths := []string{filepath.Join(dir, "a.BIN"), filepath.Join(dir, "b.BIN")}
	writeAtomically(t, paths[0], binWithCity(t, "Alpha"))
	writeAtomically(t, paths[1], binWithCity(t, "Beta"))
	m := newManager(t, dbfile.Config{Path: paths[0], PollInterval: -1})

	var wg sync.WaitGroup
	var stop atomic.Bool
	var lookups atomic.Int64
	for i := range 4 {
		addr := []string{"8.8.8.8", "2001:4860::8888"}[i%2]
		wg.Go(func() {
			for !stop.Load() {
				rec, err := m.Lookup(netip.MustParseAddr(addr))
				if err != nil || (rec.City != "Alpha" && rec.City != "Beta") {
					t.Errorf("lookup during swap: %+v, %v", rec, err)
					return
				}
				lookups.Add(1)
			}
		})
	}
	for i := range 20 {
		if err := m.Install(paths[i%2]); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if lookups.Load() == 0 {
		t.Error("no lookups ran")
	}
}

// blockingDB holds lookups while armed, to show that a swap waits for them before closing.
type blockingDB struct {
	lookup.DB
	armed            atomic.Bool
	entered, release chan struct{}
	closed           atomic.Bool
}

func (b *blockingDB) Lookup(a netip.Addr) (lookup.Record, error) {
	if b.armed.Load() {
		close(b.entered)
		<-b.release
	}
	if b.closed.Load() {
		return lookup.Record{}, errors.New("closed under a lookup in flight")
	}
	return b.DB.Lookup(a)
}

func (b *blockingDB) Close() error { b.closed.Store(true); return b.DB.Close() }

func TestInFlightLookupFinishesOnTheOldDatabase(t *testing.T) {
	inner, err := ip2bin.OpenBytes(binWithCity(t, "Old Town"), "old")
	if err != nil {
		t.Fatal(err)
	}
	old := &blockingDB{DB: inner, entered: make(chan struct{}), release: make(chan struct{})}
	m := newManager(t, dbfile.Config{Fallback: func() (lookup.DB, error) { return old, nil }, PollInterval: -1})
	old.armed.Store(true)

	done := make(chan string)
	go func() {
		rec, err := m.Lookup(netip.MustParseAddr("8.8.8.8"))
		if err != nil {
			done <- err.Error()
			return
		}
		done <- rec.City
	}()
	<-old.entered
	newDB, err := ip2bin.OpenBytes(binWithCity(t, "New Town"), "new")
	if err != nil {
		t.Fatal(err)
	}
	swapped := make(chan error)
	go func() { swapped <- m.Replace(newDB) }()
	// The swap itself happens at once; closing the old one waits for the lookup.
	for m.Info().Source != "new" {
		time.Sleep(time.Millisecond)
	}
	if got := city(t, m, "8.8.8.8"); got != "New Town" {
		t.Errorf("new lookups answer %q", got)
	}
	if old.closed.Load() {
		t.Fatal("old database closed while a lookup was in flight")
	}
	close(old.release)
	if got := <-done; got != "Old Town" {
		t.Errorf("in-flight lookup answered %q", got)
	}
	if err := <-swapped; err != nil {
		t.Fatal(err)
	}
	if !old.closed.Load() {
		t.Error("old database not closed after the swap")
	}
}

// TestBorrowedRecordKeepsTheDatabaseOpen: a record read in place stays readable until its
// lease is released, through a swap, and the old database is closed only after.
func TestBorrowedRecordKeepsTheDatabaseOpen(t *testing.T) {
	inner, err := ip2bin.OpenBytes(binWithCity(t, "Old Town"), "old")
	if err != nil {
		t.Fatal(err)
	}
	old := &closeSpy{DB: inner}
	m := newManager(t, dbfile.Config{Fallback: func() (lookup.DB, error) { return old, nil }, PollInterval: -1})
	rec, lease, err := m.Borrow(netip.MustParseAddr("8.8.8.8"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.City != "Old Town" || !rec.Network.IsValid() {
		t.Fatalf("borrowed %+v", rec)
	}
	newDB, err := ip2bin.OpenBytes(binWithCity(t, "New Town"), "new")
	if err != nil {
		t.Fatal(err)
	}
	swapped := make(chan error)
	go func() { swapped <- m.Replace(newDB) }()
	for m.Info().Source != "new" {
		time.Sleep(time.Millisecond)
	}
	if got := city(t, m, "8.8.8.8"); got != "New Town" {
		t.Errorf("new lookups answer %q", got)
	}
	time.Sleep(20 * time.Millisecond) // room for a wrong Close to happen
	if old.closed.Load() {
		t.Fatal("old database closed while a borrowed record was in use")
	}
	if rec.City != "Old Town" {
		t.Errorf("borrowed city now %q", rec.City)
	}
	lease.Release()
	if err := <-swapped; err != nil {
		t.Fatal(err)
	}
	if !old.closed.Load() {
		t.Error("old database not closed after the lease ended")
	}
	// After the swap, Borrow and Lookup agree.
	rec, lease, err = m.Borrow(netip.MustParseAddr("8.8.8.8"))
	if err != nil {
		t.Fatal(err)
	}
	kept := rec.Own()
	lease.Release()
	if want, _ := m.Lookup(netip.MustParseAddr("8.8.8.8")); kept.City != want.City || kept.Network != want.Network {
		t.Errorf("borrowed %+v, looked up %+v", kept, want)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Borrow(netip.MustParseAddr("8.8.8.8")); !errors.Is(err, dbfile.ErrClosed) {
		t.Errorf("Borrow after Close: %v, want ErrClosed", err)
	}
}

// closeSpy records Close; it lends in place as the BIN it wraps does.
type closeSpy struct {
	*ip2bin.DB
	closed atomic.Bool
}

func (c *closeSpy) Close() error { c.closed.Store(true); return c.DB.Close() }

// Location keys come with the version of the database they belong to, and BorrowKeyed's
// key is the one LocationKey gives for the record it lends; rows sharing a key have the
// same record but for the network. A closed manager keys nothing.
func TestLocationKeysBelongToTheirDatabase(t *testing.T) {
	m, err := dbfile.New(dbfile.Config{Fallback: sample.Open, PollInterval: -1, Logger: testkit.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[lookup.LocationKey]lookup.Record{}
	for _, ip := range []string{"8.8.8.8", "8.8.4.4", "1.1.1.1", "81.2.69.142", "2001:4860:4860::8888", "9.9.9.9"} {
		addr := netip.MustParseAddr(ip)
		key, network, version, ok := m.LocationKey(addr)
		if !ok || version != m.Version() {
			t.Fatalf("%s: key %v, version %q (want %q)", ip, ok, version, m.Version())
		}
		rec, key2, version2, keyed, lease, err := m.BorrowKeyed(addr)
		if err != nil || !keyed || key2 != key || version2 != version {
			t.Fatalf("%s: BorrowKeyed %v %v %q %v, want the key and version of LocationKey", ip, err, keyed, version2, key2 == key)
		}
		if rec.Found() && rec.Network != network {
			t.Errorf("%s: network %s, record's %s", ip, network, rec.Network)
		}
		rec = rec.Own()
		lease.Release()
		rec.Network = netip.Prefix{}
		if prev, seen := byKey[key]; seen && !reflect.DeepEqual(prev, rec) {
			t.Errorf("%s: %+v under the key of %+v", ip, rec, prev)
		}
		byKey[key] = rec
	}
	m.Close()
	if _, _, _, ok := m.LocationKey(netip.MustParseAddr("8.8.8.8")); ok {
		t.Error("a closed manager keys addresses")
	}
}

// TestInstallFileSyncsTheDirectoryAfterTheRename: the rename of a verified download over
// the serving file is made durable by syncing the directory, once the new name holds the
// new file; a failing directory sync is logged and the installed database still serves.
func TestInstallFileSyncsTheDirectoryAfterTheRename(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "db.BIN")
	writeAtomically(t, dst, binWithCity(t, "Old"))
	m := newManager(t, dbfile.Config{Path: dst, PollInterval: -1})
	src := filepath.Join(dir, ".download.BIN")
	for i, syncErr := range []error{nil, errors.New("i/o error")} {
		want := fmt.Sprintf("New %d", i)
		fresh := binWithCity(t, want)
		if err := os.WriteFile(src, fresh, 0o644); err != nil {
			t.Fatal(err)
		}
		var synced []string
		dbfile.SetSyncDir(m, func(d string) error {
			got, _ := os.ReadFile(dst)
			_, srcErr := os.Stat(src)
			synced = append(synced, d)
			if !bytes.Equal(got, fresh) || !errors.Is(srcErr, os.ErrNotExist) {
				t.Errorf("directory synced before the rename (target new: %v, source gone: %v)", bytes.Equal(got, fresh), srcErr != nil)
			}
			return syncErr
		})
		if err := m.InstallFile(src, dst); err != nil {
			t.Fatalf("install (directory sync error %v): %v", syncErr, err)
		}
		if len(synced) != 1 || synced[0] != dir {
			t.Errorf("directories synced: %q, want [%s]", synced, dir)
		}
		if got := city(t, m, "8.8.8.8"); got != want {
			t.Errorf("serving %q after the install", got)
		}
	}
}
