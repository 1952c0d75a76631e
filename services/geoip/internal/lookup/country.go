package lookup

import (
	"golang.org/x/text/language"
	"golang.org/x/text/language/display"
)

// countryNames holds the English short name of every ISO 3166-1 alpha-2 code, indexed by
// its two letters (A-Z each): built once from x/text's tables, whose lookup (parse, then
// search) cost about 0.9 % of an MMDB server's CPU under random load when it ran on each
// uncached answer. 676 strings, all pointing into x/text's static data.
var countryNames = func() (t [26 * 26]string) {
	for i := range t {
		t[i] = countryNameOf(string([]byte{'A' + byte(i/26), 'A' + byte(i%26)}))
	}
	return t
}()

// countryNameOf is CountryName from x/text: the table's source, and its test's.
func countryNameOf(code string) string {
	if len(code) != 2 {
		return ""
	}
	region, err := language.ParseRegion(code)
	if err != nil || !region.IsCountry() {
		return ""
	}
	return display.English.Regions().Name(region)
}

// CountryName returns the English short name of an ISO 3166-1 alpha-2 code (either
// case), or "" when the code is unknown. Databases without names (DB-IP Lite) get them
// from here.
func CountryName(code string) string {
	if len(code) != 2 {
		return ""
	}
	a, b := upperLetter(code[0]), upperLetter(code[1])
	if a < 0 || b < 0 {
		return ""
	}
	return countryNames[a*26+b]
}

// upperLetter is c's index in the alphabet (either case), or -1 when c is no ASCII letter.
func upperLetter(c byte) int {
	switch {
	case 'A' <= c && c <= 'Z':
		return int(c - 'A')
	case 'a' <= c && c <= 'z':
		return int(c - 'a')
	}
	return -1
}
