package geoipfloor

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestFloorEchoesTheAddressInAFixedRecord(t *testing.T) {
	h := New()
	for _, tc := range []struct{ ip, version string }{{"8.8.4.4", "IPv4"}, {"2a00:1450:4001::1", "IPv6"}} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/"+tc.ip+"/json/", nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: status %d", tc.ip, rec.Code)
		}
		var got Record
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		want := fixed
		want.IP, want.Version = tc.ip, tc.version
		if got != want {
			t.Errorf("got %+v, want %+v", got, want)
		}
	}
}

func TestFloorAnswerMatchesTheReferenceBytes(t *testing.T) {
	// The 27 keys of the geoip service's answer, in its order (services/geoip/internal/httpapi).
	const ref = `{"ip":"8.8.8.8","network":"8.8.8.0/24","version":"IPv4","city":"Mountain View","region":"California","region_code":"CA","country":"US","country_name":"United States","country_code":"US","country_code_iso3":"USA","country_capital":"Washington","country_tld":".us","continent_code":"NA","in_eu":false,"postal":"94043","latitude":37.4056,"longitude":-122.0775,"timezone":"America/Los_Angeles","utc_offset":"-0800","country_calling_code":"+1","currency":"USD","currency_name":"Dollar","languages":"en-US,es-US,haw,fr","country_area":9629091,"country_population":327167434,"asn":"AS15169","org":"Google LLC"}`
	rec := httptest.NewRecorder()
	New().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/8.8.8.8/json/", nil))
	if rec.Body.String() != ref {
		t.Errorf("body\n%s\nwant\n%s", rec.Body.String(), ref)
	}
}
