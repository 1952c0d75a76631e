package countries

import "testing"

func TestLookup(t *testing.T) {
	tests := []struct {
		code      string
		name      string
		continent string
		inEU      bool
	}{
		{"US", "United States", "NA", false},
		{"DE", "Germany", "EU", true},
		{"FR", "France", "EU", true},
		{"HR", "Croatia", "EU", true},
		{"CY", "Cyprus", "AS", true}, // in Asia by geography, in the EU by treaty
		{"GB", "United Kingdom", "EU", false},
		{"CH", "Switzerland", "EU", false},
		{"NO", "Norway", "EU", false},
		{"RU", "Russia", "EU", false},
		{"TR", "Türkiye", "AS", false},
		{"MX", "Mexico", "NA", false},
		{"PA", "Panama", "NA", false},
		{"BR", "Brazil", "SA", false},
		{"AU", "Australia", "OC", false},
		{"AQ", "Antarctica", "AN", false},
		{"EG", "Egypt", "AF", false},
		{"JP", "Japan", "AS", false},
	}
	for _, tt := range tests {
		f, ok := Lookup(tt.code)
		if !ok {
			t.Errorf("Lookup(%q) not found", tt.code)
			continue
		}
		if f.Continent != tt.continent || f.InEU != tt.inEU {
			t.Errorf("Lookup(%q) = %+v, want continent %s, in_eu %v", tt.code, f, tt.continent, tt.inEU)
		}
		if tt.code != "TR" && f.Name != tt.name { // CLDR renamed Turkey; either is fine
			t.Errorf("Lookup(%q).Name = %q, want %q", tt.code, f.Name, tt.name)
		}
	}
}

func TestLookupRefusesNonCountries(t *testing.T) {
	for _, code := range []string{"", "-", "us", "U", "USA", "ZZ", "EU", "UN", "A1", "\xff\xff"} {
		if f, ok := Lookup(code); ok {
			t.Errorf("Lookup(%q) = %+v, want not found", code, f)
		}
	}
}

func TestEveryCountryHasAContinent(t *testing.T) {
	n, eu := 0, 0
	for a := byte('A'); a <= 'Z'; a++ {
		for b := byte('A'); b <= 'Z'; b++ {
			f, ok := Lookup(string([]byte{a, b}))
			if !ok {
				continue
			}
			n++
			if f.InEU {
				eu++
			}
			if f.Continent == "" {
				t.Errorf("%c%c (%s) has no continent", a, b, f.Name)
			}
		}
	}
	if n < 240 {
		t.Errorf("only %d countries known, want about 249", n)
	}
	if eu != 27 {
		t.Errorf("%d EU members, want 27", eu)
	}
}

func BenchmarkLookup(b *testing.B) {
	for b.Loop() {
		Lookup("DE")
	}
}
