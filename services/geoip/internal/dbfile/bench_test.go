package dbfile_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apistack/platform/services/geoip/internal/dbfile"
	"github.com/apistack/platform/services/geoip/internal/ip2bin"
	"github.com/apistack/platform/services/geoip/internal/lookup"
	"github.com/apistack/platform/services/geoip/internal/mmdb"
	"github.com/apistack/platform/services/geoip/internal/testdb"
	"github.com/apistack/platform/services/geoip/internal/tz"
)

// randomAddrs returns n uniformly random addresses of one family, the same every run.
func randomAddrs(n int, v6 bool) []netip.Addr {
	rng := rand.New(rand.NewPCG(1, 2))
	addrs := make([]netip.Addr, n)
	for i := range addrs {
		if !v6 {
			u := rng.Uint32()
			addrs[i] = netip.AddrFrom4([4]byte{byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)})
			continue
		}
		var b [16]byte
		hi, lo := rng.Uint64(), rng.Uint64()
		for j := range 8 {
			b[j], b[8+j] = byte(hi>>(8*j)), byte(lo>>(8*j))
		}
		b[0], b[1] = 0x2a, 0x00 // RIPE's /12: mostly allocated
		addrs[i] = netip.AddrFrom16(b)
	}
	return addrs
}

func benchLookups(b *testing.B, db interface {
	Lookup(netip.Addr) (lookup.Record, error)
}, addrs []netip.Addr) {
	b.ReportAllocs()
	// Every lookup is timed on its own: on a busy shared machine the mean (ns/op) absorbs
	// the time the process waits for a CPU, while the median of single lookups does not.
	lat := make([]time.Duration, 0, 1<<20)
	start := cpuTime()
	i := 0
	for b.Loop() {
		t0 := time.Now()
		if _, err := db.Lookup(addrs[i&(len(addrs)-1)]); err != nil {
			b.Fatal(err)
		}
		if len(lat) < cap(lat) {
			lat = append(lat, time.Since(t0))
		}
		i++
	}
	// CPU time per lookup (GC included) also stays meaningful when wall time is not.
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2]), "p50-ns")
		b.ReportMetric(float64(lat[len(lat)*99/100]), "p99-ns")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLookup compares the readers on the full DB-IP Lite data converted to a BIN
// (and the source MMDB), with 65,536 random addresses. bin-memory is how the service
// loads a BIN (off the Go heap); bin-heap is the same bytes read onto the heap.
func BenchmarkLookup(b *testing.B) {
	binPath := testdb.ConvertedBIN(b)
	v4 := randomAddrs(1<<16, false)
	v6 := randomAddrs(1<<16, true)

	mem, err := ip2bin.Load(binPath)
	if err != nil {
		b.Fatal(err)
	}
	defer mem.Close()
	data, err := os.ReadFile(binPath)
	if err != nil {
		b.Fatal(err)
	}
	heap, err := ip2bin.OpenBytes(data, binPath) // the same bytes on the Go heap
	if err != nil {
		b.Fatal(err)
	}
	defer heap.Close()
	file, err := ip2bin.OpenFile(binPath)
	if err != nil {
		b.Fatal(err)
	}
	defer file.Close()
	src4, err := mmdb.Load(testdb.MMDB(b, testdb.IPv4))
	if err != nil {
		b.Fatal(err)
	}
	defer src4.Close()
	src6, err := mmdb.Load(testdb.MMDB(b, testdb.IPv6))
	if err != nil {
		b.Fatal(err)
	}
	defer src6.Close()
	zones := tz.New()
	if err := zones.Warm(); err != nil {
		b.Fatal(err)
	}
	m, err := dbfile.New(dbfile.Config{Path: binPath, TimeZones: zones, PollInterval: -1, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()

	b.Run("ipv4/bin-memory", func(b *testing.B) { benchLookups(b, mem, v4) })
	b.Run("ipv4/bin-heap", func(b *testing.B) { benchLookups(b, heap, v4) })
	b.Run("ipv4/bin-file", func(b *testing.B) { benchLookups(b, file, v4) })
	b.Run("ipv4/mmdb", func(b *testing.B) { benchLookups(b, src4, v4) })
	b.Run("ipv4/manager-bin-memory+tz", func(b *testing.B) { benchLookups(b, m, v4) })
	b.Run("ipv6/bin-memory", func(b *testing.B) { benchLookups(b, mem, v6) })
	b.Run("ipv6/bin-file", func(b *testing.B) { benchLookups(b, file, v6) })
	b.Run("ipv6/mmdb", func(b *testing.B) { benchLookups(b, src6, v6) })
	b.Run("ipv4/bin-memory-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if _, err := mem.Lookup(v4[i&(len(v4)-1)]); err != nil {
					b.Error(err)
					return
				}
				i++
			}
		})
	})
}

