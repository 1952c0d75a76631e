package dbfile_test

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
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
// behind the answer engine, as serve runs it (GOGC=400, the default soft memory limit, the
// executable's start-up pages released): a fresh process answers two million random IPv4
// addresses, each asked once as wrk's random script asks them. Issue 30's target is 1.2
// times the file plus 64 MiB. The figure checked is the process settled after the answers
// (garbage collected and the free heap returned), which holds the database, its IPv4
// index and zone table, the caches and the live heap, plus gcHeadroom for the heap the
// collector lets grow under load: that part moves with the machine's load (25-50 MiB on
// a busy 2-core machine, where the settled figure moved by 4), so it is an allowance and
// the check does not flake. The target holds at GEOIP_CACHE_SIZE=8192 (a 5 MiB location
// table); at the default (a 40 MiB table, which keeps the MMDB path as fast as the BIN's
// in BenchmarkAnswerFullData) it does not yet, and the check there is the target plus
// that table, so that nothing else grows. Neither covers the HTTP server's part
// (connections, the rest of geoip's binary): the server's figures are in
// docs/benchmarks.md.
func TestResidentMemoryAfterLoadMMDB(t *testing.T) {
	if path := os.Getenv("GEOIP_RSS_MMDB_CHILD"); path != "" {
		size, _ := strconv.Atoi(os.Getenv("GEOIP_RSS_MMDB_CACHE"))
		reportEngineRSS(t, path, size)
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
	const (
		locationTable = 2 * (1 << 16) * 320 // answer.fragmentSize bytes a slot, two per answer
		gcHeadroom    = 24 << 20            // GOGC=400: 4x a live heap of 5-7 MB
	)
	for _, c := range []struct {
		cacheSize int // GEOIP_CACHE_SIZE; 0: the default
		limit     int64
	}{
		{8192, target},
		{0, target + locationTable},
	} {
		loaded, busy, settled := engineRSS(t, path, c.cacheSize)
		t.Logf("GEOIP_CACHE_SIZE=%d: file %d MB, target %d MB, limit %d MB; RSS after load %d MB, after 2M answers %d MB, settled %d MB (+ %d MB allowed for the collector's headroom)",
			c.cacheSize, st.Size()>>20, target>>20, c.limit>>20, loaded>>20, busy>>20, settled>>20, gcHeadroom>>20)
		if settled+gcHeadroom > c.limit {
			t.Errorf("GEOIP_CACHE_SIZE=%d: resident memory settled after 2M answers %d MB, plus %d MB of heap growth, exceeds %d MB",
				c.cacheSize, settled>>20, gcHeadroom>>20, c.limit>>20)
		}
	}
}

// engineRSS runs reportEngineRSS in a fresh process and reads its figures.
func engineRSS(t *testing.T, path string, cacheSize int) (loaded, busy, settled int64) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestResidentMemoryAfterLoadMMDB$", "-test.v")
	cmd.Env = append(os.Environ(), "GEOIP_RSS_MMDB_CHILD="+path, "GEOIP_RSS_MMDB_CACHE="+strconv.Itoa(cacheSize))
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

func reportEngineRSS(t *testing.T, path string, size int) {
	// serve's collector settings (internal/config), which decide how far the heap grows.
	debug.SetGCPercent(config.DefaultGCPercent)
	debug.SetMemoryLimit(config.DefaultMemoryLimit(size))
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
	e := answer.New(m, answer.Options{CacheSize: size})
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
