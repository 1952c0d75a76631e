package ip2bin_test

import (
	"bytes"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apistack/platform/services/geoip/internal/binwriter"
	"github.com/apistack/platform/services/geoip/internal/ip2bin"
	"github.com/apistack/platform/services/geoip/internal/lookup"
)

var (
	mountainView = binwriter.Location{Country: "US", CountryName: "United States", Region: "California",
		City: "Mountain View", Postal: "94043", TimeZone: "-07:00", Latitude: 37.422, Longitude: -122.085}
	sydney = binwriter.Location{Country: "AU", CountryName: "Australia", Region: "New South Wales",
		City: "Sydney", Latitude: -33.8688, Longitude: 151.209}
	zurich = binwriter.Location{Country: "CH", CountryName: "Switzerland", Region: "Zurich",
		City: "Zürich", TimeZone: "Europe/Zurich", Latitude: 47.3769, Longitude: 8.5417}
	countryOnly = binwriter.Location{Country: "DE", CountryName: "Germany"}
)

// fixture builds a small DB11 file: adjacent ranges, the first and last IPv4 and IPv6
// addresses, a country-only row and IPv6 data.
func fixture(t testing.TB, opts binwriter.Options) []byte {
	t.Helper()
	b := binwriter.NewBuilder()
	add := func(from, to string, loc binwriter.Location) {
		t.Helper()
		if err := b.AddRange(netip.MustParseAddr(from), netip.MustParseAddr(to), b.Intern(loc)); err != nil {
			t.Fatal(err)
		}
	}
	add("0.0.0.0", "0.255.255.255", countryOnly)
	add("8.8.8.0", "8.8.8.255", mountainView)
	add("8.8.9.0", "8.8.9.255", sydney) // adjacent to the previous range
	add("1.1.1.0", "1.1.1.255", sydney) // out of order on purpose
	add("255.255.255.0", "255.255.255.255", zurich)
	add("2001:4860::", "2001:4860:ffff:ffff:ffff:ffff:ffff:ffff", mountainView)
	add("2a00::", "2a00::ffff", zurich)
	add("ffff::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", sydney)
	if opts.Date.IsZero() {
		opts.Date = time.Date(2026, 6, 5, 0, 0, 0, 0, time.UTC)
	}
	var buf bytes.Buffer
	st, err := b.Write(&buf, opts)
	if err != nil {
		t.Fatal(err)
	}
	if st.Bytes != int64(buf.Len()) {
		t.Fatalf("stats say %d bytes, wrote %d", st.Bytes, buf.Len())
	}
	return buf.Bytes()
}

func want(loc binwriter.Location) lookup.Record {
	r := lookup.Record{Country: loc.Country, CountryName: loc.CountryName, Region: loc.Region,
		City: loc.City, Postal: loc.Postal}
	if lookup.IsZoneName(loc.TimeZone) {
		r.TimeZone = loc.TimeZone
	} else if off, ok := lookup.ParseOffset(loc.TimeZone); ok {
		r.UTCOffset = off
	}
	if loc.Latitude != 0 || loc.Longitude != 0 {
		r.Latitude, r.Longitude, r.HasLocation = float64(loc.Latitude), float64(loc.Longitude), true
	}
	return r
}

func TestLookupAnswersEdgesOfEveryRange(t *testing.T) {
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
			tests := []struct {
				addr string
				want lookup.Record
			}{
				{"0.0.0.0", want(countryOnly)},
				{"0.255.255.255", want(countryOnly)},
				{"1.0.0.0", lookup.Record{}}, // gap
				{"1.1.0.255", lookup.Record{}},
				{"1.1.1.0", want(sydney)},
				{"1.1.1.255", want(sydney)},
				{"1.1.2.0", lookup.Record{}},
				{"8.8.7.255", lookup.Record{}},
				{"8.8.8.0", want(mountainView)},
				{"8.8.8.8", want(mountainView)},
				{"8.8.8.255", want(mountainView)},
				{"8.8.9.0", want(sydney)},
				{"8.8.9.255", want(sydney)},
				{"8.8.10.0", lookup.Record{}},
				{"255.255.254.255", lookup.Record{}},
				{"255.255.255.0", want(zurich)},
				{"255.255.255.255", want(zurich)},
				{"::ffff:8.8.8.8", want(mountainView)}, // IPv4-mapped answers as IPv4
				{"::", lookup.Record{}},
				{"::1", lookup.Record{}},
				{"2001:485f:ffff:ffff:ffff:ffff:ffff:ffff", lookup.Record{}},
				{"2001:4860::", want(mountainView)},
				{"2001:4860:4860::8888", want(mountainView)},
				{"2001:4860:ffff:ffff:ffff:ffff:ffff:ffff", want(mountainView)},
				{"2001:4861::", lookup.Record{}},
				{"2a00::", want(zurich)},
				{"2a00::ffff", want(zurich)},
				{"2a00::1:0", lookup.Record{}},
				{"fffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", lookup.Record{}},
				{"ffff::", want(sydney)},
				{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", want(sydney)},
			}
			for _, tt := range tests {
				got, err := db.Lookup(netip.MustParseAddr(tt.addr))
				if err != nil {
					t.Fatalf("%s: %v", tt.addr, err)
				}
				if !equal(got, tt.want) {
					t.Errorf("%s:\n got %+v\nwant %+v", tt.addr, got, tt.want)
				}
			}
		})
	}
}