// TestResidentMemoryAfterLoad loads the converted full BIN in a fresh process, as serve
// does (database plus time zone data), and checks its resident memory against the target
// (at most 1.3 times the file size plus 50 MB) twice: settled after loading, and after
// three million lookups with no forced collection, as a busy server runs. A second child
// loads the same bytes onto the Go heap instead, for comparison only: its heap may grow
// to twice the file before the collector runs, which is why serve keeps the file off it.
func TestResidentMemoryAfterLoad(t *testing.T) {
	if path := os.Getenv("GEOIP_RSS_CHILD"); path != "" {
		reportRSS(t, path, os.Getenv("GEOIP_RSS_HEAP") != "")
		return
	}
	if testing.Short() {
		t.Skip("full-data test skipped in -short mode")
	}
	if testdb.RaceEnabled {
		t.Skip("resident memory is meaningless under the race detector (shadow memory); run without -race")
	}
	path := testdb.ConvertedBIN(t)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	limit := st.Size()*13/10 + 50<<20
	served := childRSS(t, path, false)
	onHeap := childRSS(t, path, true)
	t.Logf("file %d MB, limit %d MB; RSS before %d MB, after load %d MB, with time zones %d MB, after 3M lookups %d MB (on the Go heap instead: %d MB)",
		st.Size()>>20, limit>>20, served.before>>20, served.loaded>>20, served.withZones>>20, served.busy>>20, onHeap.busy>>20)
	if served.withZones > limit {
		t.Errorf("resident memory after load %d MB exceeds %d MB", served.withZones>>20, limit>>20)
	}
	if served.busy > limit {
		t.Errorf("resident memory after 3M lookups %d MB exceeds %d MB", served.busy>>20, limit>>20)
	}
}

type rssFigures struct{ before, loaded, withZones, busy int64 }

// childRSS runs reportRSS in a fresh process and reads its figures.
func childRSS(t *testing.T, path string, heap bool) rssFigures {
	cmd := exec.Command(os.Args[0], "-test.run=^TestResidentMemoryAfterLoad$", "-test.v")
	cmd.Env = append(os.Environ(), "GEOIP_RSS_CHILD="+path)
	if heap {
		cmd.Env = append(cmd.Env, "GEOIP_RSS_HEAP=1")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var f rssFigures
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if i := strings.Index(sc.Text(), "rss "); i >= 0 {
			fmt.Sscanf(sc.Text()[i:], "rss %d %d %d %d", &f.before, &f.loaded, &f.withZones, &f.busy)
		}
	}
	if f.busy == 0 {
		t.Fatalf("no figures from the child:\n%s", out)
	}
	return f
}

func reportRSS(t *testing.T, path string, heap bool) {
	settle := func() int64 {
		runtime.GC()
		debug.FreeOSMemory()
		return rss(t)
	}
	before := settle()
	var db lookup.DB
	var err error
	if heap {
		var data []byte
		if data, err = os.ReadFile(path); err == nil {
			db, err = dbfile.OpenBytes(data, path)
		}
	} else {
		db, err = dbfile.Open(path)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := dbfile.Verify(db); err != nil {
		t.Fatal(err)
	}
	loaded := settle()
	zones := tz.New()
	if err := zones.Warm(); err != nil {
		t.Fatal(err)
	}
	withZones := settle()
	addrs := randomAddrs(1<<16, false)
	for i := range 3_000_000 {
		if _, err := db.Lookup(addrs[i&(len(addrs)-1)]); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Printf("rss %d %d %d %d\n", before, loaded, withZones, rss(t))
	runtime.KeepAlive(db)
	runtime.KeepAlive(zones)
}

func rss(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Skip("no VmRSS")
	return 0
}
