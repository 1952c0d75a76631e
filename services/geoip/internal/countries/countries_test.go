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

func TestGeoNamesFacts(t *testing.T) {
	us, _ := Lookup("US")
	want := Facts{Name: "United States", Continent: "NA", ISO3: "USA", Capital: "Washington", TLD: ".us",
		CallingCode: "+1", Currency: "USD", CurrencyName: "Dollar", Languages: "en-US,es-US,haw,fr",
		Area: 9629091, Population: 327167434}
	if us != want {
		t.Errorf("US = %+v\nwant %+v", us, want)
	}
	for code, check := range map[string]func(Facts) bool{
		"GB": func(f Facts) bool {
			return f.ISO3 == "GBR" && f.TLD == ".uk" && f.CallingCode == "+44" && f.Currency == "GBP"
		},
		"AG": func(f Facts) bool { return f.CallingCode == "+1-268" },
		"DO": func(f Facts) bool { return f.CallingCode == "+1-809" },
		"HR": func(f Facts) bool { return f.Currency == "EUR" },
		"GI": func(f Facts) bool { return f.Area == 6.5 },
		"IL": func(f Facts) bool { return f.Languages == "he,ar-IL,en-IL" }, // trailing comma dropped
		"AQ": func(f Facts) bool { return f.Capital == "" && f.Currency == "" && f.Population == 0 && f.ISO3 == "ATA" },
	} {
		f, ok := Lookup(code)
		if !ok || !check(f) {
			t.Errorf("%s = %+v", code, f)
		}
	}
	// Every country of the table is one CLDR knows: nothing is dropped.
	var scratch [26 * 26]Facts
	for a := byte('A'); a <= 'Z'; a++ {
		for b := byte('A'); b <= 'Z'; b++ {
			scratch[index(a, b)] = table[index(a, b)]
		}
	}
	if n := addGeoNames(&scratch, geonames); n < 245 {
		t.Errorf("only %d GeoNames rows matched a country", n)
	}
}
