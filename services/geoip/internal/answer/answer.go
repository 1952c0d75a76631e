// Package answer is geoip's answer engine: the answer for one address in ipapi.co's fields
// and formats, from a Source (the databases), with the reserved ranges, the country facts
// and the caches of encoded answers. It knows nothing of HTTP; internal/httpapi maps the
// routes onto it.
//
// A lookup's walk: Answer asks the local overrides (overrides.go), the reserved ranges, then the answer cache (encoded answers
// of hot addresses), then, for a source with location keys, the fragment cache (encoded
// locations shared by many addresses), and only then the source's record, which it encodes
// once (encode.go) and keeps in whichever cache wants it. The caches hold bytes, never a
// Location.
package answer

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/apistack/platform/services/geoip/internal/lookup"
)

// Source is where answers come from: dbfile.Manager, dbfile.WithASN, or a fixed database
// in tests (Records). What it can do beyond Borrow it says with Keys, not by implementing
// optional interfaces.
type Source interface {
	// Version changes whenever different data starts serving; it is part of every ETag.
	Version() string
	// Borrow reads addr's record. Its strings may be the database's own memory, valid until
	// the lease is released: exactly once, soon; there is no lease after an error.
	Borrow(addr netip.Addr) (lookup.Record, lookup.Lease, error)
	// Keys is the source's location keys (a BIN held in memory has them), nil when its
	// rows have none: answers are then built from the record every time.
	Keys() lookup.KeyedSource
}

// Records is a Source over a database that answers copies (Lookup) and has no location
// keys: the small fixtures of tests, any lookup.DB with a version.
func Records(db interface {
	Lookup(addr netip.Addr) (lookup.Record, error)
	Version() string
}) Source {
	return records{db}
}

type records struct {
	db interface {
		Lookup(addr netip.Addr) (lookup.Record, error)
		Version() string
	}
}

func (r records) Version() string          { return r.db.Version() }
func (r records) Keys() lookup.KeyedSource { return nil }
func (r records) Borrow(addr netip.Addr) (lookup.Record, lookup.Lease, error) {
	rec, err := r.db.Lookup(addr)
	if err != nil {
		return rec, nil, err
	}
	return rec, noLease{}, nil
}

// noLease is the lease of a record that was copied: nothing to release.
type noLease struct{}

func (noLease) Release() {}

