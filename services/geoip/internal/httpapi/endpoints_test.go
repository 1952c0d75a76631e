package httpapi

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/apistack/platform/libs/apiserver/openapitest"
	"github.com/apistack/platform/services/geoip/internal/testdb"
)

// row is one request and what its answer must be; a new behaviour is a new row.
type row struct {
	name    string
	req     request
	status  int
	ctype   string         // Content-Type prefix
	body    string         // exact body, when set
	json    map[string]any // keys the JSON object must have, compared as text
	absent  []string       // keys the JSON object must not have
	has     []string       // substrings of the body
	headers map[string]string
}

func (r row) check(t *testing.T, s *testServer) {
	t.Helper()
	w := s.do(r.req)
	if w.Code != r.status {
		t.Fatalf("%s %s: status %d, want %d\n%s", r.req.method, r.req.path, w.Code, r.status, w.Body)
	}
	if r.ctype != "" && !strings.HasPrefix(w.Header().Get("Content-Type"), r.ctype) {
		t.Errorf("Content-Type %q, want %s...", w.Header().Get("Content-Type"), r.ctype)
	}
	if r.body != "" && w.Body.String() != r.body {
		t.Errorf("body\n%q\nwant\n%q", w.Body.String(), r.body)
	}
	for _, sub := range r.has {
		if !strings.Contains(w.Body.String(), sub) {
			t.Errorf("body lacks %q:\n%s", sub, w.Body)
		}
	}
	if r.json != nil || r.absent != nil {
		got := decodeObject(t, w.Body.Bytes())
		for k, want := range r.json {
			v, ok := got[k]
			if !ok {
				t.Errorf("key %q missing in %s", k, w.Body)
				continue
			}
			if fmt.Sprint(v) != fmt.Sprint(want) {
				t.Errorf("%s = %v, want %v", k, v, want)
			}
		}
		for _, k := range r.absent {
			if _, ok := got[k]; ok {
				t.Errorf("key %q present in %s", k, w.Body)
			}
		}
	}
	for k, want := range r.headers {
		if got := w.Header().Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
}

// theEight are the seed's fields, present in every record answer.
var theEight = []string{"ip", "city", "region", "country", "postal", "latitude", "longitude", "timezone"}

func TestEndpointsOnEmbeddedSample(t *testing.T) {
	s := newTestServer(t, testdb.EmbeddedSample(t))
	google := map[string]any{"ip": "8.8.8.8", "network": "8.8.8.0/24", "version": "IPv4", "city": "Mountain View", "region": "California",
		"region_code": "CA", "country": "US", "country_name": "United States", "country_code": "US", "country_code_iso3": "USA",
		"country_capital": "Washington", "country_tld": ".us", "continent_code": "NA", "in_eu": false, "postal": "",
		"latitude": "37.422", "longitude": "-122.085", "timezone": "America/Los_Angeles", "utc_offset": "-0800",
		"country_calling_code": "+1", "currency": "USD", "currency_name": "Dollar", "languages": "en-US,es-US,haw,fr",
		"country_area": "9629091", "country_population": "327167434", "asn": "", "org": ""}
	googleV6 := map[string]any{"ip": "2001:4860:4860::8888", "network": "2001:4860:4840::/42", "version": "IPv6", "country": "CA",
		"country_code": "CA", "city": "Montreal", "region_code": "QC", "continent_code": "NA", "timezone": "America/Toronto",
		"utc_offset": "-0500", "currency": "CAD", "country_code_iso3": "CAN"}
	const googleCSV = "ip,network,version,city,region,region_code,country,country_name,country_code,country_code_iso3," +
		"country_capital,country_tld,continent_code,in_eu,postal,latitude,longitude,timezone,utc_offset," +
		"country_calling_code,currency,currency_name,languages,country_area,country_population,asn,org\r\n" +
		"8.8.8.8,8.8.8.0/24,IPv4,Mountain View,California,CA,US,United States,US,USA,Washington,.us,NA,false,," +
		"37.422,-122.085,America/Los_Angeles,-0800,+1,USD,Dollar,\"en-US,es-US,haw,fr\",9629091,327167434,,\r\n"
	const googleYAML = "ip: \"8.8.8.8\"\nnetwork: \"8.8.8.0/24\"\nversion: \"IPv4\"\ncity: \"Mountain View\"\n" +
		"region: \"California\"\nregion_code: \"CA\"\ncountry: \"US\"\ncountry_name: \"United States\"\n" +
		"country_code: \"US\"\ncountry_code_iso3: \"USA\"\ncountry_capital: \"Washington\"\ncountry_tld: \".us\"\n" +
		"continent_code: \"NA\"\nin_eu: false\npostal: \"\"\nlatitude: 37.422\nlongitude: -122.085\n" +
		"timezone: \"America/Los_Angeles\"\nutc_offset: \"-0800\"\ncountry_calling_code: \"+1\"\ncurrency: \"USD\"\n" +
		"currency_name: \"Dollar\"\nlanguages: \"en-US,es-US,haw,fr\"\ncountry_area: 9629091\n" +
		"country_population: 327167434\nasn: \"\"\norg: \"\"\n"
	const googleJSON = `{"ip":"8.8.8.8","network":"8.8.8.0/24","version":"IPv4","city":"Mountain View","region":"California",` +
		`"region_code":"CA","country":"US","country_name":"United States","country_code":"US","country_code_iso3":"USA",` +
		`"country_capital":"Washington","country_tld":".us","continent_code":"NA","in_eu":false,"postal":"",` +
		`"latitude":37.422,"longitude":-122.085,"timezone":"America/Los_Angeles","utc_offset":"-0800",` +
		`"country_calling_code":"+1","currency":"USD","currency_name":"Dollar","languages":"en-US,es-US,haw,fr",` +
		`"country_area":9629091,"country_population":327167434,"asn":"","org":""}`
	fromGoogle := "8.8.8.8:5555"
	rows := []row{
		{name: "json IPv4", req: request{path: "/8.8.8.8/json/"}, status: 200, ctype: "application/json", body: googleJSON,
			headers: map[string]string{"Cache-Control": "public, max-age=3600", "X-Content-Type-Options": "nosniff"}},
		{name: "json IPv6", req: request{path: "/2001:4860:4860::8888/json/"}, status: 200, ctype: "application/json", json: googleV6},
		{name: "json IPv6 non-canonical text", req: request{path: "/2001:4860:4860:0:0:0:0:8888/json/"}, status: 200, json: googleV6},
		{name: "json IPv4-mapped IPv6 answered as IPv4", req: request{path: "/::ffff:8.8.8.8/json/"}, status: 200, json: google},
		{name: "json caller", req: request{path: "/json/", peer: fromGoogle}, status: 200, json: google,
			headers: map[string]string{"Cache-Control": "private, no-cache"}},
		{name: "json caller IPv6", req: request{path: "/json/", peer: "[2001:4860:4860::8888]:443"}, status: 200, json: googleV6},
		{name: "xml", req: request{path: "/8.8.8.8/xml/"}, status: 200, ctype: "application/xml",
			has: []string{`<?xml version="1.0" encoding="UTF-8"?>`, "<root><ip>8.8.8.8</ip><network>8.8.8.0/24</network><version>IPv4</version><city>Mountain View</city>", "<in_eu>false</in_eu>", "<postal></postal>", "<utc_offset>-0800</utc_offset>", "<country_population>327167434</country_population><asn></asn><org></org></root>"}},
		{name: "xml IPv6", req: request{path: "/2001:4860:4860::8888/xml/"}, status: 200, has: []string{"<ip>2001:4860:4860::8888</ip><network>2001:4860:4840::/42</network><version>IPv6</version>"}},
		{name: "csv", req: request{path: "/8.8.8.8/csv/"}, status: 200, ctype: "text/csv", body: googleCSV},
		{name: "yaml", req: request{path: "/8.8.8.8/yaml/"}, status: 200, ctype: "application/yaml", body: googleYAML},
		{name: "jsonp", req: request{path: "/8.8.8.8/jsonp/?callback=app.geo.done"}, status: 200, ctype: "application/javascript",
			body: "/**/app.geo.done(" + googleJSON + ");", headers: map[string]string{"X-Content-Type-Options": "nosniff"}},
		{name: "jsonp default callback", req: request{path: "/8.8.8.8/jsonp/"}, status: 200, body: "/**/callback(" + googleJSON + ");"},
		{name: "jsonp IPv6", req: request{path: "/2001:4860:4860::8888/jsonp/?callback=$cb_1"}, status: 200, has: []string{`/**/$cb_1({"ip":"2001:4860:4860::8888"`}},
		{name: "caller xml", req: request{path: "/xml/", peer: fromGoogle}, status: 200, ctype: "application/xml", has: []string{"<ip>8.8.8.8</ip>"}},
		{name: "caller csv", req: request{path: "/csv/", peer: fromGoogle}, status: 200, body: googleCSV},
		{name: "caller yaml", req: request{path: "/yaml/", peer: fromGoogle}, status: 200, body: googleYAML},
		{name: "caller jsonp", req: request{path: "/jsonp/?callback=cb", peer: fromGoogle}, status: 200, body: "/**/cb(" + googleJSON + ");",
			headers: map[string]string{"Cache-Control": "private, no-cache"}},
		{name: "field city", req: request{path: "/8.8.8.8/city/"}, status: 200, ctype: "text/plain", body: "Mountain View",
			headers: map[string]string{"Cache-Control": "public, max-age=3600"}},
		{name: "field country", req: request{path: "/8.8.8.8/country/"}, status: 200, body: "US"},
		{name: "field country_code", req: request{path: "/8.8.8.8/country_code/"}, status: 200, body: "US"},
		{name: "field country_name", req: request{path: "/8.8.8.8/country_name/"}, status: 200, body: "United States"},
		{name: "field region", req: request{path: "/8.8.8.8/region/"}, status: 200, body: "California"},
		{name: "field latitude", req: request{path: "/8.8.8.8/latitude/"}, status: 200, body: "37.422"},
		{name: "field longitude", req: request{path: "/8.8.8.8/longitude/"}, status: 200, body: "-122.085"},
		{name: "field latlong", req: request{path: "/8.8.8.8/latlong/"}, status: 200, body: "37.422,-122.085"},
		{name: "field timezone", req: request{path: "/8.8.8.8/timezone/"}, status: 200, body: "America/Los_Angeles"},
		{name: "field utc_offset", req: request{path: "/8.8.8.8/utc_offset/"}, status: 200, body: "-0800"},
		{name: "field in_eu", req: request{path: "/8.8.8.8/in_eu/"}, status: 200, body: "false"},
		{name: "field continent_code", req: request{path: "/8.8.8.8/continent_code/"}, status: 200, body: "NA"},
		{name: "field version", req: request{path: "/8.8.8.8/version/"}, status: 200, body: "IPv4"},
		{name: "field network", req: request{path: "/8.8.8.8/network/"}, status: 200, body: "8.8.8.0/24"},
		{name: "field region_code", req: request{path: "/8.8.8.8/region_code/"}, status: 200, body: "CA"},
		{name: "field country_code_iso3", req: request{path: "/8.8.8.8/country_code_iso3/"}, status: 200, body: "USA"},
		{name: "field country_capital", req: request{path: "/8.8.8.8/country_capital/"}, status: 200, body: "Washington"},
		{name: "field country_tld", req: request{path: "/8.8.8.8/country_tld/"}, status: 200, body: ".us"},
		{name: "field country_calling_code", req: request{path: "/8.8.8.8/country_calling_code/"}, status: 200, body: "+1"},
		{name: "field currency", req: request{path: "/8.8.8.8/currency/"}, status: 200, body: "USD"},
		{name: "field currency_name", req: request{path: "/8.8.8.8/currency_name/"}, status: 200, body: "Dollar"},
		{name: "field languages", req: request{path: "/8.8.8.8/languages/"}, status: 200, body: "en-US,es-US,haw,fr"},
		{name: "field country_area", req: request{path: "/8.8.8.8/country_area/"}, status: 200, body: "9629091"},
		{name: "field country_population", req: request{path: "/8.8.8.8/country_population/"}, status: 200, body: "327167434"},
		{name: "field asn without an ASN database", req: request{path: "/8.8.8.8/asn/"}, status: 200, body: ""},
		{name: "field org without an ASN database", req: request{path: "/8.8.8.8/org/"}, status: 200, body: ""},
		{name: "caller field asn", req: request{path: "/asn/", peer: fromGoogle}, status: 200, body: ""},
		{name: "field ip is canonical", req: request{path: "/::ffff:8.8.8.8/ip/"}, status: 200, body: "8.8.8.8"},
		{name: "field unknown value is empty", req: request{path: "/8.8.8.8/postal/"}, status: 200, body: ""},
		{name: "field IPv6", req: request{path: "/2001:4860:4860::8888/country/"}, status: 200, body: "CA"},
		{name: "caller field", req: request{path: "/city/", peer: fromGoogle}, status: 200, body: "Mountain View",
			headers: map[string]string{"Cache-Control": "private, no-cache"}},
		{name: "caller ip", req: request{path: "/ip/", peer: "[2001:4860:4860::8888]:1"}, status: 200, body: "2001:4860:4860::8888"},
		{name: "caller version", req: request{path: "/version/", peer: "[2001:4860:4860::8888]:1"}, status: 200, body: "IPv6"},
		{name: "unknown field", req: request{path: "/8.8.8.8/nope/"}, status: 404, ctype: "application/json",
			json: map[string]any{"error": true, "reason": "Not Found"}}, // ipapi.co's body: a lookup's grammar
		{name: "unknown caller path", req: request{path: "/nope/"}, status: 404, json: map[string]any{"statusCode": "404"}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) { r.check(t, s) })
	}
}

