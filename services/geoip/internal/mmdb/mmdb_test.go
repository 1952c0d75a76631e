package mmdb_test

import (
	"bytes"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"

	"github.com/apistack/platform/services/geoip/internal/convert"
	"github.com/apistack/platform/services/geoip/internal/ip2bin"
	"github.com/apistack/platform/services/geoip/internal/lookup"
	"github.com/apistack/platform/services/geoip/internal/mmdb"
)

func names(en string) mmdbtype.Map {
	return mmdbtype.Map{"names": mmdbtype.Map{"en": mmdbtype.String(en), "de": mmdbtype.String(en + " (de)")}}
}

// geoLite2Like writes a small GeoIP2-City-shaped database with IPv4 and IPv6 data.
func geoLite2Like(t testing.TB) []byte {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "GeoLite2-City", RecordSize: 28, IPVersion: 6})
	if err != nil {
		t.Fatal(err)
	}
	insert := func(cidr string, v mmdbtype.Map) {
		_, n, err := net.ParseCIDR(cidr)
		if err != nil {
			t.Fatal(err)
		}
		if err := tree.Insert(n, v); err != nil {
			t.Fatal(err)
		}
	}
	mv := mmdbtype.Map{
		"city":    names("Mountain View"),
		"country": mmdbtype.Map{"iso_code": mmdbtype.String("US"), "names": mmdbtype.Map{"en": mmdbtype.String("United States")}},
		"subdivisions": mmdbtype.Slice{mmdbtype.Map{"iso_code": mmdbtype.String("CA"),
			"names": mmdbtype.Map{"en": mmdbtype.String("California")}}},
		"location": mmdbtype.Map{"latitude": mmdbtype.Float64(37.422), "longitude": mmdbtype.Float64(-122.085),
			"time_zone": mmdbtype.String("America/Los_Angeles"), "accuracy_radius": mmdbtype.Uint16(1000)},
		"postal": mmdbtype.Map{"code": mmdbtype.String("94043")},
	}
	insert("8.8.8.0/24", mv)
	insert("2001:4860::/32", mv)
	insert("81.2.69.0/24", mmdbtype.Map{"country": mmdbtype.Map{"iso_code": mmdbtype.String("GB")}})
	var buf bytes.Buffer
	if _, err := tree.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// dbipFlatLike writes an IPv4-only database in ip-location-db's flat layout.
