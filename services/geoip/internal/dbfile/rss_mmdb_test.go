package dbfile_test

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/apistack/platform/libs/apiserver/testkit"
	"github.com/apistack/platform/services/geoip/internal/answer"
	"github.com/apistack/platform/services/geoip/internal/config"
	"github.com/apistack/platform/services/geoip/internal/dbfile"
	"github.com/apistack/platform/services/geoip/internal/exepages"
	"github.com/apistack/platform/services/geoip/internal/testdb"
	"github.com/apistack/platform/services/geoip/internal/tz"
)

// TestResidentMemoryAfterLoadMMDB is TestResidentMemoryAfterLoad for the DB-IP IPv4 MMDB
// behind the answer engine, as serve runs it at the default settings (GEOIP_CACHE_SIZE,
// GOGC and the soft memory limit geoip sets, the executable's start-up pages released): a
// fresh process answers two million random IPv4 addresses, each asked once as wrk's
// random script asks them. Issue 30's target is 1.2 times the file plus 64 MiB. The figure
// checked is the process settled after the answers (garbage collected and the free heap
// returned), which holds the database, its IPv4 index and zone table, the location table,
// the answer cache and the live heap, plus gcHeadroom for the heap the collector lets grow
// under load: that part moves with the machine's load, so it is an allowance and the
// check does not flake. It does not cover the HTTP server's part (connections, the rest
// of geoip's binary): the server's figures are in docs/benchmarks.md.
func TestResidentMemoryAfterLoadMMDB(t *testing.T) {
	if path := os.Getenv("GEOIP_RSS_MMDB_CHILD"); path != "" {
		reportEngineRSS(t, path)
		return
	}
	if testing.Short() {
		t.Skip("full-data test skipped in -short mode")
	}
	if testdb.RaceEnabled {
		t.Skip("resident memory is meaningless under the race detector (shadow memory); run without -race")
	}
	path := testdb.MMDB(t, testdb.IPv4)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	target := st.Size()*12/10 + 64<<20
	// config.DefaultGCPercent (200) lets the heap grow past the live heap by twice as much:
	// 14 MiB over the largest live heap seen under random answers, 7 MB.
	const gcHeadroom = 14 << 20
	loaded, busy, settled := engineRSS(t, path)
	t.Logf("default settings: file %d MB, target %d MB; RSS after load %d MB, after 2M answers %d MB, settled %d MB (+ %d MB allowed for the collector's headroom)",
		st.Size()>>20, target>>20, loaded>>20, busy>>20, settled>>20, gcHeadroom>>20)
	if settled+gcHeadroom > target {
		t.Errorf("resident memory settled after 2M answers %d MB, plus %d MB of heap growth, exceeds %d MB",
			settled>>20, gcHeadroom>>20, target>>20)
	}
}

// engineRSS runs reportEngineRSS in a fresh process and reads its figures.
func engineRSS(t *testing.T, path string) (loaded, busy, settled int64) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestResidentMemoryAfterLoadMMDB$", "-test.v")
	cmd.Env = append(os.Environ(), "GEOIP_RSS_MMDB_CHILD="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if _, err := fmt.Sscanf(line, "engine rss %d %d %d", &loaded, &busy, &settled); err == nil {
			break
		}
	}
	if busy == 0 {
		t.Fatalf("no figures from the child:\n%s", out)
	}
	return loaded, busy, settled
}

func reportEngineRSS(t *testing.T, path string) {
	// serve's default settings (internal/config): the collector's decide how far the heap
	// grows, the cache's how large the location table is.
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	debug.SetGCPercent(cfg.GC.Percent)
	debug.SetMemoryLimit(cfg.GC.MemoryLimit)
	zones := tz.New()
	m, err := dbfile.New(dbfile.Config{Path: path, TimeZones: zones, PollInterval: -1, Logger: testkit.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !m.Info().ZoneNames {
		if err := zones.Warm(); err != nil {
			t.Fatal(err)
		}
	}
	e := answer.New(m, answer.Options{CacheSize: cfg.CacheSize})
	exepages.Release() // as serve does once the databases are loaded
	runtime.GC()
	debug.FreeOSMemory()
	loaded := rss(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2_000_000 {
		u := rng.Uint32()
		addr := netip.AddrFrom4([4]byte{byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)})
		if _, _, _, err := e.Answer(addr); err != nil {
			t.Fatal(err)
		}
	}
	busy := rss(t)
	runtime.GC()
	debug.FreeOSMemory()
	fmt.Printf("engine rss %d %d %d\n", loaded, busy, rss(t))
	runtime.KeepAlive(e)
}
