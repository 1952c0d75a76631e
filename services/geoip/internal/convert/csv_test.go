package convert_test

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apistack/platform/services/geoip/internal/convert"
	"github.com/apistack/platform/services/geoip/internal/ip2bin"
)

func TestParseCSVRow(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		ranges  string // "from-to,from-to"
		country string
		city    string
		tz      string
		wantErr bool
	}{
		{name: "ipv4 DB11", line: `134744064,134744319,US,United States of America,California,Mountain View,37.40599,-122.078514,94043,-07:00`,
			ranges: "8.8.8.0-8.8.8.255", country: "US", city: "Mountain View", tz: "-07:00"},
		{name: "ipv4 DB1", line: `16777216,16777471,AU,Australia`, ranges: "1.0.0.0-1.0.0.255", country: "AU"},
		{name: "DB3", line: `16777216,16777471,AU,Australia,Queensland,Brisbane`, ranges: "1.0.0.0-1.0.0.255", country: "AU", city: "Brisbane"},
		{name: "UK becomes GB", line: `16777216,16777471,UK,United Kingdom`, ranges: "1.0.0.0-1.0.0.255", country: "GB"},
		{name: "unknown", line: `0,16777215,-,-,-,-,0.000000,0.000000,-,-`, ranges: "0.0.0.0-0.255.255.255"},
		{name: "last ipv4", line: `4294967040,4294967295,-,-`, ranges: "255.255.255.0-255.255.255.255"},
		{name: "ipv6 file, mapped ipv4", line: `281470816487424,281470816487679,US,United States of America`,
			ranges: "8.8.8.0-8.8.8.255", country: "US"},
		{name: "ipv6", line: `42541956101370907050197289607612071936,42541956101370907050197289607612072191,US,United States of America`,
			ranges: "2001:4860::-2001:4860::ff", country: "US"},
		{name: "ipv6 straddling the mapped block is clipped", line: `0,281474976710656,-,-`,
			ranges: "::-::fffe:ffff:ffff,::1:0:0:0-::1:0:0:0"},
		{name: "max ipv6", line: `340282366920938463463374607431768211455,340282366920938463463374607431768211455,-,-`,
			ranges: "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
		{name: "beyond 128 bits", line: `340282366920938463463374607431768211456,340282366920938463463374607431768211456,-,-`, wantErr: true},
		{name: "to before from", line: `20,10,-,-`, wantErr: true},
		{name: "not a number", line: `1.2.3.4,10,-,-`, wantErr: true},
		{name: "column count", line: `1,2,US`, wantErr: true},
		{name: "bad latitude", line: `1,2,US,U,R,C,91,0`, wantErr: true},
		{name: "long country code", line: `1,2,USA,U`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row, err := convert.ParseCSVRow(strings.Split(tt.line, ","))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("parsed %+v; want an error", row)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range row.Ranges {
				got = append(got, r[0].String()+"-"+r[1].String())
			}
			if strings.Join(got, ",") != tt.ranges {
				t.Errorf("ranges %v; want %s", got, tt.ranges)
			}
			if row.Loc.Country != tt.country || row.Loc.City != tt.city || row.Loc.TimeZone != tt.tz {
				t.Errorf("location %+v", row.Loc)
			}
		})
	}
}

func FuzzParseCSVRow(f *testing.F) {
	f.Add("134744064,134744319,US,United States of America,California,Mountain View,37.40599,-122.078514,94043,-07:00")
	f.Add("0,281474976710656,-,-")
	f.Add("42541956101370907050197289607612071936,42541956101370907050197289607612072191,US,X")
	f.Fuzz(func(t *testing.T, line string) {
		row, err := convert.ParseCSVRow(strings.Split(line, ","))
		if err != nil {
			return
		}
		for _, r := range row.Ranges {
			if !r[0].IsValid() || r[0].Is4() != r[1].Is4() || r[1].Less(r[0]) || r[0].Is4In6() {
				t.Fatalf("bad range %v from %q", r, line)
			}
		}
		if len(row.Loc.Country) != 0 && len(row.Loc.Country) != 2 {
			t.Fatalf("country %q", row.Loc.Country)
		}
	})
}

// TestConvertCSVToBIN runs the CSV path end to end: quoted fields as IP2Location ships
// them, a header line, IPv4 and IPv6 rows, read back through ip2location-go. The offsets of
// rows with coordinates become IANA zones from the coordinates; a row without coordinates
// keeps its offset.
func TestConvertCSVToBIN(t *testing.T) {
	dir := t.TempDir()
	csv := `"ip_from","ip_to","country_code","country_name","region_name","city_name","latitude","longitude","zip_code","time_zone"
"0","281470681743359","-","-","-","-","0.000000","0.000000","-","-"
"281470816487424","281470816487679","US","United States of America","California","Mountain View","37.405990","-122.078514","94043","-07:00"
"281470816487680","281470816487935","AU","Australia","New South Wales","Sydney","-33.868820","151.209290","2000","+10:00"
"281470816487936","281470816488191","US","United States of America","-","-","0.000000","0.000000","-","-05:00"
"42541956101370907050197289607612071936","42541956101370907050197289607612072191","CH","Switzerland","Zurich","Zürich","47.376900","8.541700","8000","+01:00"
`
	in := filepath.Join(dir, "IP2LOCATION-LITE-DB11.IPV6.CSV")
	if err := os.WriteFile(in, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.BIN")
	st, err := convert.Files(out, []string{in}, convert.Options{Date: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	if st.Rows4 != 5 || st.Rows6 != 3 { // gap, US, AU, US, gap / gap, CH, gap
		t.Errorf("rows %d/%d", st.Rows4, st.Rows6)
	}
	db, err := ip2bin.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for addr, want := range map[string]string{
		"8.8.8.8": "Mountain View/94043/America/Los_Angeles/", "8.8.9.255": "Sydney/2000/Australia/Sydney/",
		"8.8.10.0": "///-0500", "8.8.11.0": "///", "2001:4860::1": "Zürich/8000/Europe/Zurich/",
		"2001:4860::100": "///", "::ffff:8.8.8.8": "Mountain View/94043/America/Los_Angeles/",
	} {
		r, err := db.Lookup(netip.MustParseAddr(addr))
		if err != nil {
			t.Fatal(err)
		}
		if got := r.City + "/" + r.Postal + "/" + r.TimeZone + "/" + r.UTCOffset; got != want {
			t.Errorf("%s: %s; want %s", addr, got, want)
		}
	}
	if got := db.Info().BuildDate; !got.Equal(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("build date %s", got)
	}
}

func TestConvertRefusesOverlapsAndUnknownInputs(t *testing.T) {
	dir := t.TempDir()
	csv := "\"16777216\",\"16777471\",\"AU\",\"Australia\"\n\"16777300\",\"16777500\",\"US\",\"United States\"\n"
	in := filepath.Join(dir, "x.csv")
	os.WriteFile(in, []byte(csv), 0o644)
	if _, err := convert.Files(filepath.Join(dir, "o.BIN"), []string{in}, convert.Options{}); err == nil || !strings.Contains(err.Error(), "overlapping") {
		t.Errorf("overlap: %v", err)
	}
	if _, err := convert.Files(filepath.Join(dir, "o.BIN"), []string{filepath.Join(dir, "x.txt")}, convert.Options{}); err == nil {
		t.Error("converted a .txt")
	}
	if _, err := os.Stat(filepath.Join(dir, "o.BIN")); !os.IsNotExist(err) {
		t.Errorf("a failed conversion left output behind: %v", err)
	}
}
