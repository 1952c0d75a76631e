// Package tz gives records an IANA time zone name, derived from their coordinates with
// tzf when the database has none (DB-IP Lite, IP2Location's offset-only DB11), and the UTC
// offset in force at the lookup instant, daylight saving included.
package tz

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	// The zone rules travel with the binary: container images have no /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/ringsaturn/tzf"

	"github.com/apistack/platform/services/geoip/internal/lookup"
)

// Finder resolves time zones. The polygon data takes a moment and some 60 MB to load, so it
// loads on first use or when Warm is called; the zero value is not usable, use New.
type Finder struct {
	load func() (tzf.F, error)
	// zones maps a zone name to its *zone. Every lookup reads it and it only grows (a few
	// hundred IANA names at most), so it is copied on write behind an atomic pointer: a read
	// is one plain map probe, where sync.Map's trie cost 1.7 % of the server's CPU under
	// random addresses.
	zones  atomic.Pointer[map[string]*zone]
	zoneMu sync.Mutex // serialises the copies
	// names remembers the zone of recently asked coordinates: a polygon search costs
	// about a microsecond and MMDB files without zone names ask it on every lookup, while
	// a database has far fewer distinct coordinates than addresses. Direct-mapped, one
	// entry per slot, replaced on collision: bounded, lock-free, O(1).
	names []atomic.Pointer[zoneEntry]
	// loaded is set once the polygons are in memory (tests and logs).
	loaded atomic.Bool
}

type zoneEntry struct {
	lat, lon uint64 // math.Float64bits, so that equal bits (NaN included) hit
	name     string
}

// cacheBits sizes the coordinate cache: 65,536 slots, at most ~4 MB with their entries.
const cacheBits = 16

var _ lookup.TimeZoner = (*Finder)(nil)

// New returns a Finder backed by tzf's default (lite) data set.
func New() *Finder {
	z := &Finder{names: make([]atomic.Pointer[zoneEntry], 1<<cacheBits)}
	z.load = sync.OnceValues(func() (tzf.F, error) {
		f, err := tzf.NewDefaultFinder()
		if err != nil {
			return nil, fmt.Errorf("load time zone polygons: %w", err)
		}
		z.loaded.Store(true)
		return f, nil
	})
	return z
}

// Namer loads the polygon data into a finder of its own and returns its search, uncached:
// for naming many coordinates once (an MMDB's records when it loads, mmdb.DB.NameZones),
// after which the caller drops it and the collector frees the polygons (about 100 MB of
// heap), where New's Finder keeps them for the life of the process. It names coordinates
// as Finder.Name does.
func Namer() (func(lat, lon float64) string, error) {
	f, err := tzf.NewDefaultFinder()
	if err != nil {
		return nil, fmt.Errorf("load time zone polygons: %w", err)
	}
	return func(lat, lon float64) string { return f.GetTimezoneName(lon, lat) }, nil
}

// Loaded reports whether the polygon data has been loaded.
func (z *Finder) Loaded() bool { return z.loaded.Load() }

// Warm loads the polygon data now, so that the first lookup does not pay for it.
func (z *Finder) Warm() error {
	_, err := z.load()
	return err
}

// Name returns the IANA zone at the coordinates, or "" (open sea, or data not loadable).
func (z *Finder) Name(lat, lon float64) string {
	la, lo := math.Float64bits(lat), math.Float64bits(lon)
	slot := &z.names[slotOf(la, lo)]
	if e := slot.Load(); e != nil && e.lat == la && e.lon == lo {
		return e.name
	}
	f, err := z.load()
	if err != nil {
		return "" // not cached: the answer is not about these coordinates
	}
	name := f.GetTimezoneName(lon, lat)
	slot.Store(&zoneEntry{lat: la, lon: lo, name: name})
	return name
}

// slotOf mixes both coordinates (nearby places differ in the low bits of either) into
// the top cacheBits bits of a multiplicative hash.
func slotOf(lat, lon uint64) uint64 {
	h := lat*0x9e3779b97f4a7c15 ^ (lon^lon>>29)*0xbf58476d1ce4e5b9
	h ^= h >> 31
	h *= 0x94d049bb133111eb
	return h >> (64 - cacheBits)
}

// Resolve returns rec with TimeZone derived from the coordinates when the database had no
// name, and UTCOffset for now. A record without location or zone keeps whatever offset the
// database gave.
func (z *Finder) Resolve(rec lookup.Record, now time.Time) lookup.Record {
	if rec.TimeZone == "" && rec.HasLocation {
		rec.TimeZone = z.Name(rec.Latitude, rec.Longitude)
	}
	if rec.TimeZone == "" {
		return rec
	}
	if off := z.Offset(rec.TimeZone, now); off != "" {
		rec.UTCOffset = off
	}
	return rec
}

// zone is a loaded location and the period of its current offset: an offset holds from
// one transition to the next (months apart), so a lookup in the same period reuses it
// instead of searching the zone's transitions (a few hundred nanoseconds each time).
type zone struct {
	loc *time.Location
	cur atomic.Pointer[period]
}

type period struct {
	start, end int64 // unix nanoseconds, [start, end)
	offset     string
}

// Offset returns the UTC offset of zone at t in "-0700" form, or "" for an unknown zone.
func (z *Finder) Offset(name string, t time.Time) string {
	zn := z.zone(name)
	if zn == nil {
		return ""
	}
	n := t.UnixNano()
	if p := zn.cur.Load(); p != nil && n >= p.start && n < p.end {
		return p.offset
	}
	local := t.In(zn.loc)
	_, offset := local.Zone()
	p := &period{start: math.MinInt64, end: math.MaxInt64, offset: lookup.FormatOffset(offset)}
	if start, end := local.ZoneBounds(); !start.IsZero() || !end.IsZero() {
		if !start.IsZero() {
			p.start = start.UnixNano()
		}
		if !end.IsZero() {
			p.end = end.UnixNano()
		}
	}
	zn.cur.Store(p)
	return p.offset
}

var _ lookup.OffsetEnder = (*Finder)(nil)

// OffsetEnd returns when (Unix nanoseconds) the offset Offset gives for zone at t stops
// holding: the zone's next transition, or math.MaxInt64 when it has none or is unknown
// (Resolve then keeps the database's offset, which does not change).
func (z *Finder) OffsetEnd(name string, t time.Time) int64 {
	if name == "" || z.Offset(name, t) == "" {
		return math.MaxInt64
	}
	p := z.zone(name).cur.Load()
	if n := t.UnixNano(); p == nil || n < p.start || n >= p.end {
		return n // another goroutine moved the period on: valid for this instant only
	}
	return p.end
}

func (z *Finder) zone(name string) *zone {
	if m := z.zones.Load(); m != nil {
		if zn, ok := (*m)[name]; ok {
			return zn
		}
	}
	// Only names time.LoadLocation knows are stored, so the map stays bounded by the IANA
	// database whatever the records hold. The name is copied first: it may be a record's
	// string read in place from a database that is closed later (lookup.InPlaceDB), and
	// both the map and the Location keep it.
	name = strings.Clone(name)
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil
	}
	z.zoneMu.Lock()
	defer z.zoneMu.Unlock()
	old := z.zones.Load()
	if old != nil {
		if zn, ok := (*old)[name]; ok {
			return zn
		}
	}
	m := make(map[string]*zone, 1)
	if old != nil {
		m = make(map[string]*zone, len(*old)+1)
		for k, v := range *old {
			m[k] = v
		}
	}
	zn := &zone{loc: loc}
	m[name] = zn
	z.zones.Store(&m)
	return zn
}
