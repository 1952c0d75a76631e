package httpapi

import (
	"net/netip"

	"github.com/apistack/platform/services/geoip/internal/countries"
	"github.com/apistack/platform/services/geoip/internal/lookup"
)

// Location is the answer for one address: the seed's eight fields, always present
// (strings empty and coordinates 0 when unknown), ipapi.co's version, country facts and
// UTC offset, and, for answers that are not a located record, ipapi.co's flags.
type Location struct {
	IP            string  `json:"ip" doc:"The address the record describes, in canonical form (IPv4-mapped IPv6 is answered as IPv4)" example:"8.8.8.8"`
	Version       string  `json:"version" doc:"IPv4 or IPv6 (empty only for an invalid batch entry)" example:"IPv4"`
	City          string  `json:"city" doc:"City name" example:"Mountain View"`
	Region        string  `json:"region" doc:"Region or state name" example:"California"`
	Country       string  `json:"country" doc:"ISO 3166-1 alpha-2 code, empty when nothing is known about the address" example:"US"`
	CountryName   string  `json:"country_name" doc:"English short name of the country" example:"United States"`
	ContinentCode string  `json:"continent_code" doc:"AF, AN, AS, EU, NA, OC or SA" example:"NA"`
	InEU          bool    `json:"in_eu" doc:"Whether the country is a member of the European Union"`
	Postal        string  `json:"postal" doc:"Postal code (DB-IP Lite data has none)" example:"94043"`
	Latitude      float64 `json:"latitude" doc:"Decimal degrees; 0 with longitude 0 when unknown" example:"37.4056"`
	Longitude     float64 `json:"longitude" doc:"Decimal degrees; 0 with latitude 0 when unknown" example:"-122.0775"`
	Timezone      string  `json:"timezone" doc:"IANA time zone name" example:"America/Los_Angeles"`
	UTCOffset     string  `json:"utc_offset" doc:"UTC offset now, daylight saving included" example:"-0700"`
	Reserved      bool    `json:"reserved,omitempty" doc:"Present and true for private, loopback, link-local, multicast, documentation and other reserved addresses, answered without a lookup"`
	Error         bool    `json:"error,omitempty" doc:"Present and true, as on ipapi.co, when the entry is not a located record (reserved address, invalid batch entry)"`
	Reason        string  `json:"reason,omitempty" doc:"Why error is set: Reserved IP Address or Invalid IP Address" example:"Reserved IP Address"`
}

// Reasons, spelled as ipapi.co spells them: clients written for it compare these strings.
const (
	reasonReserved = "Reserved IP Address"
	reasonInvalid  = "Invalid IP Address"
)

func ipVersion(addr netip.Addr) string {
	if addr.Is4() {
		return "IPv4"
	}
	return "IPv6"
}

// newLocation turns a database record into the answer for addr.
func newLocation(addr netip.Addr, rec lookup.Record) Location {
	loc := Location{
		IP:        addr.String(),
		Version:   ipVersion(addr),
		City:      rec.City,
		Region:    rec.Region,
		Country:   rec.Country,
		Postal:    rec.Postal,
		Timezone:  rec.TimeZone,
		UTCOffset: rec.UTCOffset,
	}
	if rec.HasLocation {
		loc.Latitude, loc.Longitude = rec.Latitude, rec.Longitude
	}
	if f, ok := countries.Lookup(rec.Country); ok {
		// One naming source for every database: IP2Location files say "United States of
		// America", DB-IP says nothing; ipapi.co says "United States", as CLDR does.
		loc.CountryName, loc.ContinentCode, loc.InEU = f.Name, f.Continent, f.InEU
	} else {
		loc.CountryName = rec.CountryName
	}
	return loc
}

// reservedLocation is the answer for an address no database can place.
func reservedLocation(addr netip.Addr) Location {
	return Location{IP: addr.String(), Version: ipVersion(addr), Reserved: true, Error: true, Reason: reasonReserved}
}

// invalidLocation is a batch entry that is not an address.
func invalidLocation(text string) Location {
	return Location{IP: clip(text), Error: true, Reason: reasonInvalid}
}

// clip bounds what is echoed back from the request.
func clip(s string) string {
	const max = 100
	if len(s) <= max {
		return s
	}
	return s[:max]
}