func TestRecordAnswersCarryTheEightFields(t *testing.T) {
	s := newTestServer(t, testdb.EmbeddedSample(t))
	for _, path := range []string{"/8.8.8.8/json/", "/2001:4860:4860::8888/json/", "/5.6.7.8/json/", "/10.1.2.3/json/", "/::1/json/"} {
		got := decodeObject(t, s.get(path).Body.Bytes())
		for _, k := range append(slices.Clone(theEight), "version", "utc_offset", "country_name", "continent_code", "in_eu") {
			if _, ok := got[k]; !ok {
				t.Errorf("%s: key %q missing", path, k)
			}
		}
		for _, k := range []string{"latitude", "longitude"} {
			if _, ok := got[k].(interface{ Float64() (float64, error) }); !ok {
				t.Errorf("%s: %s = %#v, want a number", path, k, got[k])
			}
		}
	}
}

func TestInvalidAndReservedAddresses(t *testing.T) {
	db := newFixtureDB()
	s := newTestServer(t, db)
	invalid := func(ip string) map[string]any {
		return map[string]any{"ip": ip, "error": true, "reason": "Invalid IP Address"}
	}
	reserved := func(ip, version string) map[string]any {
		return map[string]any{"ip": ip, "version": version, "reserved": true, "error": true, "reason": "Reserved IP Address",
			"city": "", "region": "", "country": "", "postal": "", "latitude": "0", "longitude": "0", "timezone": ""}
	}
	rows := []row{
		{name: "invalid IPv4", req: request{path: "/999.1.1.1/json/"}, status: 400, ctype: "application/json",
			body: `{"ip":"999.1.1.1","error":true,"reason":"Invalid IP Address"}`},
		{name: "invalid text", req: request{path: "/localhost/json/"}, status: 400, json: invalid("localhost")},
		{name: "invalid short IPv4", req: request{path: "/1.2.3/json/"}, status: 400, json: invalid("1.2.3")},
		{name: "invalid leading zero", req: request{path: "/010.1.1.1/json/"}, status: 400, json: invalid("010.1.1.1")},
		{name: "invalid IPv6", req: request{path: "/2001:db8:::1/json/"}, status: 400, json: invalid("2001:db8:::1")},
		{name: "zone id refused", req: request{path: "/fe80::1%25eth0/json/"}, status: 400, json: invalid("fe80::1%eth0"),
			has: []string{"zone identifiers are not accepted"}},
		{name: "zone id refused on a field", req: request{path: "/fe80::1%25en0/city/"}, status: 400, json: invalid("fe80::1%en0")},
		{name: "invalid on xml is still a JSON error", req: request{path: "/nope/xml/"}, status: 400, ctype: "application/json", json: invalid("nope")},
		{name: "invalid on jsonp", req: request{path: "/nope/jsonp/?callback=cb"}, status: 400, json: invalid("nope")},
		{name: "invalid on field", req: request{path: "/nope/city/"}, status: 400, json: invalid("nope")},
		{name: "jsonp call expression refused", req: request{path: "/8.8.8.8/jsonp/?callback=alert(1)"}, status: 400, has: []string{"query.callback"}},
		{name: "jsonp statement refused", req: request{path: "/8.8.8.8/jsonp/?callback=a%3Bb"}, status: 400},
		{name: "jsonp empty path part refused", req: request{path: "/8.8.8.8/jsonp/?callback=a..b"}, status: 400},
		{name: "jsonp digit first refused", req: request{path: "/8.8.8.8/jsonp/?callback=1a"}, status: 400},
		{name: "jsonp bracket refused", req: request{path: "/8.8.8.8/jsonp/?callback=a%5B0%5D"}, status: 400},
		{name: "jsonp script tag refused", req: request{path: "/jsonp/?callback=%3Cscript%3E"}, status: 400},
		{name: "jsonp too long refused", req: request{path: "/8.8.8.8/jsonp/?callback=" + strings.Repeat("a", 129)}, status: 400},
		{name: "jsonp twice refused", req: request{path: "/8.8.8.8/jsonp/?callback=a&callback=b"}, status: 400},
		{name: "private", req: request{path: "/10.1.2.3/json/"}, status: 200, json: reserved("10.1.2.3", "IPv4")},
		{name: "loopback", req: request{path: "/127.0.0.1/json/"}, status: 200, json: reserved("127.0.0.1", "IPv4")},
		{name: "link-local", req: request{path: "/169.254.1.1/json/"}, status: 200, json: reserved("169.254.1.1", "IPv4")},
		{name: "multicast", req: request{path: "/224.0.0.251/json/"}, status: 200, json: reserved("224.0.0.251", "IPv4")},
		{name: "documentation", req: request{path: "/203.0.113.9/json/"}, status: 200, json: reserved("203.0.113.9", "IPv4")},
		{name: "carrier-grade NAT", req: request{path: "/100.64.1.1/json/"}, status: 200, json: reserved("100.64.1.1", "IPv4")},
		{name: "broadcast", req: request{path: "/255.255.255.255/json/"}, status: 200, json: reserved("255.255.255.255", "IPv4")},
		{name: "unspecified", req: request{path: "/0.0.0.0/json/"}, status: 200, json: reserved("0.0.0.0", "IPv4")},
		{name: "IPv6 loopback", req: request{path: "/::1/json/"}, status: 200, json: reserved("::1", "IPv6")},
		{name: "IPv6 link-local", req: request{path: "/fe80::1/json/"}, status: 200, json: reserved("fe80::1", "IPv6")},
		{name: "IPv6 unique-local", req: request{path: "/fd12:3456::1/json/"}, status: 200, json: reserved("fd12:3456::1", "IPv6")},
		{name: "IPv6 documentation", req: request{path: "/2001:db8::1/json/"}, status: 200, json: reserved("2001:db8::1", "IPv6")},
		{name: "IPv6 multicast", req: request{path: "/ff02::1/json/"}, status: 200, json: reserved("ff02::1", "IPv6")},
		{name: "IPv4-mapped private", req: request{path: "/::ffff:192.168.1.1/json/"}, status: 200, json: reserved("192.168.1.1", "IPv4")},
		{name: "Teredo of a private IPv4", req: request{path: "/2001:0:4136:e378:8000:63bf:3f57:fefe/json/"}, status: 200,
			json: reserved("2001:0:4136:e378:8000:63bf:3f57:fefe", "IPv6")},
		{name: "Teredo of loopback", req: request{path: "/2001:0:4136:e378:8000:63bf:80ff:fffe/json/"}, status: 200,
			json: reserved("2001:0:4136:e378:8000:63bf:80ff:fffe", "IPv6")},
		{name: "reserved field", req: request{path: "/10.0.0.1/city/"}, status: 200, body: ""},
		{name: "reserved caller", req: request{path: "/json/", peer: "127.0.0.1:1"}, status: 200, json: reserved("127.0.0.1", "IPv4"),
			headers: map[string]string{"Cache-Control": "private, no-cache"}},
		{name: "reserved xml", req: request{path: "/10.0.0.1/xml/"}, status: 200, has: []string{"<reserved>true</reserved><error>true</error><reason>Reserved IP Address</reason>"}},
		{name: "no data: 200 with empty location", req: request{path: "/5.6.7.8/json/"}, status: 200,
			json: map[string]any{"ip": "5.6.7.8", "version": "IPv4", "city": "", "country": "", "country_name": "",
				"continent_code": "", "in_eu": false, "latitude": "0", "longitude": "0", "timezone": "", "utc_offset": ""},
			absent: []string{"reserved", "error", "reason"}, headers: map[string]string{"Cache-Control": "public, max-age=3600"}},
		{name: "no data IPv6", req: request{path: "/2c0f:fb50::1/json/"}, status: 200,
			json: map[string]any{"ip": "2c0f:fb50::1", "version": "IPv6", "country": ""}, absent: []string{"reserved", "error"}},
		{name: "fixture IPv6", req: request{path: "/2a01:e0a::42/json/"}, status: 200,
			json: map[string]any{"ip": "2a01:e0a::42", "country": "FR", "country_name": "France", "continent_code": "EU", "in_eu": true,
				"city": `Paris "Centre"`, "region": "Île-de-France"}},
		{name: "fixture field with quotes", req: request{path: "/2a01:e0a::42/city/"}, status: 200, body: `Paris "Centre"`},
		{name: "fixture csv quoting", req: request{path: "/2a01:e0a::42/csv/"}, status: 200, has: []string{`"Paris ""Centre"""`}},
		{name: "fixture xml escaping", req: request{path: "/2a01:e0a::42/xml/"}, status: 200, has: []string{"<city>Paris &#34;Centre&#34;</city>"}},
		{name: "fixture yaml quoting", req: request{path: "/2a01:e0a::42/yaml/"}, status: 200, has: []string{`city: "Paris \"Centre\""`}},
	}
	for _, r := range rows {
		before := db.lookups.Load()
		t.Run(r.name, func(t *testing.T) { r.check(t, s) })
		if strings.HasPrefix(r.name, "reserved") || r.json["reserved"] == true {
			if n := db.lookups.Load() - before; n != 0 {
				t.Errorf("%s: %d database lookups, want none for a reserved address", r.name, n)
			}
		}
	}
}

