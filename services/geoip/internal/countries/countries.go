// Package countries answers the country facts the HTTP answers carry beyond the database's
// own fields, by ISO 3166-1 alpha-2 code: English name, continent code and European Union
// membership from the Unicode CLDR data in golang.org/x/text; alpha-3 code, capital, tld,
// calling code, currency, languages, area and population from GeoNames' country table
// (data/countryInfo.txt, embedded; the table ipapi.co answers from).
package countries

import (
	"bufio"
	"bytes"
	_ "embed"
	"strconv"
	"strings"

	"golang.org/x/text/language"

	"github.com/apistack/platform/services/geoip/internal/lookup"
)

// Facts are what is known about one country.
type Facts struct {
	Name      string // English short name, e.g. "United States"
	Continent string // AF, AN, AS, EU, NA, OC or SA; "" when unknown
	InEU      bool

	// From GeoNames; empty or 0 when it has no value.
	ISO3         string  // ISO 3166-1 alpha-3, e.g. "USA"
	Capital      string  // e.g. "Washington"
	TLD          string  // e.g. ".us"
	CallingCode  string  // e.g. "+1", "+1-268"
	Currency     string  // ISO 4217 code, e.g. "USD"
	CurrencyName string  // e.g. "Dollar"
	Languages    string  // locales by number of speakers, e.g. "en-US,es-US,haw,fr"
	Area         float64 // square kilometres
	Population   int64
}

//go:embed data/countryInfo.txt
var geonames []byte

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
	for a := byte('A'); a <= 'Z'; a++ {
		for b := byte('A'); b <= 'Z'; b++ {
			code := string([]byte{a, b})
			r, err := language.ParseRegion(code)
			if err != nil || !r.IsCountry() {
				continue
			}
			// The name as databases without names get it (lookup's table, from x/text).
			f := Facts{Name: lookup.CountryName(code), InEU: eu.Contains(r) && !leftEU[code]}
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
	addGeoNames(&t, geonames)
	return &t
}

// addGeoNames fills the GeoNames columns of the countries CLDR knows:
// ISO ISO3 ISO-Numeric fips Country Capital Area Population Continent tld CurrencyCode
// CurrencyName Phone PostalFormat PostalRegex Languages geonameid neighbours EquivalentFips.
func addGeoNames(t *[26 * 26]Facts, data []byte) int {
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		col := strings.Split(line, "\t")
		if len(col) < 16 || len(col[0]) != 2 {
			continue
		}
		code := col[0]
		if code[0] < 'A' || code[0] > 'Z' || code[1] < 'A' || code[1] > 'Z' {
			continue
		}
		f := &t[index(code[0], code[1])]
		if f.Name == "" {
			continue // not a country CLDR knows (none today); no half-filled entries
		}
		f.ISO3 = strings.TrimSpace(col[1])
		f.Capital = strings.TrimSpace(col[5])
		f.Area, _ = strconv.ParseFloat(strings.TrimSpace(col[6]), 64)
		f.Population, _ = strconv.ParseInt(strings.TrimSpace(col[7]), 10, 64)
		f.TLD = strings.TrimSpace(col[9])
		f.Currency = strings.TrimSpace(col[10])
		f.CurrencyName = strings.TrimSpace(col[11])
		f.CallingCode = callingCode(col[12])
		f.Languages = strings.Trim(strings.TrimSpace(col[15]), ",")
		n++
	}
	return n
}

// callingCode writes GeoNames' phone column as ipapi.co does: "1" -> "+1", "+1-268"
// kept, "+1-809 and 1-829" -> "+1-809" (the first).
func callingCode(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, " and "); i >= 0 {
		s = s[:i]
	}
	if s == "" || s[0] == '+' {
		return s
	}
	return "+" + s
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