// Options tune the engine; the zero value is usable.
type Options struct {
	// CacheSize bounds the cache of encoded answers (default 65536 addresses; negative
	// disables it), and as many the cache of encoded locations (see fragmentCache), when
	// the source has location keys.
	CacheSize int
	// CacheTTL bounds how long a cached answer is reused (default 1m): utc_offset changes
	// at daylight-saving transitions without the database changing.
	CacheTTL time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Engine answers addresses from a Source. Safe for concurrent use.
type Engine struct {
	src   Source
	keys  lookup.KeyedSource // src.Keys(), when frags is kept
	cache *answerCache
	frags *fragmentCache
	now   func() time.Time

	hits, misses atomic.Uint64

	over   atomic.Pointer[Overrides]     // SetOverrides; nil: none
	joined atomic.Pointer[joinedVersion] // versions
}

// New makes the engine of src.
func New(src Source, opts Options) *Engine {
	if opts.CacheSize == 0 {
		opts.CacheSize = 1 << 16
	}
	if opts.CacheTTL <= 0 {
		opts.CacheTTL = time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	e := &Engine{src: src, cache: newAnswerCache(opts.CacheSize, opts.CacheTTL), now: opts.Now}
	if k := src.Keys(); k != nil && opts.CacheSize > 0 {
		e.keys, e.frags = k, newFragmentCache(opts.CacheSize, opts.CacheTTL)
	}
	return e
}

// Answer is the JSON answer for addr (already unmapped, lookup.ParseAddr), its ETag and
// the version of the data it came from: reserved ranges without a lookup, the rest from
// the caches or the source. body may be shared with other callers: read it, never write it.
func (e *Engine) Answer(addr netip.Addr) (body []byte, etag, version string, err error) {
	srcVersion, version := e.versions()
	if ov := e.over.Load().lookup(addr); ov != nil {
		// Not cached: overridden networks are few, and an answer of theirs is built whole.
		loc, err := e.overridden(addr, ov)
		if err != nil {
			return nil, "", "", err
		}
		ent := encode(&loc, version, nil)
		return ent.json, ent.etag, version, nil
	}
	if isReserved(addr) {
		loc := reservedLocation(addr)
		ent := encode(&loc, version, nil)
		return ent.json, ent.etag, version, nil
	}
	now := e.now()
	if c := e.cache.get(addr, version, now); c != nil {
		e.hits.Add(1)
		return c.json, c.etag, c.version, nil
	}
	e.misses.Add(1)
	admit := e.cache.admit(addr)
	if !admit && e.keys != nil {
		// Not worth caching whole: from the encoding of the row's location, when the
		// source keys its rows.
		if ent, done, err := e.byLocation(addr, srcVersion, version, now); done {
			return ent.json, ent.etag, version, err
		}
	}
	rec, lease, err := e.src.Borrow(addr)
	if err != nil {
		return nil, "", "", fmt.Errorf("look up %s: %w", addr, err)
	}
	defer lease.Release()
	loc, buf := newLocation(addr, rec, make([]byte, 0, answerBufSize))
	ent := encode(&loc, version, buf)
	if admit {
		shared := new(entry)
		*shared = ent
		e.cache.put(addr, shared, now)
	}
	return ent.json, ent.etag, version, nil
}

// Record is addr's answer as a Location, for the formats other than JSON and for batches,
// with the version of the data it came from. It is the caller's: no string in it is the
// database's memory.
func (e *Engine) Record(addr netip.Addr) (Location, string, error) {
	_, version := e.versions()
	if ov := e.over.Load().lookup(addr); ov != nil {
		loc, err := e.overridden(addr, ov)
		return loc, version, err
	}
	if isReserved(addr) {
		return reservedLocation(addr), version, nil
	}
	now := e.now()
	if c := e.cache.get(addr, version, now); c != nil {
		e.hits.Add(1)
		loc, err := decode(c.json)
		return loc, c.version, err
	}
	e.misses.Add(1)
	admit := e.cache.admit(addr)
	rec, lease, err := e.src.Borrow(addr)
	if err != nil {
		return Location{}, "", fmt.Errorf("look up %s: %w", addr, err)
	}
	defer lease.Release()
	loc, buf := newLocation(addr, rec, make([]byte, 0, answerBufSize))
	if admit {
		shared := new(entry)
		*shared = encode(&loc, version, buf)
		e.cache.put(addr, shared, now)
	}
	loc.own()
	return loc, version, nil
}

// decode reads a cached JSON answer back: the encoders write every key Location has,
// floats in their shortest exact form, so the Location is the one encoded.
func decode(body []byte) (Location, error) {
	var loc Location
	if err := json.Unmarshal(body, &loc); err != nil {
		return Location{}, fmt.Errorf("decode a cached answer: %w", err)
	}
	return loc, nil
}

// Purge empties the caches; call it when the data is replaced. Answers of older data are
// never served even before Purge (each carries its version); Purge frees their memory.
func (e *Engine) Purge() {
	e.cache.purge()
	e.frags.purge()
}

// CacheLen is the number of answers cached now.
func (e *Engine) CacheLen() int { return e.cache.len() }

// CacheStats counts the answers served from the answer cache and those that were not
// (reserved addresses excluded).
func (e *Engine) CacheStats() (hits, misses uint64) { return e.hits.Load(), e.misses.Load() }

// ETag is a strong validator of one representation: the data's version and a hash of the
// bytes, so it changes with the data and with anything else that changes the body (the
// clock's utc_offset, a JSONP callback, a new release's encoding). xxHash64: fixed (every
// replica gives the same ETag) and fast (it runs on every uncached answer).
func ETag(version string, body []byte) string {
	b := appendETag(make([]byte, 0, len(version)+19), version, body)
	return unsafe.String(unsafe.SliceData(b), len(b)) // one allocation; b is not written again
}

// appendETag appends body's ETag (see ETag) to b.
func appendETag(b []byte, version string, body []byte) []byte {
	b = append(b, '"')
	b = append(b, version...)
	b = append(b, '-')
	var sum [8]byte
	binary.BigEndian.PutUint64(sum[:], xxhash.Sum64(body))
	b = hex.AppendEncode(b, sum[:])
	return append(b, '"')
}
