// Package mmdb reads MaxMind-format city databases (GeoLite2/GeoIP2 City, DB-IP City in
// both its official nested schema and the flat schema of the ip-location-db packages) and
// maps their records onto lookup.Record.
package mmdb

import (
	"encoding/binary"
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
	idx4   *index4    // nil: the library walks the tree
	zones  *zoneTable // NameZones'; nil: none named
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
	if f.data != nil {
		db.idx4 = newIndex4(f.r, f.raw)
	}
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
	if f.data != nil {
		db.idx4 = newIndex4(f.r, f.raw)
	}
	return db, nil
}

func (d *DB) detect(r *maxminddb.Reader) (err error) {
	d.schema, err = DetectSchema(r)
	return err
}

// Close closes the file (File.Close: it waits for the lookups in flight) and frees the
// IPv4 index and the zone table.
func (d *DB) Close() error {
	err := d.File.Close()
	var release []func() error
	if d.idx4 != nil {
		release, d.idx4.release = append(release, d.idx4.release...), nil
	}
	if d.zones != nil {
		release, d.zones.release = append(release, d.zones.release...), nil
	}
	for _, r := range release {
		if rerr := r(); err == nil {
			err = rerr
		}
	}
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
	rec, _, _, err := d.lookup(addr, false)
	return rec, err
}

// LookupInPlace is Lookup with the strings of a flat record pointing into the file's
// memory instead of copied out of it (lookup.InPlaceDB): valid until Close, which the
// caller must keep from happening while it reads them. Nested records are copies.
func (d *DB) LookupInPlace(addr netip.Addr) (lookup.Record, error) {
	rec, _, _, err := d.lookup(addr, true)
	return rec, err
}

var _ lookup.KeyedDB = (*DB)(nil)

// LookupKeyed is LookupInPlace that also returns the record's location key (see
// LocationKey), found by the same search; keyed is false where the address has no record.
func (d *DB) LookupKeyed(addr netip.Addr) (lookup.Record, lookup.LocationKey, bool, error) {
	rec, off, found, err := d.lookup(addr, true)
	if err != nil || !found {
		return rec, lookup.LocationKey{}, false, err
	}
	return rec, offsetKey(off), true, nil
}

// LocationKey returns the key of addr's record, its offset in the data section (a file
// keeps each distinct record once, and every network with that record points to it:
// 425,000 records for the 6.3 million networks of DB-IP's IPv4 city file), and the
// record's network, without decoding the record; ok is false where addr has no record.
func (d *DB) LocationKey(addr netip.Addr) (lookup.LocationKey, netip.Prefix, bool) {
	off, network, ok := d.find(addr)
	if !ok {
		return lookup.LocationKey{}, netip.Prefix{}, false
	}
	return offsetKey(off), network, true
}

// offsetKey is the location key of the record at off; the first byte tells it from the
// zero key.
func offsetKey(off uint) (key lookup.LocationKey) {
	key[0] = 1
	binary.LittleEndian.PutUint64(key[1:], uint64(off))
	return key
}

// find is the search alone: the record's offset and network; found is false for an
// address without one, a closed file and a corrupt tree (which lookup reports).
func (d *DB) find(addr netip.Addr) (off uint, network netip.Prefix, found bool) {
	if !addr.IsValid() {
		return 0, netip.Prefix{}, false
	}
	addr = addr.Unmap()
	if addr.Is6() && d.r.Metadata.IPVersion == 4 {
		return 0, netip.Prefix{}, false
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return 0, netip.Prefix{}, false
	}
	off, network, found, err := d.search(addr)
	return off, network, found && err == nil
}

// search finds addr (valid, unmapped, of the file's family) in the tree, by the IPv4
// index where there is one, the caller holding the read lock.
func (d *DB) search(addr netip.Addr) (off uint, network netip.Prefix, found bool, err error) {
	if x := d.idx4; x != nil && addr.Is4() {
		a := addr.As4()
		node, depth := x.find(binary.BigEndian.Uint32(a[:]))
		switch {
		case node == x.nodeCount:
			return 0, netip.Prefix{}, false, nil
		case node < x.nodeCount || node-x.nodeCount-16 >= uint(len(d.data)):
			return 0, netip.Prefix{}, false, errCorruptTree
		}
		network, _ = addr.Prefix(depth)
		return node - x.nodeCount - 16, network, true, nil
	}
	res := d.r.Lookup(addr)
	if err := res.Err(); err != nil {
		return 0, netip.Prefix{}, false, err
	}
	if !res.Found() {
		return 0, netip.Prefix{}, false, nil
	}
	return uint(res.Offset()), res.Prefix(), true, nil
}

// errCorruptTree is the library's message for the same fault.
var errCorruptTree = errors.New("the MaxMind DB file's search tree is corrupt")

// lookup is File.Lookup for city records, reading a flat record in place (inPlace) or as
// a copy with the same decoder (decodeFlatInPlace, then strings.Clone), and the library's
// reflection for anything else. found reports a record, off is its offset.
func (d *DB) lookup(addr netip.Addr, inPlace bool) (rec lookup.Record, off uint, found bool, err error) {
	if !addr.IsValid() {
		return lookup.Record{}, 0, false, lookup.ErrInvalidAddress
	}
	addr = addr.Unmap()
	if addr.Is6() && d.r.Metadata.IPVersion == 4 {
		return lookup.Record{}, 0, false, nil
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return lookup.Record{}, 0, false, ErrClosed
	}
	off, network, found, err := d.search(addr)
	if err != nil {
		return lookup.Record{}, 0, false, fmt.Errorf("%s lookup %s: %w", d.what, addr, err)
	}
	if !found {
		return lookup.Record{}, 0, false, nil
	}
	decoded := false
	if d.schema == SchemaFlat {
		var f FlatRecord
		if f, decoded = decodeFlatInPlace(d.data, off); decoded {
			rec = FromFlat(&f)
			if rec.TimeZone == "" && rec.HasLocation {
				rec.TimeZone, _ = d.zones.at(off)
			}
			if !inPlace {
				rec = rec.Own()
			}
		}
	}
	if !decoded {
		if rec, err = Decode(d.r.LookupOffset(uintptr(off)), d.schema); err != nil {
			return lookup.Record{}, 0, false, fmt.Errorf("%s lookup %s: %w", d.what, addr, err)
		}
	}
	rec.Network = network
	return rec, off, true, nil
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
