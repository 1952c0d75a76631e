// Package mmdb reads MaxMind-format city databases (GeoLite2/GeoIP2 City, DB-IP City in
// both its official nested schema and the flat schema of the ip-location-db packages) and
// maps their records onto lookup.Record.
package mmdb

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/oschwald/maxminddb-golang/v2"

	"github.com/apistack/platform/services/geoip/internal/lookup"
)

// Schema tells how a database lays out its city records.
type Schema int

const (
	// SchemaNested is GeoIP2 City's layout: country.iso_code, city.names.en, ...
	SchemaNested Schema = iota
	// SchemaFlat is the layout of ip-location-db's DB-IP and GeoLite2 packages:
	// country_code, state1, city, postcode, latitude, longitude, timezone.
	SchemaFlat
)

// FlatRecord is a record in the flat schema.
type FlatRecord struct {
	CountryCode string  `maxminddb:"country_code"`
	State1      string  `maxminddb:"state1"`
	State2      string  `maxminddb:"state2"`
	City        string  `maxminddb:"city"`
	Postcode    string  `maxminddb:"postcode"`
	Latitude    float64 `maxminddb:"latitude"`
	Longitude   float64 `maxminddb:"longitude"`
	Timezone    string  `maxminddb:"timezone"`
}

type names struct {
	EN string `maxminddb:"en"`
}

// NestedRecord is the part of a GeoIP2 City record the service uses.
type NestedRecord struct {
	City struct {
		Names names `maxminddb:"names"`
	} `maxminddb:"city"`
	Country struct {
		ISOCode string `maxminddb:"iso_code"`
		Names   names  `maxminddb:"names"`
	} `maxminddb:"country"`
	Subdivisions []struct {
		ISOCode string `maxminddb:"iso_code"`
		Names   names  `maxminddb:"names"`
	} `maxminddb:"subdivisions"`
	Location struct {
		Latitude  *float64 `maxminddb:"latitude"`
		Longitude *float64 `maxminddb:"longitude"`
		TimeZone  string   `maxminddb:"time_zone"`
	} `maxminddb:"location"`
	Postal struct {
		Code string `maxminddb:"code"`
	} `maxminddb:"postal"`
}

// DB is an open MMDB city database, held in memory (File).
type DB struct {
	*File
	schema Schema
}

var _ lookup.DB = (*DB)(nil)

// Load reads the whole file into memory outside the Go heap and opens it (LoadFile).
func Load(path string) (*DB, error) {
	db := &DB{}
	f, err := LoadFile(path, "mmdb", db.detect)
	if err != nil {
		return nil, err
	}
	db.File = f
	return db, nil
}

// OpenBytes opens an MMDB held in memory; data must not be modified afterwards.
func OpenBytes(data []byte, source string) (*DB, error) {
	db := &DB{}
	f, err := OpenFile(data, source, "mmdb", db.detect)
	if err != nil {
		return nil, err
	}
	db.File = f
	return db, nil
}

func (d *DB) detect(r *maxminddb.Reader) (err error) {
	d.schema, err = DetectSchema(r)
	return err
}

// DetectSchema looks at the first record with data to tell the flat from the nested
// layout; the metadata's database_type is free text and does not say.
func DetectSchema(r *maxminddb.Reader) (Schema, error) {
	for res := range r.Networks() {
		var probe struct {
			CountryCode *string `maxminddb:"country_code"`
			City        any     `maxminddb:"city"`
			Country     any     `maxminddb:"country"`
			Location    any     `maxminddb:"location"`
		}
		if err := res.Decode(&probe); err != nil {
			return 0, fmt.Errorf("decode first record: %w", err)
		}
		if probe.CountryCode != nil {
			return SchemaFlat, nil
		}
		if probe.Country != nil || probe.Location != nil {
			return SchemaNested, nil
		}
		if _, ok := probe.City.(string); ok {
			return SchemaFlat, nil
		}
		return 0, errors.New("records are neither GeoIP2 City nor flat city records")
	}
	return 0, errors.New("database has no records")
}

// Schema returns the record layout.
func (d *DB) Schema() Schema { return d.schema }

// Lookup answers for addr; an IPv6 address in an IPv4-only database is simply not found.
func (d *DB) Lookup(addr netip.Addr) (lookup.Record, error) {
	return d.File.Lookup(addr, func(res maxminddb.Result) (lookup.Record, error) { return Decode(res, d.schema) })
}

// Decode maps one result onto a Record.
func Decode(res maxminddb.Result, schema Schema) (lookup.Record, error) {
	if schema == SchemaFlat {
		var f FlatRecord
		if err := res.Decode(&f); err != nil {
			return lookup.Record{}, err
		}
		return FromFlat(&f), nil
	}
	var n NestedRecord
	if err := res.Decode(&n); err != nil {
		return lookup.Record{}, err
	}
	return FromNested(&n), nil
}

// FromFlat maps a flat record.
func FromFlat(f *FlatRecord) lookup.Record {
	rec := lookup.Record{
		Country:  lookup.Clean(f.CountryCode),
		Region:   lookup.Clean(f.State1),
		City:     lookup.Clean(f.City),
		Postal:   lookup.Clean(f.Postcode),
		TimeZone: zoneOnly(f.Timezone),
	}
	rec.CountryName = lookup.CountryName(rec.Country)
	rec.Latitude, rec.Longitude = f.Latitude, f.Longitude
	rec.HasLocation = (f.Latitude != 0 || f.Longitude != 0)
	if s := lookup.Clean(f.State2); s != "" {
		rec.Extra = map[string]string{"state2": s}
	}
	return rec
}

// FromNested maps a GeoIP2 City record.
func FromNested(n *NestedRecord) lookup.Record {
	rec := lookup.Record{
		Country:     lookup.Clean(n.Country.ISOCode),
		CountryName: lookup.Clean(n.Country.Names.EN),
		City:        lookup.Clean(n.City.Names.EN),
		Postal:      lookup.Clean(n.Postal.Code),
		TimeZone:    zoneOnly(n.Location.TimeZone),
	}
	if rec.CountryName == "" {
		rec.CountryName = lookup.CountryName(rec.Country)
	}
	if len(n.Subdivisions) > 0 {
		rec.Region = lookup.Clean(n.Subdivisions[0].Names.EN)
		rec.RegionCode = lookup.Clean(n.Subdivisions[0].ISOCode)
	}
	if n.Location.Latitude != nil && n.Location.Longitude != nil {
		rec.Latitude, rec.Longitude = *n.Location.Latitude, *n.Location.Longitude
		rec.HasLocation = true
	}
	return rec
}

func zoneOnly(s string) string {
	s = lookup.Clean(s)
	if lookup.IsZoneName(s) {
		return s
	}
	return ""
}
