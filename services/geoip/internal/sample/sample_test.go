package sample_test

import (
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apistack/platform/services/geoip/internal/convert"
	"github.com/apistack/platform/services/geoip/internal/mmdb"
	"github.com/apistack/platform/services/geoip/internal/sample"
	"github.com/apistack/platform/services/geoip/internal/testdb"
)

func TestSampleIsSmall(t *testing.T) {
	if n := len(sample.Bytes()); n > 2<<20 {
		t.Errorf("embedded sample is %d bytes; the budget is 2 MB", n)
	}
}

func TestSampleAnswersWellKnownAddresses(t *testing.T) {
	db, err := sample.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range convert.SampleAddrs {
		rec, err := db.Lookup(netip.MustParseAddr(s))
		if err != nil {
			t.Fatal(err)
		}
		if rec.Country == "" || rec.City == "" || !rec.HasLocation {
			t.Errorf("%s: no real data in the sample: %+v", s, rec)
		}
	}
	if rec, _ := db.Lookup(netip.MustParseAddr("8.8.8.8")); rec.Country != "US" {
		t.Errorf("8.8.8.8 in %q", rec.Country)
	}
}

// TestSampleCoversCountries checks that every country with a city in the source's IPv4
// data answers in the sample at the address the sample picked for it (the first such
// network of the country in address order).
func TestSampleCoversCountries(t *testing.T) {
	if testing.Short() {
		t.Skip("full-data test skipped in -short mode")
	}
	src, err := mmdb.Load(testdb.MMDB(t, testdb.IPv4))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	db, _ := sample.Open()
	seen := map[string]bool{}
	decoded := map[uintptr]bool{} // records repeat; decoding is the slow part under -race
	for res := range src.Reader().Networks() {
		if decoded[res.Offset()] {
			continue
		}
		decoded[res.Offset()] = true
		rec, err := mmdb.Decode(res, src.Schema())
		if err != nil {
			t.Fatal(err)
		}
		if rec.Country == "" || rec.City == "" || seen[rec.Country] {
			continue
		}
		seen[rec.Country] = true
		got, _ := db.Lookup(res.Prefix().Addr())
		if got.Country != rec.Country || got.City != rec.City {
			t.Errorf("%s (%s): sample answers %+v", res.Prefix(), rec.Country, got)
		}
	}
	if len(seen) < 200 {
		t.Errorf("only %d countries in the source?", len(seen))
	}
	t.Logf("%d countries answer in the sample", len(seen))
}

// TestSampleIsUpToDate regenerates the sample's CSV from the shared data (what `make
// geoip-sample` does) and compares it with the embedded one byte for byte; it also checks
// that the sample answers what the source does for the well-known addresses.
func TestSampleIsUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("full-data test skipped in -short mode")
	}
	v4, v6 := testdb.MMDB(t, testdb.IPv4), testdb.MMDB(t, testdb.IPv6)
	out := filepath.Join(t.TempDir(), "sample.csv")
	testdb.RunConvert(t, "-sample", "-o", out, v4, v6)
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, sample.CSV()) {
		t.Fatalf("the embedded sample differs from a fresh conversion; run make geoip-sample")
	}
	// The BIN built from the CSV is the BIN the converter writes from the sources.
	bin := filepath.Join(t.TempDir(), "sample.BIN")
	testdb.RunConvert(t, "-sample", "-date", sample.Date.Format(time.DateOnly), "-o", bin, v4, v6)
	direct, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(direct, sample.Bytes()) {
		t.Fatalf("the BIN built from the embedded CSV (%d bytes) differs from the sources' (%d bytes)", len(sample.Bytes()), len(direct))
	}
	src4, err := mmdb.Load(v4)
	if err != nil {
		t.Fatal(err)
	}
	src6, err := mmdb.Load(v6)
	if err != nil {
		t.Fatal(err)
	}
	db, _ := sample.Open()
	for _, s := range convert.SampleAddrs {
		a := netip.MustParseAddr(s)
		src := src4
		if a.Is6() {
			src = src6
		}
		want, _ := src.Lookup(a)
		rec, _ := db.Lookup(a)
		if rec.City != want.City || rec.Country != want.Country || rec.Region != want.Region {
			t.Errorf("%s: sample %+v, source %+v", s, rec, want)
		}
	}
}
