package httpapi

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"net"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
	"gopkg.in/yaml.v2"

	"github.com/apistack/platform/services/geoip/internal/asn"
	"github.com/apistack/platform/services/geoip/internal/lookup"
	"github.com/apistack/platform/services/geoip/internal/testdb"
)

// ipapiRecord is ipapi.co's answer as its documentation and its clients type it: strings,
// float64 coordinates and area, an integer population, booleans for in_eu and the flags.
// The contract test decodes every answer into it with unknown keys refused.
type ipapiRecord struct {
	IP                 string  `json:"ip" xml:"ip" yaml:"ip"`
	Network            string  `json:"network" xml:"network" yaml:"network"`
	Version            string  `json:"version" xml:"version" yaml:"version"`
	City               string  `json:"city" xml:"city" yaml:"city"`
	Region             string  `json:"region" xml:"region" yaml:"region"`
	RegionCode         string  `json:"region_code" xml:"region_code" yaml:"region_code"`
	Country            string  `json:"country" xml:"country" yaml:"country"`
	CountryName        string  `json:"country_name" xml:"country_name" yaml:"country_name"`
	CountryCode        string  `json:"country_code" xml:"country_code" yaml:"country_code"`
	CountryCodeISO3    string  `json:"country_code_iso3" xml:"country_code_iso3" yaml:"country_code_iso3"`
	CountryCapital     string  `json:"country_capital" xml:"country_capital" yaml:"country_capital"`
	CountryTLD         string  `json:"country_tld" xml:"country_tld" yaml:"country_tld"`
	ContinentCode      string  `json:"continent_code" xml:"continent_code" yaml:"continent_code"`
	InEU               bool    `json:"in_eu" xml:"in_eu" yaml:"in_eu"`
	Postal             string  `json:"postal" xml:"postal" yaml:"postal"`
	Latitude           float64 `json:"latitude" xml:"latitude" yaml:"latitude"`
	Longitude          float64 `json:"longitude" xml:"longitude" yaml:"longitude"`
	Timezone           string  `json:"timezone" xml:"timezone" yaml:"timezone"`
	UTCOffset          string  `json:"utc_offset" xml:"utc_offset" yaml:"utc_offset"`
	CountryCallingCode string  `json:"country_calling_code" xml:"country_calling_code" yaml:"country_calling_code"`
	Currency           string  `json:"currency" xml:"currency" yaml:"currency"`
	CurrencyName       string  `json:"currency_name" xml:"currency_name" yaml:"currency_name"`
	Languages          string  `json:"languages" xml:"languages" yaml:"languages"`
	CountryArea        float64 `json:"country_area" xml:"country_area" yaml:"country_area"`
	CountryPopulation  int64   `json:"country_population" xml:"country_population" yaml:"country_population"`
	ASN                string  `json:"asn" xml:"asn" yaml:"asn"`
	Org                string  `json:"org" xml:"org" yaml:"org"`
	// ipapi.co's flags, on reserved addresses and invalid batch entries.
	Reserved bool   `json:"reserved" xml:"reserved" yaml:"reserved"`
	Error    bool   `json:"error" xml:"error" yaml:"error"`
	Reason   string `json:"reason" xml:"reason" yaml:"reason"`
}

