package lookup

import "testing"

// The table answers as x/text does for every two-byte code, letters of either case,
// digits and bytes outside ASCII included.
func TestCountryNameTableMatchesXText(t *testing.T) {
	known := 0
	for i := range 1 << 16 {
		code := string([]byte{byte(i >> 8), byte(i)})
		got, want := CountryName(code), countryNameOf(code)
		if got != want {
			t.Fatalf("CountryName(%q) = %q; x/text says %q", code, got, want)
		}
		if got != "" && code[0] <= 'Z' && code[1] <= 'Z' {
			known++
		}
	}
	// ISO 3166-1 assigns 249 codes; x/text also names a few reserved ones (XK, EU...).
	if known < 249 {
		t.Errorf("%d upper-case codes named; want at least the 249 of ISO 3166-1", known)
	}
}

func BenchmarkCountryName(b *testing.B) {
	codes := []string{"US", "DE", "BR", "JP", "ZA", "zz"}
	for i := 0; b.Loop(); i++ {
		CountryName(codes[i%len(codes)])
	}
}

func BenchmarkCountryNameXText(b *testing.B) {
	codes := []string{"US", "DE", "BR", "JP", "ZA", "zz"}
	for i := 0; b.Loop(); i++ {
		countryNameOf(codes[i%len(codes)])
	}
}
