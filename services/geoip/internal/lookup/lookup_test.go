package lookup_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/apistack/platform/services/geoip/internal/lookup"
)

func TestParseAddr(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" = invalid
	}{
		{"8.8.8.8", "8.8.8.8"},
		{"0.0.0.0", "0.0.0.0"},
		{"255.255.255.255", "255.255.255.255"},
		{"2001:4860:4860::8888", "2001:4860:4860::8888"},
		{"2001:4860:4860:0:0:0:0:8888", "2001:4860:4860::8888"},
		{"::ffff:8.8.8.8", "8.8.8.8"}, // mapped IPv6 answers as IPv4
		{"::ffff:0808:0808", "8.8.8.8"},
		{"::1", "::1"},
		{"", ""},
		{" 8.8.8.8", ""},
		{"8.8.8.8 ", ""},
		{"8.8.8", ""},
		{"08.8.8.8", ""}, // leading zeros are ambiguous (octal in some parsers)
		{"256.1.1.1", ""},
		{"999.1.1.1", ""},
		{"fe80::1%eth0", ""},
		{"2001:db8::/32", ""},
		{"localhost", ""},
		{"[::1]", ""},
	}
	for _, tt := range tests {
		got, err := lookup.ParseAddr(tt.in)
		if tt.want == "" {
			if err == nil || !errors.Is(err, lookup.ErrInvalidAddress) {
				t.Errorf("ParseAddr(%q) = %v, %v; want ErrInvalidAddress", tt.in, got, err)
			}
			continue
		}
		if err != nil || got.String() != tt.want {
			t.Errorf("ParseAddr(%q) = %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

func FuzzParseAddr(f *testing.F) {
	for _, s := range []string{"8.8.8.8", "::ffff:1.2.3.4", "fe80::1%eth0", "1.2.3", "::", "2001:db8::1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := lookup.ParseAddr(s)
		if err != nil {
			if !errors.Is(err, lookup.ErrInvalidAddress) {
				t.Fatalf("error %v does not wrap ErrInvalidAddress", err)
			}
			return
		}
		if !a.IsValid() || a.Zone() != "" || a.Is4In6() {
			t.Fatalf("ParseAddr(%q) = %v: invalid, zoned or mapped", s, a)
		}
		// What comes out parses back to itself.
		b, err := lookup.ParseAddr(a.String())
		if err != nil || b != a {
			t.Fatalf("round trip of %q: %v, %v", a, b, err)
		}
	})
}

func TestClean(t *testing.T) {
	tests := map[string]string{
		"":                                  "",
		"-":                                 "",
		"- ":                                "",
		"N/A":                               "",
		"Invalid IP address.":               "",
		"IPv6 address missing in IPv4 BIN.": "",
		"This parameter is unavailable for selected data file. Please upgrade the data file.": "",
		"US":            "US",
		" Zürich ":      "Zürich",
		"Mountain View": "Mountain View",
		"-07:00":        "-07:00",
	}
	for in, want := range tests {
		if got := lookup.Clean(in); got != want {
			t.Errorf("Clean(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestTimeZoneForms(t *testing.T) {
	zones := map[string]bool{
		"America/Los_Angeles": true, "Europe/Zurich": true, "America/Argentina/Buenos_Aires": true,
		"UTC": true, "-07:00": false, "": false, "/": false, "America/": false, "utc": false,
	}
	for in, want := range zones {
		if got := lookup.IsZoneName(in); got != want {
			t.Errorf("IsZoneName(%q) = %v", in, got)
		}
	}
	offsets := map[string]string{
		"-07:00": "-0700", "+05:45": "+0545", "+00:00": "+0000", "0": "+0000",
		"07:00": "", "-7:00": "", "+0a:00": "", "America/Denver": "",
	}
	for in, want := range offsets {
		got, ok := lookup.ParseOffset(in)
		if got != want || ok != (want != "") {
			t.Errorf("ParseOffset(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	// Table entries (quarter hours within -12h..+14h) and computed ones (LMT-style
	// offsets, the ends of the table and beyond).
	for secs, want := range map[int]string{0: "+0000", -25200: "-0700", 19800: "+0530", 20700: "+0545",
		-12600: "-0330", -43200: "-1200", 50400: "+1400", 54000: "+1500", -46800: "-1300",
		-17762: "-0456", 561: "+0009", -899: "-0014"} {
		if got := lookup.FormatOffset(secs); got != want {
			t.Errorf("FormatOffset(%d) = %q; want %q", secs, got, want)
		}
	}
}

func TestCountryName(t *testing.T) {
	for code, want := range map[string]string{"US": "United States", "CH": "Switzerland", "": "", "ZZ": "", "usa": ""} {
		if got := lookup.CountryName(code); got != want {
			t.Errorf("CountryName(%q) = %q; want %q", code, got, want)
		}
	}
}

func TestFoundNeedsData(t *testing.T) {
	if (lookup.Record{}).Found() {
		t.Error("empty record found")
	}
	if !(lookup.Record{Country: "US"}).Found() {
		t.Error("record with a country not found")
	}
}

// TestWidenFloat32MatchesTheTextRoundTrip holds the memoised widening to the text round
// trip it saves, on coordinates and on any float32 bits (NaN, infinities, -0 included),
// asked twice so the second answer comes from the table.
func TestWidenFloat32MatchesTheTextRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	values := []float32{0, float32(math.Copysign(0, -1)), 37.422, -122.085, 180, -180, 90, -90, 1e-45,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32}
	for i := 0; i < 200000; i++ {
		values = append(values, float32(r.Float64()*360-180), math.Float32frombits(r.Uint32()))
	}
	for _, f := range values {
		var buf [32]byte
		want, err := strconv.ParseFloat(string(strconv.AppendFloat(buf[:0], float64(f), 'g', -1, 32)), 64)
		if err != nil {
			want = float64(f)
		}
		for range 2 {
			got := lookup.WidenFloat32(f)
			if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Fatalf("WidenFloat32(%v, bits %#x) = %v, want %v", f, math.Float32bits(f), got, want)
			}
		}
	}
}
