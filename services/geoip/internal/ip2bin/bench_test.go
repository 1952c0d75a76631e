package ip2bin_test

import (
	"math/rand/v2"
	"net/netip"
	"os"
	"testing"

	"github.com/ip2location/ip2location-go/v9"

	"github.com/apistack/platform/services/geoip/internal/ip2bin"
	"github.com/apistack/platform/services/geoip/internal/testdb"
)

// BenchmarkWrapperOverhead compares Lookup with the bare library call it wraps, on the full
// converted data, to keep the wrapper's share (normalising, coordinates) in view.
func BenchmarkWrapperOverhead(b *testing.B) {
	path := testdb.ConvertedBIN(b)
	rng := rand.New(rand.NewPCG(1, 2))
	addrs := make([]netip.Addr, 1<<16)
	strs := make([]string, len(addrs))
	for i := range addrs {
		u := rng.Uint32()
		addrs[i] = netip.AddrFrom4([4]byte{byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)})
		strs[i] = addrs[i].String()
	}
	db, err := ip2bin.Load(path)
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := ip2location.OpenDBWithReader(ip2bin.ReaderOf(data))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("ip2bin.Lookup", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			db.Lookup(addrs[i&(len(addrs)-1)])
			i++
		}
	})
	b.Run("ip2location.Get_all", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			raw.Get_all(strs[i&(len(strs)-1)])
			i++
		}
	})
}

// BenchmarkVerifyFullDB prices the whole-file check (issue 13, finding 5) on the full
// converted DB-IP data, beside the header-only open that ip2location-go does, so the
// figure reads as the cost a load or reload adds.
func BenchmarkVerifyFullDB(b *testing.B) {
	data, err := os.ReadFile(testdb.ConvertedBIN(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("walk", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if err := ip2bin.Verify(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("OpenBytes", func(b *testing.B) { // walk + checksum + library open
		for b.Loop() {
			db, err := ip2bin.OpenBytes(data, "full")
			if err != nil {
				b.Fatal(err)
			}
			db.Close()
		}
	})
}