// ipapiError is ipapi.co's error answer, error a boolean.
type ipapiError struct {
	IP      string `json:"ip"`
	Error   bool   `json:"error"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// ipapiKeys are the keys every record answer carries, in ipapi.co's order.
var ipapiKeys = []string{"ip", "network", "version", "city", "region", "region_code", "country", "country_name",
	"country_code", "country_code_iso3", "country_capital", "country_tld", "continent_code", "in_eu", "postal",
	"latitude", "longitude", "timezone", "utc_offset", "country_calling_code", "currency", "currency_name",
	"languages", "country_area", "country_population", "asn", "org"}

// withASNFixture completes the embedded sample's answers from a real ASN database built
// with mmdbwriter, as dbfile.WithASN does in the service.
type withASNFixture struct {
	DB
	asn *asn.DB
}

func (w withASNFixture) Lookup(addr netip.Addr) (lookup.Record, error) {
	rec, err := w.DB.Lookup(addr)
	if err != nil {
		return rec, err
	}
	a, err := w.asn.Lookup(addr)
	if err != nil {
		return rec, err
	}
	rec.ASN, rec.Org = a.ASN, a.Org
	return rec, nil
}

func asnFixture(t *testing.T) *asn.DB {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "GeoLite2-ASN", RecordSize: 24})
	if err != nil {
		t.Fatal(err)
	}
	for cidr, org := range map[string]string{"8.8.8.0/24": "Google LLC", "2001:4860::/32": "Google LLC"} {
		_, n, _ := net.ParseCIDR(cidr)
		if err := tree.Insert(n, mmdbtype.Map{"autonomous_system_number": mmdbtype.Uint32(15169),
			"autonomous_system_organization": mmdbtype.String(org)}); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := tree.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	db, err := asn.OpenBytes(buf.Bytes(), "fixture")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func strictJSON(t *testing.T, body []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("does not decode into ipapi.co's types: %v\n%s", err, body)
	}
}

// keysOf lists an object's keys in the order they appear.
func keysOf(t *testing.T, body []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", body)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func TestContractWithIPAPIClients(t *testing.T) {
	s := newTestServer(t, withASNFixture{DB: testdb.EmbeddedSample(t), asn: asnFixture(t)})
	google := ipapiRecord{IP: "8.8.8.8", Network: "8.8.8.0/24", Version: "IPv4", City: "Mountain View",
		Region: "California", RegionCode: "CA", Country: "US", CountryName: "United States", CountryCode: "US",
		CountryCodeISO3: "USA", CountryCapital: "Washington", CountryTLD: ".us", ContinentCode: "NA",
		Latitude: 37.422, Longitude: -122.085, Timezone: "America/Los_Angeles", UTCOffset: "-0800",
		CountryCallingCode: "+1", Currency: "USD", CurrencyName: "Dollar", Languages: "en-US,es-US,haw,fr",
		CountryArea: 9629091, CountryPopulation: 327167434, ASN: "AS15169", Org: "Google LLC"}
	v6 := google
	v6.IP, v6.Network, v6.Version, v6.City, v6.Region, v6.RegionCode = "2001:4860:4860::8888", "2001:4860:4840::/42", "IPv6", "Montreal", "Quebec", "QC"
	v6.Country, v6.CountryName, v6.CountryCode, v6.CountryCodeISO3, v6.CountryCapital, v6.CountryTLD = "CA", "Canada", "CA", "CAN", "Ottawa", ".ca"
	v6.Latitude, v6.Longitude, v6.Timezone, v6.UTCOffset = 45.5019, -73.5674, "America/Toronto", "-0500"
	v6.Currency, v6.CurrencyName, v6.Languages, v6.CountryArea, v6.CountryPopulation = "CAD", "Dollar", "en-CA,fr-CA,iu", 9984670, 37058856
	reserved := ipapiRecord{IP: "10.0.0.1", Version: "IPv4", Reserved: true, Error: true, Reason: "Reserved IP Address"}
	reserved6 := ipapiRecord{IP: "fd00::1", Version: "IPv6", Reserved: true, Error: true, Reason: "Reserved IP Address"}

	for _, tc := range []struct {
		ip   string
		want ipapiRecord
	}{{"8.8.8.8", google}, {"2001:4860:4860::8888", v6}, {"10.0.0.1", reserved}, {"fd00::1", reserved6}} {
		check := func(format string, got ipapiRecord) {
			t.Helper()
			if got != tc.want {
				t.Errorf("%s %s:\n got %+v\nwant %+v", tc.ip, format, got, tc.want)
			}
		}
		// JSON: every key, in order, typed as documented.
		w := s.get("/" + tc.ip + "/json/")
		keys := keysOf(t, w.Body.Bytes())
		if !reflect.DeepEqual(keys[:len(ipapiKeys)], ipapiKeys) {
			t.Errorf("%s json keys %v", tc.ip, keys)
		}
		var got ipapiRecord
		strictJSON(t, w.Body.Bytes(), &got)
		check("json", got)

		// JSONP: the same object inside the call.
		body := s.get("/" + tc.ip + "/jsonp/?callback=cb").Body.String()
		inner, ok := strings.CutPrefix(body, "/**/cb(")
		inner, ok2 := strings.CutSuffix(inner, ");")
		if !ok || !ok2 {
			t.Fatalf("jsonp %s", body)
		}
		got = ipapiRecord{}
		strictJSON(t, []byte(inner), &got)
		check("jsonp", got)

		// XML: <root> with one element per key.
		got = ipapiRecord{}
		if err := xml.Unmarshal(s.get("/"+tc.ip+"/xml/").Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		check("xml", got)

		// YAML.
		got = ipapiRecord{}
		if err := yaml.UnmarshalStrict(s.get("/"+tc.ip+"/yaml/").Body.Bytes(), &got); err != nil {
			t.Fatalf("yaml: %v", err)
		}
		check("yaml", got)

		// CSV: a header of the same keys, values parsed by the JSON tag's type.
		rows, err := csv.NewReader(s.get("/" + tc.ip + "/csv/").Body).ReadAll()
		if err != nil || len(rows) != 2 {
			t.Fatalf("csv: %v %v", rows, err)
		}
		got = ipapiRecord{}
		fillByTag(t, &got, rows[0], rows[1])
		check("csv", got)

		// Field endpoints: each key as plain text, as CSV writes it (the flags are not
		// fields on ipapi.co either).
		for i, k := range rows[0] {
			if k == "reserved" || k == "error" || k == "reason" {
				continue
			}
			if text := s.get("/" + tc.ip + "/" + k + "/").Body.String(); text != rows[1][i] {
				t.Errorf("/%s/%s/ = %q, csv says %q", tc.ip, k, text, rows[1][i])
			}
		}
	}

	// Batch: a list of the same records; invalid entries are ipapi.co's error keys.
	w := s.do(request{method: "POST", path: "/batch", ctype: "application/json",
		body: `["8.8.8.8","2001:4860:4860::8888","10.0.0.1","fd00::1","999.1.1.1"]`})
	var batch []ipapiRecord
	dec := json.NewDecoder(w.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&batch); err != nil {
		t.Fatal(err)
	}
	invalid := ipapiRecord{IP: "999.1.1.1", Error: true, Reason: "Invalid IP Address"}
	if want := []ipapiRecord{google, v6, reserved, reserved6, invalid}; !reflect.DeepEqual(batch, want) {
		t.Errorf("batch:\n got %+v\nwant %+v", batch, want)
	}

	// Errors: error is a boolean, on every format and field endpoint of an address.
	for _, path := range []string{"/999.1.1.1/json/", "/999.1.1.1/xml/", "/nope/csv/", "/nope/yaml/",
		"/nope/jsonp/?callback=cb", "/1.2.3/city/", "/2001:db8:::1/json/", "/fe80::1%25eth0/json/"} {
		w := s.get(path)
		if w.Code != 400 || !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
			t.Errorf("%s: %d %s", path, w.Code, w.Header().Get("Content-Type"))
		}
		var e ipapiError
		strictJSON(t, w.Body.Bytes(), &e)
		if !e.Error || e.Reason != "Invalid IP Address" || e.IP == "" {
			t.Errorf("%s: %+v", path, e)
		}
	}
}

// fillByTag sets the fields of v named by the JSON tags in names from their text values,
// parsed by the field's Go type: a value that is not a number where ipapi.co has one fails.
func fillByTag(t *testing.T, v *ipapiRecord, names, values []string) {
	t.Helper()
	rv := reflect.ValueOf(v).Elem()
	byTag := map[string]int{}
	for i := 0; i < rv.NumField(); i++ {
		byTag[strings.Split(rv.Type().Field(i).Tag.Get("json"), ",")[0]] = i
	}
	for i, name := range names {
		fi, ok := byTag[name]
		if !ok {
			t.Fatalf("csv column %q is not an ipapi.co key", name)
		}
		f := rv.Field(fi)
		var err error
		switch f.Kind() {
		case reflect.String:
			f.SetString(values[i])
		case reflect.Bool:
			var b bool
			b, err = strconv.ParseBool(values[i])
			f.SetBool(b)
		case reflect.Float64:
			var x float64
			x, err = strconv.ParseFloat(values[i], 64)
			f.SetFloat(x)
		case reflect.Int64:
			var n int64
			n, err = strconv.ParseInt(values[i], 10, 64)
			f.SetInt(n)
		}
		if err != nil {
			t.Errorf("csv %s = %q: %v", name, values[i], err)
		}
	}
}
