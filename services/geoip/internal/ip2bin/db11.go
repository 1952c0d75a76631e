package ip2bin

import (
	"encoding/binary"
	"math"
	"net/netip"

	"github.com/ip2location/ip2location-go/v9"

	"github.com/apistack/platform/services/geoip/internal/lookup"
)

// directDB11 reports whether lookups can read rows directly (decodeDB11): a DB11 file held
// in memory, the layout geoip convert writes and IP2Location's DB11 products have.
func (d *DB) directDB11() bool {
	return d.data != nil && d.hdr.dbType == 11 && d.hdr.columns == 8
}

// decodeDB11 reads a DB11 row's cells as ip2location-go's Get_all would fill them (country
// pair, region, city, latitude, longitude, zip code, time zone), without its per-string
// 256-byte reads, copies and the address's text round trip: the row is already found, in
// memory. toRecord maps the result the same way for both paths. inPlace leaves the strings
// in the file's memory (LookupInPlace) instead of copying them to the heap.
func (d *DB) decodeDB11(r row, inPlace bool) ip2location.IP2Locationrecord {
	str := readString
	if inPlace {
		str = readStringInPlace
	}
	c := r.cells
	country := binary.LittleEndian.Uint32(c[0:])
	return ip2location.IP2Locationrecord{
		Country_short: str(d.data, country),
		Country_long:  str(d.data, country+3),
		Region:        str(d.data, binary.LittleEndian.Uint32(c[4:])),
		City:          str(d.data, binary.LittleEndian.Uint32(c[8:])),
		Latitude:      math.Float32frombits(binary.LittleEndian.Uint32(c[db11Lat:])),
		Longitude:     math.Float32frombits(binary.LittleEndian.Uint32(c[db11Lon:])),
		Zipcode:       str(d.data, binary.LittleEndian.Uint32(c[20:])),
		Timezone:      str(d.data, binary.LittleEndian.Uint32(c[db11Zone:])),
	}
}

// lookupRow answers addr from the row directly when it can, with the row's location key,
// reporting ok false when the caller must ask ip2location-go (other types, files read per
// lookup, 6to4 and Teredo addresses, which the library answers from the IPv4 rows). The
// caller holds libMu.
func (d *DB) lookupRow(addr netip.Addr, inPlace bool) (rec ip2location.IP2Locationrecord, network netip.Prefix, key lookup.LocationKey, ok bool) {
	if !d.directDB11() {
		return rec, network, key, false
	}
	r := d.rowFor(addr)
	if !r.valid || len(r.cells) < db11Zone+4 || len(r.cells) < len(key) {
		return rec, network, key, false
	}
	copy(key[:], r.cells)
	return d.decodeDB11(r, inPlace), d.rowNetwork(addr, r), key, true
}

var _ lookup.KeyedDB = (*DB)(nil)

// LocationKey returns the cells of addr's row that decodeDB11 reads, as the row's
// location key, and the row's network; ok is false where lookupRow would not read the row
// (the caller then looks addr up as usual, which also reports a corrupt file).
func (d *DB) LocationKey(addr netip.Addr) (key lookup.LocationKey, network netip.Prefix, ok bool) {
	if !addr.IsValid() {
		return key, network, false
	}
	defer func() {
		if recover() != nil { // a corrupt file: Lookup reports it
			key, network, ok = lookup.LocationKey{}, netip.Prefix{}, false
		}
	}()
	addr = addr.Unmap()
	libMu.RLock()
	defer libMu.RUnlock()
	if d.closed || !d.directDB11() {
		return key, network, false
	}
	r := d.rowFor(addr)
	if !r.valid || len(r.cells) < len(key) {
		return key, network, false
	}
	copy(key[:], r.cells)
	return key, d.rowNetwork(addr, r), true
}
