package lookup

import (
	"golang.org/x/text/language"
	"golang.org/x/text/language/display"
)

var regionNames = display.English.Regions()

// CountryName returns the English short name of an ISO 3166-1 alpha-2 code, or "" when
// the code is unknown. Databases without names (DB-IP Lite) get them from here.
func CountryName(code string) string {
	if len(code) != 2 {
		return ""
	}
	region, err := language.ParseRegion(code)
	if err != nil || !region.IsCountry() {
		return ""
	}
	return regionNames.Name(region)
}
