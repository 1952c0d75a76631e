// Package tz gives records an IANA time zone name, derived from their coordinates with
// tzf when the database has none (DB-IP Lite, IP2Location's offset-only DB11), and the UTC
// offset in force at the lookup instant, daylight saving included.
package tz

import (
	"fmt"
	"sync"
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
	locs sync.Map // zone name -> *time.Location
}

var _ lookup.TimeZoner = (*Finder)(nil)

// New returns a Finder backed by tzf's default (lite) data set.
func New() *Finder {
	return &Finder{load: sync.OnceValues(func() (tzf.F, error) {
		f, err := tzf.NewDefaultFinder()
		if err != nil {
			return nil, fmt.Errorf("load time zone polygons: %w", err)
		}
		return f, nil
	})}
}

// Warm loads the polygon data now, so that the first lookup does not pay for it.
func (z *Finder) Warm() error {
	_, err := z.load()
	return err
}

// Name returns the IANA zone at the coordinates, or "" (open sea, or data not loadable).
func (z *Finder) Name(lat, lon float64) string {
	f, err := z.load()
	if err != nil {
		return ""
	}
	return f.GetTimezoneName(lon, lat)
}

// Resolve fills rec.TimeZone from the coordinates when the database had no name, and
// rec.UTCOffset for now. A record without location or zone keeps whatever offset the
// database gave.
func (z *Finder) Resolve(rec *lookup.Record, now time.Time) {
	if rec.TimeZone == "" && rec.HasLocation {
		rec.TimeZone = z.Name(rec.Latitude, rec.Longitude)
	}
	if rec.TimeZone == "" {
		return
	}
	if loc := z.location(rec.TimeZone); loc != nil {
		_, offset := now.In(loc).Zone()
		rec.UTCOffset = lookup.FormatOffset(offset)
	}
}

// Offset returns the UTC offset of zone at t in "-0700" form, or "" for an unknown zone.
func (z *Finder) Offset(zone string, t time.Time) string {
	loc := z.location(zone)
	if loc == nil {
		return ""
	}
	_, offset := t.In(loc).Zone()
	return lookup.FormatOffset(offset)
}

func (z *Finder) location(name string) *time.Location {
	if v, ok := z.locs.Load(name); ok {
		return v.(*time.Location)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil
	}
	z.locs.Store(name, loc)
	return loc
}
