package httpapi

import (
	"testing"

	"github.com/apistack/platform/libs/apiserver/testkit"
	"github.com/apistack/platform/services/geoip/internal/dbfile"
	"github.com/apistack/platform/services/geoip/internal/testdb"
	"github.com/apistack/platform/services/geoip/internal/tz"
)

// TestEndpointsOnFullDatabase runs the endpoints on the full DB-IP Lite data converted to
// a BIN, as the service serves it with GEOIP_DB set.
func TestEndpointsOnFullDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the full DB-IP database")
	}
	path := testdb.ConvertedBIN(t)
	db, err := dbfile.New(dbfile.Config{Path: path, TimeZones: tz.New(), PollInterval: -1, Logger: testkit.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := newTestServer(t, db)
	rows := []row{
		{name: "IPv4", req: request{path: "/8.8.8.8/json/"}, status: 200,
			json: map[string]any{"ip": "8.8.8.8", "country": "US", "country_name": "United States", "continent_code": "NA", "in_eu": false}},
		{name: "IPv4 in Europe, outside the EU since 2020", req: request{path: "/81.2.69.142/json/"}, status: 200,
			json: map[string]any{"country": "GB", "continent_code": "EU", "in_eu": false}},
		{name: "IPv6", req: request{path: "/2a00:1450:4001::1/country/"}, status: 200},
		{name: "IPv6 record", req: request{path: "/2001:4860:4860::8888/json/"}, status: 200, json: map[string]any{"version": "IPv6"}},
		{name: "caller", req: request{path: "/country/", peer: "1.1.1.1:1"}, status: 200, body: "AU"},
		{name: "reserved", req: request{path: "/192.168.0.1/json/"}, status: 200, json: map[string]any{"reserved": true}},
		{name: "batch", req: request{method: "POST", path: "/batch", body: `["8.8.8.8","2a00:1450:4001::1","x"]`, ctype: "application/json"}, status: 200},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) { r.check(t, s) })
	}
	// Every answer with a country has the facts the service adds.
	for _, ip := range []string{"1.1.1.1", "5.6.7.8", "41.1.1.1", "200.1.1.1", "2c0f:fb50::1", "2400:cb00::1", "2800:3f0::1"} {
		got := decodeObject(t, s.get("/"+ip+"/json/").Body.Bytes())
		if got["country"] != "" && (got["continent_code"] == "" || got["country_name"] == "" || got["timezone"] == "") {
			t.Errorf("%s: %v lacks country facts or time zone", ip, got)
		}
	}
}
