package answer

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/netip"
	"testing"

	"github.com/apistack/platform/services/geoip/internal/lookup"
	"github.com/apistack/platform/services/geoip/internal/testdb"
)

// formatsOf writes loc in every format built from a Location.
func formatsOf(t testing.TB, loc *Location) string {
	t.Helper()
	csv, err := AppendCSV(nil, loc)
	if err != nil {
		t.Fatal(err)
	}
	return string(AppendXML(nil, loc)) + string(csv) + string(AppendYAML(nil, loc))
}

// A cached answer is kept as its JSON bytes: the record read back from them writes every
// format as the record read from the database does.
func TestCachedRecordsWriteAsTheRecord(t *testing.T) {
	db := testdb.EmbeddedSample(t)
	cached := New(db, Options{})
	uncached := New(db, Options{CacheSize: -1})
	for _, ip := range []string{"8.8.8.8", "1.1.1.1", "81.2.69.160", "2001:4860:4860::8888", "2a00:1450:4001::1", "5.6.7.8", "41.1.1.1", "200.1.1.1", "10.1.1.1", "100.64.0.1"} {
		addr := netip.MustParseAddr(ip)
		want, wantVersion, err := uncached.Record(addr)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 { // a miss, an admitted miss, then a hit
			got, version, err := cached.Record(addr)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := formatsOf(t, &got), formatsOf(t, &want); g != w || version != wantVersion {
				t.Fatalf("%s:\n%s\nwant\n%s", ip, g, w)
			}
		}
	}
	if hits, _ := cached.CacheStats(); hits == 0 {
		t.Fatal("no record came from the cache")
	}
}

type failing struct{}

func (failing) Lookup(netip.Addr) (lookup.Record, error) {
	return lookup.Record{}, errors.New("disk on fire")
}
func (failing) Version() string { return "v1" }

// A source's error is the answer's, for both JSON and records; reserved addresses need
// no lookup.
func TestSourceErrors(t *testing.T) {
	e := New(Records(failing{}), Options{})
	if _, _, _, err := e.Answer(netip.MustParseAddr("8.8.8.8")); err == nil {
		t.Error("Answer: no error")
	}
	if _, _, err := e.Record(netip.MustParseAddr("8.8.8.8")); err == nil {
		t.Error("Record: no error")
	}
	if body, _, _, err := e.Answer(netip.MustParseAddr("10.0.0.1")); err != nil || !bytes.Contains(body, []byte(`"reserved":true`)) {
		t.Errorf("reserved: %s %v", body, err)
	}
}

// FuzzAnswer: whatever the address, the JSON answer is valid JSON naming it in canonical
// form, and the record (other formats) says the same as the JSON, cached or not.
func FuzzAnswer(f *testing.F) {
	for _, s := range []string{"8.8.8.8", "::1", "2a01:e0a::1", "::ffff:81.2.69.1", "2002:a01:203::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "0.0.0.0", "255.255.255.255"} {
		a := netip.MustParseAddr(s).As16()
		f.Add(a[:], netip.MustParseAddr(s).Is4())
	}
	e := New(testdb.EmbeddedSample(f), Options{CacheSize: 64})
	f.Fuzz(func(t *testing.T, raw []byte, is4 bool) {
		var a16 [16]byte
		copy(a16[:], raw)
		addr := netip.AddrFrom16(a16).Unmap()
		if is4 {
			addr = netip.AddrFrom4([4]byte(a16[12:]))
		}
		for range 3 {
			body, tag, version, err := e.Answer(addr)
			if err != nil {
				t.Fatal(err)
			}
			var got Location
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("%s: invalid JSON %s: %v", addr, body, err)
			}
			if got.IP != addr.String() || tag != ETag(version, body) {
				t.Fatalf("%s: ip %q, ETag %s for %s", addr, got.IP, tag, body)
			}
			rec, _, err := e.Record(addr)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := formatsOf(t, &rec), formatsOf(t, &got); g != w {
				t.Fatalf("%s: the record says\n%s\nthe JSON\n%s", addr, g, w)
			}
		}
	})
}

// fixed is one record for every address, at version v1.
type fixed lookup.Record

func (f fixed) Lookup(netip.Addr) (lookup.Record, error) { return lookup.Record(f), nil }
func (f fixed) Version() string                          { return "v1" }

// A record with invalid UTF-8 writes every format the same from the cache as from the
// database: the bytes become U+FFFD one by one, as in the JSON.
func TestInvalidUTF8WritesAlikeCachedOrNot(t *testing.T) {
	src := Records(fixed{Country: "DE", City: "M\xfcnchen \xed\xa0\x80", Region: "Bayern", Postal: "8\xff"})
	cached := New(src, Options{})
	uncached := New(src, Options{CacheSize: -1})
	addr := netip.MustParseAddr("5.6.7.8")
	want, _, err := uncached.Record(addr)
	if err != nil {
		t.Fatal(err)
	}
	if want.City != "M\uFFFDnchen \uFFFD\uFFFD\uFFFD" || want.Postal != "8\uFFFD" {
		t.Fatalf("city %q, postal %q", want.City, want.Postal)
	}
	for range 3 {
		got, _, err := cached.Record(addr)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := formatsOf(t, &got), formatsOf(t, &want); g != w || got.City != want.City {
			t.Fatalf("cached\n%s\nwant\n%s", g, w)
		}
	}
	if hits, _ := cached.CacheStats(); hits == 0 {
		t.Fatal("no record came from the cache")
	}
}
