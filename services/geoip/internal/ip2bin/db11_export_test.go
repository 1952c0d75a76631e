package ip2bin

import (
	"encoding/binary"
	"fmt"
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

// CheckFineIndex holds d's IPv4 index built at load (buildFine4) to its definition: entry b
// is the row holding the first address of /20 block b, and the entries do not decrease.
func CheckFineIndex(d *DB) error {
	if d.fine4 == nil {
		return fmt.Errorf("no IPv4 index was built")
	}
	base, rowSize, count := int(d.hdr.base4)-1, 4*int(d.hdr.columns), int(d.hdr.count4)
	from := func(r int) uint64 { return uint64(binary.LittleEndian.Uint32(d.data[base+r*rowSize:])) }
	for b := 0; b < len(d.fine4)-1; b++ {
		r, start := int(d.fine4[b]), uint64(b)<<fineShift4
		if r > count-2 || from(r) > start || from(r+1) <= start && r+1 < count-1 {
			return fmt.Errorf("entry %d (%s) names row %d, which does not hold it", b, netip.AddrFrom4([4]byte{byte(start >> 24), byte(start >> 16), byte(start >> 8), 0}), r)
		}
		if b > 0 && d.fine4[b] < d.fine4[b-1] {
			return fmt.Errorf("entry %d decreases", b)
		}
	}
	if last := d.fine4[len(d.fine4)-1]; int(last) != count-2 {
		return fmt.Errorf("the last entry names row %d, not the last range's row %d", last, count-2)
	}
	return nil
}
