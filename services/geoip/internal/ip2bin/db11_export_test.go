package ip2bin

import (
	"net/netip"

	"github.com/apistack/platform/services/geoip/internal/lookup"
)

// LookupViaLibrary answers addr through ip2location-go's Get_all, the path lookups take
// for files the direct DB11 reader does not cover: tests hold both to the same answers.
func LookupViaLibrary(d *DB, addr netip.Addr) (lookup.Record, error) {
	libMu.RLock()
	defer libMu.RUnlock()
	addr = addr.Unmap()
	r, err := d.db.Get_all(addr.String())
	if err != nil {
		return lookup.Record{}, err
	}
	rec := toRecord(&r, d.extras)
	if rec.Found() {
		rec.Network = d.network(addr)
	}
	return rec, nil
}

// Direct reports whether lookups read DB11 rows directly.
func Direct(d *DB) bool { return d.directDB11() }

// FindsRow reports whether the direct reader finds addr's row itself, without falling
// back to the library (whose answer would hide a row the index missed).
func FindsRow(d *DB, addr netip.Addr) bool { return d.rowFor(addr.Unmap()).valid }
