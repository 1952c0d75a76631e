// Package sample embeds the small database that serves when GEOIP_DB is unset: a DB11 BIN
// made by the converter from DB-IP's IP to City Lite data (see README.md in this folder).
package sample

import (
	_ "embed"

	"github.com/apistack/platform/services/geoip/internal/ip2bin"
	"github.com/apistack/platform/services/geoip/internal/lookup"
)

// File is the name of the embedded file, relative to this package.
const File = "dbip-city-lite-sample.BIN"

// Attribution is the credit DB-IP's licence (CC BY 4.0) requires wherever results from its
// data are shown.
const Attribution = `<a href='https://db-ip.com'>IP Geolocation by DB-IP</a>`

// Source names the sample in logs and metrics.
const Source = "embedded sample (DB-IP City Lite)"

//go:embed dbip-city-lite-sample.BIN
var data []byte

// Bytes returns the embedded file; callers must not modify it.
func Bytes() []byte { return data }

// Open opens the embedded sample.
func Open() (lookup.DB, error) {
	return ip2bin.OpenBytes(data, Source)
}
