package ip2bin_test

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"github.com/apistack/platform/services/geoip/internal/binwriter"
	"github.com/apistack/platform/services/geoip/internal/ip2bin"
	"github.com/apistack/platform/services/geoip/internal/testdb"
)

// sameAnswers holds the direct DB11 reader to ip2location-go's answers, and its in-place
// lookups to its copying ones.
func sameAnswers(t *testing.T, db *ip2bin.DB, addrs []netip.Addr) {
	t.Helper()
	if !ip2bin.Direct(db) {
		t.Fatal("the direct reader does not serve this file")
	}
	bad := 0
	for _, a := range addrs {
		// Every IPv4 address has a row (the rows start at 0.0.0.0), which the direct
		// reader must find itself: a fallback to the library would hide an index fault.
		if a.Is4() && !ip2bin.FindsRow(db, a) {
			if bad++; bad <= 10 {
				t.Errorf("%s: the direct reader finds no row", a)
			}
		}
		got, err := db.Lookup(a)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ip2bin.LookupViaLibrary(db, a)
		if err != nil {
			t.Fatal(err)
		}
		inPlace, err := db.LookupInPlace(a)
		if err != nil {
			t.Fatal(err)
		}
		if !equal(inPlace, got) || inPlace.Network != got.Network {
			if bad++; bad <= 10 {
				t.Errorf("%s:\n in place %+v\n copied   %+v", a, inPlace, got)
			}
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
	if err := ip2bin.CheckFineIndex(db); err != nil {
		t.Fatal(err)
	}
	sameAnswers(t, db, randomAddrs(200000))
}

// TestDirectReaderFindsRowsInDenseRanges holds the direct reader's index search (the /20
// index built at load, finer than the file's /16 one) to the library, which searches by
// the file's index, on dense data: ranges of 1 to 9,000 addresses, many to a /20 block of
// 4,096 addresses and many across block edges, each asked at its ends, at every such edge
// it crosses and inside.
func TestDirectReaderFindsRowsInDenseRanges(t *testing.T) {
	b := binwriter.NewBuilder()
	locs := []uint32{b.Intern(mountainView), b.Intern(sydney), b.Intern(countryOnly), b.Intern(zurich)}
	r := rand.New(rand.NewPCG(3, 4))
	var addrs []netip.Addr
	v4 := func(n uint32) netip.Addr {
		return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
	}
	ask := func(n uint32) { addrs = append(addrs, v4(n)) }
	// Dense ranges from 10.0.0.0, sparse ones further up, the last address included.
	at := uint32(10 << 24)
	for i := 0; i < 3000; i++ {
		size := 1 + r.Uint32N(9000)
		if i%500 == 499 {
			at += 1 << 22 // a gap of empty buckets
		}
		last := at + size - 1
		if err := b.AddRange(v4(at), v4(last), locs[i%len(locs)]); err != nil {
			t.Fatal(err)
		}
		ask(at)
		ask(last)
		ask(at + r.Uint32N(size))
		for edge := (at>>12 + 1) << 12; edge <= last; edge += 1 << 12 {
			ask(edge - 1)
			ask(edge)
		}
		ask(last + 1)
		at = last + 1 + r.Uint32N(3)*r.Uint32N(5000)
	}
	if err := b.AddRange(v4(0xffffff00), v4(0xffffffff), locs[0]); err != nil {
		t.Fatal(err)
	}
	ask(0)
	ask(0xfffffeff)
	ask(0xffffff00)
	ask(0xffffffff)
	for i := 0; i < 5000; i++ {
		ask(r.Uint32())
	}
	var buf bytes.Buffer
	if _, err := b.Write(&buf, binwriter.Options{Date: time.Date(2026, 6, 5, 0, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	db, err := ip2bin.OpenBytes(buf.Bytes(), "dense")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := ip2bin.CheckFineIndex(db); err != nil {
		t.Fatal(err)
	}
	missed := 0
	for _, a := range addrs {
		if !ip2bin.FindsRow(db, a) {
			if missed++; missed <= 5 {
				t.Errorf("%s: the index search finds no row", a)
			}
		}
	}
	if missed > 0 {
		t.Fatalf("%d of %d addresses not found by the index", missed, len(addrs))
	}
	sameAnswers(t, db, addrs)
}

// TestInPlaceLookupMatchesTheCopy holds LookupInPlace and LookupKeyed to Lookup: the same
// record, its strings only not copied out of the file (they point into it), and
// LookupKeyed's key to LocationKey's.
func TestInPlaceLookupMatchesTheCopy(t *testing.T) {
	data := fixture(t, binwriter.Options{})
	db, err := ip2bin.OpenBytes(data, "fixture")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	inFile := func(s string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		start := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
		return p >= start && p < start+uintptr(len(data))
	}
	located := 0
	// 2002:808:808:: is a 6to4 address: answered through ip2location-go, not keyed.
	for _, a := range append(randomAddrs(20000), netip.MustParseAddr("8.8.8.8"), netip.MustParseAddr("2002:808:808::")) {
		want, err := db.Lookup(a)
		if err != nil {
			t.Fatal(err)
		}
		got, err := db.LookupInPlace(a)
		if err != nil {
			t.Fatal(err)
		}
		if !equal(got, want) || got.Network != want.Network {
			t.Fatalf("%s:\n in place %+v\n copied   %+v", a, got, want)
		}
		// LookupKeyed: the same record, and the key LocationKey names for its row.
		keyedRec, key, keyed, err := db.LookupKeyed(a)
		wantKey, _, wantKeyed := db.LocationKey(a)
		if err != nil || !equal(keyedRec, want) || keyedRec.Network != want.Network || keyed != wantKeyed || key != wantKey {
			t.Fatalf("%s: LookupKeyed %+v key %v (%v), err %v; want %+v key %v (%v)", a, keyedRec, key, keyed, err, want, wantKey, wantKeyed)
		}
		if want.City == "" || !ip2bin.FindsRow(db, a) {
			continue
		}
		located++
		if !inFile(got.City) || !inFile(got.Country) || inFile(want.City) {
			t.Fatalf("%s: the in-place city is not the file's bytes, or the copy is", a)
		}
	}
	if located == 0 {
		t.Fatal("no located address among those tried")
	}
}