func TestDatabaseErrorIsA500(t *testing.T) {
	db := newFixtureDB()
	db.setFail(errBroken)
	s := newTestServer(t, db)
	w := s.get("/81.2.69.1/json/")
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500", w.Code)
	}
	// ipapi.co's body, as every error of a lookup.
	if got := decodeObject(t, w.Body.Bytes()); got["error"] != true || got["reason"] != "Internal Error" || got["statusCode"] != nil {
		t.Errorf("not ipapi.co's error body: %s", w.Body)
	}
}

// TestContractIsChecked: the test server checks answers against the
// service's document (so every test in this package is a contract test),
// and the document's examples validate against their schemas.
func TestContractIsChecked(t *testing.T) {
	s := newTestServer(t, newFixtureDB())
	for _, path := range []string{"/81.2.69.160/json/", "/81.2.69.160/xml/", "/81.2.69.160/csv/", "/81.2.69.160/yaml/", "/81.2.69.160/jsonp/", "/81.2.69.160/city/", "/json/", "/nonsense/json/"} {
		s.get(path)
	}
	if n := s.contract.Checked(); n != 8 {
		t.Errorf("%d answers checked against the document, want 8", n)
	}
	checked, errs := openapitest.ExampleErrors(s.contract.Doc())
	for _, err := range errs {
		t.Error(err)
	}
	if checked < 20 {
		t.Errorf("only %d examples checked", checked)
	}
}
