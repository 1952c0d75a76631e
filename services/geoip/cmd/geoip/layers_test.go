package main

import (
	"testing"

	"github.com/apistack/platform/libs/apiserver/layertest"
)

// TestLayers states what each layer of geoip may import (dependencies of
// dependencies included; tests' imports not), as it holds today: a new
// arrow fails here with the chain that made it.
func TestLayers(t *testing.T) {
	const (
		internal = "github.com/apistack/platform/services/geoip/internal/"
		gin      = "github.com/gin-gonic/gin"
		library  = "github.com/apistack/platform/libs/apiserver"
	)
	// The HTTP side: the library (gin), the routes, the API.
	http := []string{gin, library + "/jwtvalidator", library + "/tracing", internal + "httpapi"}
	layertest.Check(t,
		layertest.Rule{
			Why:      "the domain (lookup) imports the standard library and golang.org/x/text only",
			Packages: []string{"../../internal/lookup/..."},
			Allow:    []string{"golang.org/x/text"},
		},
		layertest.Rule{
			Why: "the engine (answer), API keys and the format and reference-data packages import no HTTP at all, nor metrics",
			Packages: []string{"../../internal/answer/...", "../../internal/apikeys/...", "../../internal/asn/...",
				"../../internal/binwriter/...", "../../internal/convert/...", "../../internal/countries/...",
				"../../internal/mmdb/...", "../../internal/offheap/...", "../../internal/subdivisions/...",
				"../../internal/tz/...", "../../internal/filewatch/...", "../../internal/exepages/..."},
			Deny: append([]string{"net/http", "github.com/prometheus"}, http...),
		},
		layertest.Rule{
			// dbfile and updater export metrics (prometheus reaches
			// net/http), updater downloads, ip2location-go reaches
			// net/http: none of them serves HTTP.
			Why:      "the database manager, its reader and the updater import no HTTP server side",
			Packages: []string{"../../internal/dbfile/...", "../../internal/ip2bin/...", "../../internal/updater/..."},
			Deny:     http,
		},
	)
}
