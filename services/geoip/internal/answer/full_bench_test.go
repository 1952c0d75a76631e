package answer

import (
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver/testkit"
	"github.com/apistack/platform/services/geoip/internal/dbfile"
	"github.com/apistack/platform/services/geoip/internal/testdb"
	"github.com/apistack/platform/services/geoip/internal/tz"
)

// wrkAddrs are n random IPv4 addresses drawn as bench/scripts/geoip-random.lua draws them
// (first octet 1-223 less 10 and 127, the rest uniform), the same every run.
func wrkAddrs(n int) []netip.Addr { return wrkAddrsSeed(n, 1) }

// wrkAddrsSeed is wrkAddrs drawn from seed: another seed, other addresses.
func wrkAddrsSeed(n int, seed uint64) []netip.Addr {
	r := rand.New(rand.NewPCG(seed, 2))
	addrs := make([]netip.Addr, n)
	for i := range addrs {
		a := 1 + r.IntN(221)
		if a >= 10 {
			a++
		}
		if a >= 127 {
			a++
		}
		addrs[i] = netip.AddrFrom4([4]byte{byte(a), byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))})
	}
	return addrs
}

// benchBIN is the full DB-IP data as a BIN: make geoip-bin's (testdb.FullBIN) when it is
// there, since converting again for every change of the converter's packages takes
// minutes, else the test conversion.
func benchBIN(tb testing.TB) string {
	if p := filepath.Join(testdb.CacheDir(tb), testdb.FullBIN); fileExists(p) {
		return p
	}
	return testdb.ConvertedBIN(tb)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// BenchmarkAnswerFullData is Engine.Answer as the server runs it (default caches, time
// zones from coordinates where the file has none) on the full DB-IP data, the BIN and the
// IPv4 MMDB side by side, with the random IPv4 addresses of bench/scripts/geoip-random.lua:
// the JSON answer's whole cost below HTTP. Run with -cpuprofile to see where it goes.
func BenchmarkAnswerFullData(b *testing.B) {
	if testdb.RaceEnabled {
		b.Skip("figures under the race detector mean nothing")
	}
	// More than a run of -benchtime 2s asks for: an address asked twice in the run would
	// be admitted to the answer cache, which random traffic never fills.
	addrs := wrkAddrs(1 << 21)
	for _, c := range []struct{ name, path string }{
		{"bin", benchBIN(b)},
		{"mmdb", testdb.MMDB(b, testdb.IPv4)},
	} {
		zones := tz.New()
		m, err := dbfile.New(dbfile.Config{Path: c.path, TimeZones: zones, PollInterval: -1, Logger: testkit.Logger()})
		if err != nil {
			b.Fatal(err)
		}
		if !m.Info().ZoneNames {
			if err := zones.Warm(); err != nil {
				b.Fatal(err)
			}
		}
		e := New(m, Options{})
		// Past the first misses of the caches, as the server is after a warm-up round, on
		// other addresses (geoip-peers.sh's warm-up has its own seed): an address asked
		// twice would be admitted to the answer cache on its second miss.
		for _, a := range wrkAddrsSeed(1<<20, 99) {
			if _, _, _, err := e.Answer(a); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			start := cpuTime()
			i := 0
			for b.Loop() {
				if _, _, _, err := e.Answer(addrs[i&(len(addrs)-1)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			// The process's CPU time per answer stays meaningful on a busy machine, where
			// ns/op absorbs the time spent waiting for a CPU.
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
		})
		m.Close()
	}
}
