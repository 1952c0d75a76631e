package geoipfloor

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestFloorEchoesTheAddressInAFixedRecord(t *testing.T) {
	h := New(Options{})
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
	New(Options{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/8.8.8.8/json/", nil))
	if rec.Body.String() != ref {
		t.Errorf("body\n%s\nwant\n%s", rec.Body.String(), ref)
	}
}

// With AnswerHeaders the floor sends a geoip answer's headers: the same names, and values
// of the lengths geoip's have (a request id after some million requests, its ETag), so
// both answers are the same size. Without, it sends only Content-Type.
func TestFloorSendsGeoipsHeadersWhenAsked(t *testing.T) {
	want := map[string]int{ // header: value length in a geoip answer for an explicit address
		"Content-Type": len("application/json; charset=utf-8"), "X-Request-Id": len("e2c89c2a54fe-1a2b3"),
		"X-Content-Type-Options": len("nosniff"), "Cache-Control": len("public, max-age=3600"),
		"Etag": len(`"0f6cca5d-d3d6cd7938e452e6"`),
	}
	for _, headers := range []bool{false, true} {
		h := New(Options{AnswerHeaders: headers})
		for range 2 { // the shared values survive a request
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/8.8.8.8/json/", nil))
			got := rec.Result().Header
			if !headers {
				if len(got) != 1 || got.Get("Content-Type") == "" {
					t.Fatalf("plain floor sent %v", got)
				}
				continue
			}
			if len(got) != len(want) {
				t.Fatalf("sent %d headers, want %d: %v", len(got), len(want), got)
			}
			for k, n := range want {
				if v := got[k]; len(v) != 1 || len(v[0]) != n {
					t.Errorf("%s: %q, want one value of %d bytes", k, v, n)
				}
			}
		}
	}
}
