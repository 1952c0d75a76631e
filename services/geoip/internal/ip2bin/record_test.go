package ip2bin

import (
	"testing"

	"github.com/ip2location/ip2location-go/v9"
)

const unavailable = "This parameter is unavailable for selected data file. Please upgrade the data file."

func TestRecordNormalisesLibraryQuirks(t *testing.T) {
	r := ip2location.IP2Locationrecord{
		Country_short: "US", Country_long: "United States of America", Region: "-", City: "Mountain View",
		Zipcode: unavailable, Timezone: "-07:00", Latitude: 37.40599, Longitude: -122.078514,
		Isp: "Google LLC", Domain: "-", Asn: "15169", As: unavailable,
	}
	rec := toRecord(&r, true)
	if rec.Region != "" || rec.Postal != "" || rec.TimeZone != "" || rec.UTCOffset != "-0700" {
		t.Errorf("placeholders not cleaned: %+v", rec)
	}
	if rec.Latitude != 37.40599 || rec.Longitude != -122.078514 || !rec.HasLocation {
		t.Errorf("coordinates %v %v", rec.Latitude, rec.Longitude)
	}
	if len(rec.Extra) != 2 || rec.Extra["isp"] != "Google LLC" || rec.Extra["asn"] != "15169" {
		t.Errorf("extra %v", rec.Extra)
	}
	if rec := toRecord(&r, false); rec.Extra != nil {
		t.Errorf("location-only type has extras %v", rec.Extra)
	}
	empty := ip2location.IP2Locationrecord{Country_short: "-", Country_long: "-", Region: "-", City: "-"}
	if rec := toRecord(&empty, true); rec.Found() || rec.HasLocation {
		t.Errorf("unknown row found: %+v", rec)
	}
}
