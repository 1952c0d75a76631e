// Package asn reads autonomous-system databases in MaxMind DB format (GeoLite2-ASN and
// DB-IP's ASN Lite, which share the layout autonomous_system_number /
// autonomous_system_organization) and answers lookup.Record with ASN, Org and Network set.
package asn

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/oschwald/maxminddb-golang/v2"

	"github.com/apistack/platform/services/geoip/internal/lookup"
	"github.com/apistack/platform/services/geoip/internal/mmdb"
)

// record is the layout both databases use.
type record struct {
	Number       uint32 `maxminddb:"autonomous_system_number"`
	Organization string `maxminddb:"autonomous_system_organization"`
}

// DB is an open ASN database held in memory (mmdb.File: off the Go heap when loaded from
// disk; Close waits for lookups in flight).
type DB struct{ *mmdb.File }

var _ lookup.DB = (*DB)(nil)

// ErrClosed is returned by lookups on a closed DB.
var ErrClosed = mmdb.ErrClosed

// Load reads the whole file into memory outside the Go heap and opens it.
func Load(path string) (*DB, error) {
	f, err := mmdb.LoadFile(path, "asn database", checkLayout)
	if err != nil {
		return nil, err
	}
	return &DB{f}, nil
}

// OpenBytes opens an ASN database held in memory; data must not be modified afterwards.
// A database whose records are not ASN records (a city database given by mistake) is
// refused.
func OpenBytes(data []byte, source string) (*DB, error) {
	f, err := mmdb.OpenFile(data, source, "asn database", checkLayout)
	if err != nil {
		return nil, err
	}
	return &DB{f}, nil
}

// checkLayout looks at the first record with data.
func checkLayout(r *maxminddb.Reader) error {
	for res := range r.Networks() {
		var probe struct {
			Number *uint32 `maxminddb:"autonomous_system_number"`
		}
		if err := res.Decode(&probe); err != nil {
			return fmt.Errorf("decode first record: %w", err)
		}
		if probe.Number == nil {
			return errors.New("records have no autonomous_system_number: not a GeoLite2-ASN or DB-IP ASN database")
		}
		return nil
	}
	return errors.New("database has no records")
}

// Lookup answers the autonomous system of addr: Record.ASN, Org and Network; an address the
// database does not cover is an empty Record.
func (d *DB) Lookup(addr netip.Addr) (lookup.Record, error) {
	return d.File.Lookup(addr, func(res maxminddb.Result) (lookup.Record, error) {
		var rec record
		if err := res.Decode(&rec); err != nil {
			return lookup.Record{}, err
		}
		return lookup.Record{ASN: rec.Number, Org: lookup.Clean(rec.Organization)}, nil
	})
}
