package answer

import (
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/apistack/platform/services/geoip/internal/countries"
	"github.com/apistack/platform/services/geoip/internal/lookup"
	"github.com/apistack/platform/services/geoip/internal/subdivisions"
)

// Location is the answer for one address: every field ipapi.co documents, with its names
// and JSON types, always present (strings empty and numbers 0 when unknown), and, for
// answers that are not a located record, ipapi.co's flags.
type Location struct {
	IP                 string  `json:"ip" doc:"The address the record describes, in canonical form (IPv4-mapped IPv6 is answered as IPv4)" example:"8.8.8.8"`
	Network            string  `json:"network" doc:"CIDR block of the database entry holding the address (from the BIN row's range, or the MMDB network), or of the local override (GEOIP_OVERRIDES) that answered" example:"8.8.8.0/24"`
	Version            string  `json:"version" doc:"IPv4 or IPv6 (empty only for an invalid batch entry)" example:"IPv4"`
	City               string  `json:"city" doc:"City name" example:"Mountain View"`
	Region             string  `json:"region" doc:"Region or state name" example:"California"`
	RegionCode         string  `json:"region_code" doc:"ISO 3166-2 code of the region without the country prefix: from the database, or derived from the name with the ISO 3166-2 list; empty when unknown" example:"CA"`
	Country            string  `json:"country" doc:"ISO 3166-1 alpha-2 code, empty when nothing is known about the address" example:"US"`
	CountryName        string  `json:"country_name" doc:"English short name of the country (Unicode CLDR)" example:"United States"`
	CountryCode        string  `json:"country_code" doc:"Same as country" example:"US"`
	CountryCodeISO3    string  `json:"country_code_iso3" doc:"ISO 3166-1 alpha-3 code (GeoNames)" example:"USA"`
	CountryCapital     string  `json:"country_capital" doc:"Capital (GeoNames)" example:"Washington"`
	CountryTLD         string  `json:"country_tld" doc:"Country code top-level domain (GeoNames)" example:".us"`
	ContinentCode      string  `json:"continent_code" doc:"AF, AN, AS, EU, NA, OC or SA" example:"NA"`
	InEU               bool    `json:"in_eu" doc:"Whether the country is a member of the European Union"`
	Postal             string  `json:"postal" doc:"Postal code (DB-IP Lite data has none)" example:"94043"`
	Latitude           float64 `json:"latitude" doc:"Decimal degrees; 0 with longitude 0 when unknown" example:"37.4056"`
	Longitude          float64 `json:"longitude" doc:"Decimal degrees; 0 with latitude 0 when unknown" example:"-122.0775"`
	Timezone           string  `json:"timezone" doc:"IANA time zone name" example:"America/Los_Angeles"`
	UTCOffset          string  `json:"utc_offset" doc:"UTC offset now, daylight saving included" example:"-0700"`
	CountryCallingCode string  `json:"country_calling_code" doc:"International calling code (GeoNames)" example:"+1"`
	Currency           string  `json:"currency" doc:"ISO 4217 currency code (GeoNames)" example:"USD"`
	CurrencyName       string  `json:"currency_name" doc:"Currency name (GeoNames)" example:"Dollar"`
	Languages          string  `json:"languages" doc:"Languages spoken, by number of speakers (GeoNames)" example:"en-US,es-US,haw,fr"`
	CountryArea        float64 `json:"country_area" doc:"Area in square kilometres (GeoNames)" example:"9629091"`
	CountryPopulation  int64   `json:"country_population" doc:"Population (GeoNames)" example:"327167434"`
	ASN                string  `json:"asn" doc:"Autonomous system, AS and its number, from the ASN database (GEOIP_ASN_DB); empty without one" example:"AS15169"`
	Org                string  `json:"org" doc:"Organisation of the autonomous system, from the ASN database; empty without one" example:"Google LLC"`
	Reserved           bool    `json:"reserved,omitempty" doc:"Present and true for private, loopback, link-local, multicast, documentation and other reserved addresses, answered without a lookup"`
	Error              bool    `json:"error,omitempty" doc:"Present and true, as on ipapi.co, when the entry is not a located record (reserved address, invalid batch entry)"`
	Reason             string  `json:"reason,omitempty" doc:"Why error is set: Reserved IP Address or Invalid IP Address" example:"Reserved IP Address"`

	// facts is the country's fields already encoded (countryJSON), when newLocation filled
	// them from its table and nothing has changed them since; appendJSON then copies them.
	facts *countryJSON
}

