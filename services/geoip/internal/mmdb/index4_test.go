package mmdb_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"

	"github.com/apistack/platform/services/geoip/internal/mmdb"
	"github.com/apistack/platform/services/geoip/internal/testdb"
)

// sameSearch requires db's search (by the IPv4 index) to find what the library finds for
// addr: the same record, network and absence.
func sameSearch(t *testing.T, db *mmdb.DB, addr netip.Addr) (indexed bool) {
	t.Helper()
	off, network, found, indexed, err := mmdb.Search(db, addr)
	res := db.Reader().Lookup(addr)
	if err != nil || res.Err() != nil {
		t.Fatalf("%s: %v, library %v", addr, err, res.Err())
	}
	if found != res.Found() || found && (off != uint(res.Offset()) || network != res.Prefix()) {
		t.Fatalf("%s: found %v at %d in %s; the library: %v at %d in %s", addr, found, off, network, res.Found(), res.Offset(), res.Prefix())
	}
	return indexed
}

// The IPv4 index finds what the library's walk finds, for every record size and both
// kinds of file, at the edges of networks shorter and longer than the index's blocks.
func TestIPv4IndexFindsWhatTheLibraryFinds(t *testing.T) {
	for _, size := range []int{24, 28, 32} {
		for _, version := range []int{4, 6} {
			t.Run(fmt.Sprintf("record-size=%d/ipv%d", size, version), func(t *testing.T) {
				tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "city", RecordSize: size, IPVersion: version})
				if err != nil {
					t.Fatal(err)
				}
				nets := []string{"1.0.0.0/8", "2.3.0.0/16", "2.3.16.0/20", "5.6.7.0/24", "5.6.7.128/25", "9.9.9.9/32", "200.0.0.0/5", "223.255.255.255/32"}
				for i, cidr := range nets {
					_, n, _ := net.ParseCIDR(cidr)
					if err := tree.Insert(n, mmdbtype.Map{"country_code": mmdbtype.String(fmt.Sprintf("C%d", i)), "latitude": mmdbtype.Float32(float32(i))}); err != nil {
						t.Fatal(err)
					}
				}
				var buf bytes.Buffer
				if _, err := tree.WriteTo(&buf); err != nil {
					t.Fatal(err)
				}
				db, err := mmdb.OpenBytes(buf.Bytes(), "test")
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				indexed := 0
				for _, cidr := range nets {
					p := netip.MustParsePrefix(cidr)
					for _, a := range []netip.Addr{p.Addr(), p.Addr().Prev(), lastOf(p), lastOf(p).Next()} {
						if a.IsValid() && a.Is4() && sameSearch(t, db, a) {
							indexed++
						}
					}
				}
				r := rand.New(rand.NewPCG(uint64(size), uint64(version)))
				for range 20000 {
					if sameSearch(t, db, netip.AddrFrom4([4]byte{byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32())})) {
						indexed++
					}
				}
				if indexed == 0 {
					t.Fatal("no lookup used the IPv4 index")
				}
			})
		}
	}
}

// On the full DB-IP IPv4 file: a million random addresses and the edges of their networks.
func TestIPv4IndexFindsWhatTheLibraryFindsOnFullData(t *testing.T) {
	if testing.Short() {
		t.Skip("full-data test skipped in -short mode")
	}
	db, err := mmdb.Load(testdb.MMDB(t, testdb.IPv4))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 1_000_000 {
		a := netip.AddrFrom4([4]byte{byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32())})
		if !sameSearch(t, db, a) {
			t.Fatal("the IPv4 index is not used")
		}
		if i%10 == 0 {
			if p := db.Reader().Lookup(a).Prefix(); p.IsValid() {
				for _, e := range []netip.Addr{p.Addr(), p.Addr().Prev(), lastOf(p), lastOf(p).Next()} {
					if e.IsValid() && e.Is4() {
						sameSearch(t, db, e)
					}
				}
			}
		}
	}
}

func lastOf(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