func dbipFlatLike(t testing.TB) []byte {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "city ipv4", RecordSize: 28, IPVersion: 4})
	if err != nil {
		t.Fatal(err)
	}
	_, n, _ := net.ParseCIDR("1.1.1.0/24")
	if err := tree.Insert(n, mmdbtype.Map{
		"country_code": mmdbtype.String("AU"), "state1": mmdbtype.String("New South Wales"), "state2": mmdbtype.String(""),
		"city": mmdbtype.String("Sydney"), "postcode": mmdbtype.String(""), "latitude": mmdbtype.Float64(-33.8688),
		"longitude": mmdbtype.Float64(151.209), "timezone": mmdbtype.String(""),
	}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := tree.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

var mountainView = lookup.Record{Country: "US", CountryName: "United States", Region: "California",
	City: "Mountain View", Postal: "94043", Latitude: 37.422, Longitude: -122.085, HasLocation: true,
	TimeZone: "America/Los_Angeles"}

func TestLookupMapsBothSchemas(t *testing.T) {
	nested, err := mmdb.OpenBytes(geoLite2Like(t), "nested")
	if err != nil {
		t.Fatal(err)
	}
	flat, err := mmdb.OpenBytes(dbipFlatLike(t), "flat")
	if err != nil {
		t.Fatal(err)
	}
	if nested.Schema() != mmdb.SchemaNested || flat.Schema() != mmdb.SchemaFlat {
		t.Fatalf("schemas %v %v", nested.Schema(), flat.Schema())
	}
	tests := []struct {
		db   *mmdb.DB
		addr string
		want lookup.Record
	}{
		{nested, "8.8.8.8", mountainView},
		{nested, "::ffff:8.8.8.8", mountainView},
		{nested, "2001:4860:4860::8888", mountainView},
		{nested, "81.2.69.160", lookup.Record{Country: "GB", CountryName: "United Kingdom"}},
		{nested, "10.0.0.1", lookup.Record{}},
		{nested, "2a00::1", lookup.Record{}},
		{flat, "1.1.1.1", lookup.Record{Country: "AU", CountryName: "Australia", Region: "New South Wales",
			City: "Sydney", Latitude: -33.8688, Longitude: 151.209, HasLocation: true}},
		{flat, "1.1.2.1", lookup.Record{}},
		{flat, "2001:4860:4860::8888", lookup.Record{}}, // IPv6 on an IPv4-only file
	}
	for _, tt := range tests {
		got, err := tt.db.Lookup(netip.MustParseAddr(tt.addr))
		if err != nil {
			t.Fatalf("%s: %v", tt.addr, err)
		}
		if got.Country != tt.want.Country || got.CountryName != tt.want.CountryName || got.Region != tt.want.Region ||
			got.City != tt.want.City || got.Postal != tt.want.Postal || got.TimeZone != tt.want.TimeZone ||
			got.Latitude != tt.want.Latitude || got.Longitude != tt.want.Longitude || got.HasLocation != tt.want.HasLocation {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.addr, got, tt.want)
		}
	}
	// The nested layout names the subdivision's ISO code; every answer names its network.
	for _, tt := range []struct {
		db                *mmdb.DB
		addr, code, block string
	}{
		{nested, "8.8.8.8", "CA", "8.8.8.0/24"},
		{nested, "::ffff:8.8.8.8", "CA", "8.8.8.0/24"},
		{nested, "2001:4860:4860::8888", "CA", "2001:4860::/32"},
		{flat, "1.1.1.1", "", "1.1.1.0/24"}, // the flat layout has names only
	} {
		got, _ := tt.db.Lookup(netip.MustParseAddr(tt.addr))
		if got.RegionCode != tt.code || got.Network.String() != tt.block {
			t.Errorf("%s: region_code %q network %s, want %q %s", tt.addr, got.RegionCode, got.Network, tt.code, tt.block)
		}
	}
	if info := nested.Info(); info.Format != "mmdb" || info.Type != "GeoLite2-City" || info.Records == 0 {
		t.Errorf("info %+v", info)
	}
}

// TestConvertNestedMMDB converts a GeoLite2-shaped database and checks the BIN answers
// the same, IANA zone and postal code included.
func TestConvertNestedMMDB(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "GeoLite2-City.mmdb")
	if err := os.WriteFile(in, geoLite2Like(t), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := mmdb.Load(in)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.BIN")
	if _, err := convert.Files(out, []string{in}, convert.Options{}); err != nil {
		t.Fatal(err)
	}
	bin, err := ip2bin.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"8.8.8.0", "8.8.8.255", "8.8.9.0", "81.2.69.1", "0.0.0.0", "255.255.255.255",
		"2001:4860::", "2001:4860:ffff:ffff:ffff:ffff:ffff:ffff", "2001:4861::", "::1"} {
		addr := netip.MustParseAddr(a)
		want, _ := src.Lookup(addr)
		got, err := bin.Lookup(addr)
		if err != nil {
			t.Fatal(err)
		}
		if got.Country != want.Country || got.Region != want.Region || got.City != want.City ||
			got.Postal != want.Postal || got.TimeZone != want.TimeZone ||
			float32(got.Latitude) != float32(want.Latitude) || float32(got.Longitude) != float32(want.Longitude) {
			t.Errorf("%s:\n bin  %+v\n mmdb %+v", a, got, want)
		}
	}
}

func TestOpenRefusesNonCityDatabases(t *testing.T) {
	tree, _ := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "ASN", RecordSize: 24, IPVersion: 4})
	_, n, _ := net.ParseCIDR("1.1.1.0/24")
	tree.Insert(n, mmdbtype.Map{"autonomous_system_number": mmdbtype.Uint32(13335)})
	var buf bytes.Buffer
	tree.WriteTo(&buf)
	if _, err := mmdb.OpenBytes(buf.Bytes(), "asn"); err == nil {
		t.Error("opened an ASN database as a city database")
	}
	if _, err := mmdb.OpenBytes([]byte("not an mmdb"), "junk"); err == nil {
		t.Error("opened junk")
	}
}