// Reasons, spelled as ipapi.co spells them: clients written for it compare these strings.
const (
	ReasonReserved = "Reserved IP Address"
	ReasonInvalid  = "Invalid IP Address"
)

func ipVersion(addr netip.Addr) string {
	if addr.Is4() {
		return "IPv4"
	}
	return "IPv6"
}

// newLocation turns a database record into the answer for addr. The texts of the address
// and its network are appended to buf, which is returned, and loc's IP and Network point
// into it: the answer's one buffer holds them with its JSON (answer.set). Other strings are
// rec's, so a record read in place must outlive loc or be copied (own).
func newLocation(addr netip.Addr, rec lookup.Record, buf []byte) (Location, []byte) {
	loc := Location{
		Version:     ipVersion(addr),
		City:        rec.City,
		Region:      rec.Region,
		RegionCode:  rec.RegionCode,
		Country:     rec.Country,
		CountryCode: rec.Country,
		Postal:      rec.Postal,
		Timezone:    rec.TimeZone,
		UTCOffset:   rec.UTCOffset,
		Org:         rec.Org,
	}
	loc.IP, buf = appendText(buf, addr.AppendTo)
	if rec.Network.IsValid() {
		loc.Network, buf = appendText(buf, rec.Network.AppendTo)
	}
	if rec.ASN != 0 {
		loc.ASN = "AS" + strconv.FormatUint(uint64(rec.ASN), 10)
	}
	if loc.RegionCode == "" {
		loc.RegionCode = subdivisions.Code(rec.Country, rec.Region)
	}
	if rec.HasLocation {
		loc.Latitude, loc.Longitude = rec.Latitude, rec.Longitude
	}
	// One naming source for every database: IP2Location files say "United States of
	// America", DB-IP says nothing; ipapi.co says "United States", as CLDR does.
	if setCountryFacts(&loc, rec.Country) {
		loc.facts = countryFragments(rec.Country)
	} else {
		loc.CountryName = rec.CountryName
	}
	return loc, buf
}

// setCountryFacts fills l's country code and the fields that follow from it, reporting
// false when the table does not know code.
func setCountryFacts(l *Location, code string) bool {
	f, ok := countries.Lookup(code)
	if !ok {
		return false
	}
	l.CountryCode = code
	l.CountryName, l.ContinentCode, l.InEU = f.Name, f.Continent, f.InEU
	l.CountryCodeISO3, l.CountryCapital, l.CountryTLD = f.ISO3, f.Capital, f.TLD
	l.CountryCallingCode, l.Currency, l.CurrencyName = f.CallingCode, f.Currency, f.CurrencyName
	l.Languages, l.CountryArea, l.CountryPopulation = f.Languages, f.Area, f.Population
	return true
}

// appendText appends what write writes to buf and returns it as a string sharing buf's
// memory, with buf. The bytes are never written again (later appends go after them, or to
// a new array when buf is full), so the string stays as it was.
func appendText(buf []byte, write func([]byte) []byte) (string, []byte) {
	start := len(buf)
	buf = write(buf)
	if len(buf) == start {
		return "", buf
	}
	return unsafe.String(&buf[start], len(buf)-start), buf
}

// own copies l's strings to the Go heap: a Location built from a record read in place
// (lookup.InPlaceDB) is kept past the record's lease only as a copy. Invalid UTF-8 becomes
// U+FFFD, byte by byte, as in the JSON encoding: a record read back from a cached answer's
// JSON then writes every format as the record itself does.
func (l *Location) own() {
	for i := range fields {
		if f := &fields[i]; f.kind == 's' {
			p := (*string)(f.ptr(l))
			*p = validCopy(*p)
		}
	}
}

// validCopy is a copy of s with each byte that is not part of valid UTF-8 replaced by U+FFFD.
func validCopy(s string) string {
	if utf8.ValidString(s) {
		return strings.Clone(s)
	}
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[:size])
		}
		s = s[size:]
	}
	return b.String()
}

// reservedLocation is the answer for an address no database can place.
func reservedLocation(addr netip.Addr) Location {
	return Location{IP: addr.String(), Version: ipVersion(addr), Reserved: true, Error: true, Reason: ReasonReserved}
}

// Invalid is a batch entry that is not an address.
func Invalid(text string) Location {
	return Location{IP: Clip(text), Error: true, Reason: ReasonInvalid}
}

// Clip bounds what is echoed back from the request.
func Clip(s string) string {
	const max = 100
	if len(s) <= max {
		return s
	}
	return s[:max]
}