func equal(a, b lookup.Record) bool {
	return a.Country == b.Country && a.CountryName == b.CountryName && a.Region == b.Region &&
		a.City == b.City && a.Postal == b.Postal && a.TimeZone == b.TimeZone && a.UTCOffset == b.UTCOffset &&
		a.HasLocation == b.HasLocation && float32(a.Latitude) == float32(b.Latitude) &&
		float32(a.Longitude) == float32(b.Longitude) && len(a.Extra) == 0 && len(b.Extra) == 0
}

func TestCoordinatesKeepTheirShortDecimalForm(t *testing.T) {
	db, err := ip2bin.OpenBytes(fixture(t, binwriter.Options{}), "fixture")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := db.Lookup(netip.MustParseAddr("8.8.8.8"))
	if got.Latitude != 37.422 || got.Longitude != -122.085 {
		t.Errorf("coordinates %v,%v; want 37.422,-122.085 exactly", got.Latitude, got.Longitude)
	}
}

func TestInfoDescribesTheFile(t *testing.T) {
	data := fixture(t, binwriter.Options{})
	db, err := ip2bin.OpenBytes(data, "fixture")
	if err != nil {
		t.Fatal(err)
	}
	info := db.Info()
	if info.Format != "bin" || info.Type != "IP2Location DB11" || info.Source != "fixture" ||
		info.Size != int64(len(data)) || !info.BuildDate.Equal(time.Date(2026, 6, 5, 0, 0, 0, 0, time.UTC)) ||
		info.Records == 0 || len(info.Checksum) != 8 {
		t.Errorf("unexpected info %+v", info)
	}
}

func TestIPv4OnlyFileAnswersIPv6Empty(t *testing.T) {
	b := binwriter.NewBuilder()
	if err := b.AddPrefix(netip.MustParsePrefix("8.8.8.0/24"), b.Intern(mountainView)); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := b.Write(&buf, binwriter.Options{}); err != nil {
		t.Fatal(err)
	}
	db, err := ip2bin.OpenBytes(buf.Bytes(), "v4only")
	if err != nil {
		t.Fatal(err)
	}
	got, err := db.Lookup(netip.MustParseAddr("2001:4860:4860::8888"))
	if err != nil || got.Found() {
		t.Errorf("IPv6 on an IPv4-only file: %+v, %v; want an empty record", got, err)
	}
	if got, _ := db.Lookup(netip.MustParseAddr("8.8.8.8")); got.City != "Mountain View" {
		t.Errorf("8.8.8.8 city %q", got.City)
	}
}

func TestOpenFileMatchesInMemory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.BIN")
	if err := os.WriteFile(path, fixture(t, binwriter.Options{}), 0o644); err != nil {
		t.Fatal(err)
	}
	mem, err := ip2bin.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	file, err := ip2bin.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for _, a := range []string{"8.8.8.8", "1.1.1.1", "255.255.255.255", "2a00::1", "10.0.0.1"} {
		m, err1 := mem.Lookup(netip.MustParseAddr(a))
		f, err2 := file.Lookup(netip.MustParseAddr(a))
		if err1 != nil || err2 != nil || !equal(m, f) {
			t.Errorf("%s: memory %+v %v, file %+v %v", a, m, err1, f, err2)
		}
	}
}

func TestOpenRefusesDamagedFiles(t *testing.T) {
	good := fixture(t, binwriter.Options{})
	tests := map[string][]byte{
		"empty":     nil,
		"short":     good[:40],
		"truncated": good[:len(good)/2],
		"zip":       append([]byte("PK\x03\x04"), good[4:]...),
		"bad type":  append([]byte{99}, good[1:]...),
		"bad date":  append(append([]byte{}, good[:3]...), append([]byte{13}, good[4:]...)...),
		"text":      bytes.Repeat([]byte("not a database "), 100),
	}
	for name, data := range tests {
		t.Run(name, func(t *testing.T) {
			if db, err := ip2bin.OpenBytes(data, name); err == nil {
				db.Close()
				t.Fatal("opened a damaged file")
			}
		})
	}
}

// TestOpeningWhileLookingUpIsRaceFree guards the package-level state ip2location-go
// rewrites on every open (run with -race).
func TestOpeningWhileLookingUpIsRaceFree(t *testing.T) {
	data := fixture(t, binwriter.Options{})
	db, err := ip2bin.OpenBytes(data, "fixture")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := db.Lookup(netip.MustParseAddr("2001:4860:4860::8888")); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for range 50 {
		other, err := ip2bin.OpenBytes(data, "again")
		if err != nil {
			t.Fatal(err)
		}
		other.Close()
	}
	close(stop)
	wg.Wait()
}

// TestLoadedFileClosesWhileLookingUp loads a file off the heap and closes it under
// concurrent lookups: each lookup answers or fails with ErrClosed, and none reads the
// memory Close unmapped (which would crash the test binary).
func TestLoadedFileClosesWhileLookingUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.BIN")
	if err := os.WriteFile(path, fixture(t, binwriter.Options{}), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		db, err := ip2bin.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var answered, refused atomic.Int64
		for range 4 {
			wg.Go(func() {
				for {
					rec, err := db.Lookup(netip.MustParseAddr("8.8.8.8"))
					switch {
					case errors.Is(err, ip2bin.ErrClosed):
						refused.Add(1)
						return
					case err != nil:
						t.Error(err)
						return
					case !equal(rec, want(mountainView)):
						t.Errorf("8.8.8.8 = %+v", rec)
						return
					}
					answered.Add(1)
				}
			})
		}
		for answered.Load() == 0 {
			runtime.Gosched()
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if refused.Load() != 4 {
			t.Fatalf("%d of 4 lookers saw ErrClosed", refused.Load())
		}
		if err := db.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	}
}
