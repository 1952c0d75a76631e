// Package countries answers the country facts the HTTP answers carry beyond the database's
// own fields: English name, continent code and European Union membership, by ISO 3166-1
// alpha-2 code, from the Unicode CLDR data in golang.org/x/text.
package countries

import (
	"golang.org/x/text/language"
	"golang.org/x/text/language/display"
)

// Facts are what is known about one country.
type Facts struct {
	Name      string // English short name, e.g. "United States"
	Continent string // AF, AN, AS, EU, NA, OC or SA; "" when unknown
	InEU      bool
}

// continents are the UN M.49 areas that make up the two-letter continent codes ipapi-style
// APIs use. Antarctica comes first: CLDR also files AQ under Oceania.
var continents = []struct {
	code string
	area language.Region
}{
	{"AN", language.MustParseRegion("010")},
	{"AF", language.MustParseRegion("002")},
	{"AS", language.MustParseRegion("142")},
	{"EU", language.MustParseRegion("150")},
	{"NA", language.MustParseRegion("003")}, // North, Central America and the Caribbean
	{"SA", language.MustParseRegion("005")},
	{"OC", language.MustParseRegion("009")},
}

// leftEU corrects CLDR's "EU" grouping as shipped in x/text, which predates the United
// Kingdom's withdrawal (31 January 2020). Membership otherwise follows CLDR.
var leftEU = map[string]bool{"GB": true}

// table holds every two-letter code CLDR knows as a country, computed once: lookups on the
// request path are then one array index, with no allocation and no containment walk.
var table = build()

func build() *[26 * 26]Facts {
	var t [26 * 26]Facts
	eu := language.MustParseRegion("EU")
	names := display.English.Regions()
	for a := byte('A'); a <= 'Z'; a++ {
		for b := byte('A'); b <= 'Z'; b++ {
			code := string([]byte{a, b})
			r, err := language.ParseRegion(code)
			if err != nil || !r.IsCountry() {
				continue
			}
			f := Facts{Name: names.Name(r), InEU: eu.Contains(r) && !leftEU[code]}
			for _, c := range continents {
				if c.area.Contains(r) {
					f.Continent = c.code
					break
				}
			}
			if f.Continent == "" {
				// Groupings (EZ, UN) and withdrawn codes (UK, DY, RH) sit in no M.49
				// area; they are not countries an address can be in.
				continue
			}
			t[index(a, b)] = f
		}
	}
	return &t
}

func index(a, b byte) int { return int(a-'A')*26 + int(b-'A') }

// Lookup returns the facts of an upper-case ISO 3166-1 alpha-2 code; ok is false for
// anything else (including "", the code of an unknown country).
func Lookup(code string) (f Facts, ok bool) {
	if len(code) != 2 || code[0] < 'A' || code[0] > 'Z' || code[1] < 'A' || code[1] > 'Z' {
		return Facts{}, false
	}
	f = table[index(code[0], code[1])]
	return f, f.Name != ""
}
