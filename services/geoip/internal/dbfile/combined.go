package dbfile

import (
	"net/netip"
	"sync/atomic"

	"github.com/apistack/platform/services/geoip/internal/lookup"
)

// WithASN answers lookups from a city database completed with the autonomous system from
// an ASN database; both are Managers, so each is watched and reloaded on its own.
type WithASN struct {
	City, ASN *Manager
	// version caches City's and ASN's versions joined, keyed by the pair it was made from:
	// Version is asked on every request.
	version atomic.Pointer[[3]string]
}

// Lookup answers from the city database, then adds ASN and Org. A failing ASN lookup is
// not an answer's failure: the fields stay empty, as without an ASN database.
func (w *WithASN) Lookup(addr netip.Addr) (lookup.Record, error) {
	rec, err := w.City.Lookup(addr)
	if err != nil {
		return rec, err
	}
	if a, err := w.ASN.Lookup(addr); err == nil {
		rec.ASN, rec.Org = a.ASN, a.Org
	}
	return rec, nil
}

// Borrow is Lookup with the city record read in place (see Manager.Borrow): the lease
// is the city database's; the ASN fields are copies.
func (w *WithASN) Borrow(addr netip.Addr) (lookup.Record, lookup.Lease, error) {
	rec, lease, err := w.City.Borrow(addr)
	if err != nil {
		return rec, nil, err
	}
	if a, err := w.ASN.Lookup(addr); err == nil {
		rec.ASN, rec.Org = a.ASN, a.Org
	}
	return rec, lease, nil
}

// Keys is nil: a location's encoding holds its asn and org, which the city row's key does
// not determine, so answers with an ASN database are built from the record every time
// (services/geoip/README.md says what that costs).
func (w *WithASN) Keys() lookup.KeyedSource { return nil }

// Version changes when either database is replaced.
func (w *WithASN) Version() string {
	city, as := w.City.Version(), w.ASN.Version()
	if v := w.version.Load(); v != nil && v[0] == city && v[1] == as {
		return v[2]
	}
	v := &[3]string{city, as, city + "." + as}
	w.version.Store(v)
	return v[2]
}
