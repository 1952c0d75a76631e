// Package sample embeds the small database that serves when GEOIP_DB is unset: DB-IP's IP
// to City Lite data for a few thousand networks, kept as an IP2Location DB11 CSV (text,
// reviewable, no binary in git) and built into a DB11 BIN in memory on first use (see
// README.md in this folder).
package sample

import (
	"bytes"
	_ "embed"
	"sync"
	"time"

	"github.com/apistack/platform/services/geoip/internal/convert"
	"github.com/apistack/platform/services/geoip/internal/ip2bin"
	"github.com/apistack/platform/services/geoip/internal/lookup"
)

// File is the name of the embedded CSV, relative to this package.
const File = "dbip-city-lite-sample.csv"

// Date is the build date of the DB-IP edition the sample was taken from, written into the
// BIN's header (a CSV records none).
var Date = time.Date(2026, time.June, 5, 0, 0, 0, 0, time.UTC)

// Attribution is the credit DB-IP's licence (CC BY 4.0) requires wherever results from its
// data are shown.
const Attribution = `<a href='https://db-ip.com'>IP Geolocation by DB-IP</a>`

// Source names the sample in logs and metrics.
const Source = "embedded sample (DB-IP City Lite)"

//go:embed dbip-city-lite-sample.csv
var text []byte

// CSV returns the embedded CSV; callers must not modify it.
func CSV() []byte { return text }

// built is the BIN, converted once (about 20 ms of CPU: no zone search, the CSV carries
// each row's IANA zone). The embedded text is checked by the tests, so an error here is a
// bad build, not bad input.
var built = sync.OnceValues(convertCSV)

// convertCSV builds the BIN. Sample writes no index tables, as the sources' conversion
// did, and keeps every row: the CSV is that selection already.
func convertCSV() ([]byte, error) {
	return convert.BIN(bytes.NewReader(text), convert.Options{Date: Date, Sample: true})
}

// Bytes returns the sample as a DB11 BIN file; callers must not modify it.
func Bytes() []byte {
	b, err := built()
	if err != nil {
		panic("sample: the embedded CSV does not convert: " + err.Error())
	}
	return b
}

// Open opens the embedded sample.
func Open() (lookup.DB, error) {
	b, err := built()
	if err != nil {
		return nil, err
	}
	return ip2bin.OpenBytes(b, Source)
}
