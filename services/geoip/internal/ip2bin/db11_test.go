package ip2bin_test

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/apistack/platform/services/geoip/internal/binwriter"
	"github.com/apistack/platform/services/geoip/internal/ip2bin"
	"github.com/apistack/platform/services/geoip/internal/testdb"
)

// sameAnswers holds the direct DB11 reader to ip2location-go's answers.
func sameAnswers(t *testing.T, db *ip2bin.DB, addrs []netip.Addr) {
	t.Helper()
	if !ip2bin.Direct(db) {
		t.Fatal("the direct reader does not serve this file")
	}
	bad := 0
	for _, a := range addrs {
		got, err := db.Lookup(a)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ip2bin.LookupViaLibrary(db, a)
		if err != nil {
			t.Fatal(err)
		}
		if !equal(got, want) || got.Network != want.Network {
			if bad++; bad <= 10 {
				t.Errorf("%s:\n direct  %+v\n library %+v", a, got, want)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d addresses differ", bad, len(addrs))
	}
}

func randomAddrs(n int) []netip.Addr {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]netip.Addr, 0, n)
	for i := 0; i < n; i++ {
		if i%3 == 0 {
			var b [16]byte
			for j := range b {
				b[j] = byte(r.UintN(256))
			}
			b[0] = 0x20 | byte(r.UintN(16)) // mostly 2000::/4, where the data is
			out = append(out, netip.AddrFrom16(b))
			continue
		}
		out = append(out, netip.AddrFrom4([4]byte{byte(r.UintN(256)), byte(r.UintN(256)), byte(r.UintN(256)), byte(r.UintN(256))}))
	}
	return out
}

func TestDirectReaderMatchesTheLibrary(t *testing.T) {
	edges := []string{"0.0.0.0", "0.255.255.255", "1.0.0.0", "1.1.1.0", "1.1.1.255", "8.8.8.8", "8.8.9.255", "8.8.10.0",
		"255.255.255.0", "255.255.255.255", "::", "::1", "2001:4860::", "2001:4860:ffff:ffff:ffff:ffff:ffff:ffff",
		"2a00::ffff", "ffff::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2002:808:808::1", "2001:0:4136:e378:8000:63bf:f7f7:f7f7"}
	var addrs []netip.Addr
	for _, e := range edges {
		addrs = append(addrs, netip.MustParseAddr(e))
	}
	addrs = append(addrs, randomAddrs(20000)...)
	for _, layout := range []struct {
		name string
		opts binwriter.Options
	}{{"indexed", binwriter.Options{}}, {"no index", binwriter.Options{NoIndex: true}}} {
		t.Run(layout.name, func(t *testing.T) {
			db, err := ip2bin.OpenBytes(fixture(t, layout.opts), "fixture")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			sameAnswers(t, db, addrs)
		})
	}
}

func TestDirectReaderMatchesTheLibraryOnFullData(t *testing.T) {
	if testing.Short() {
		t.Skip("full-data test skipped in -short mode")
	}
	db, err := ip2bin.Load(testdb.ConvertedBIN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sameAnswers(t, db, randomAddrs(200000))
}
