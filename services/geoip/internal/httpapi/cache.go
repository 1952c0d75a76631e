package httpapi

import (
	"encoding/binary"
	"net/netip"
	"sync/atomic"
	"time"
)

// answer is a located record with its JSON encoding and that encoding's ETag (a header
// value net/http only reads), shared read-only between requests: a cached answer costs
// neither encoding nor hashing.
type answer struct {
	loc     Location
	json    []byte
	etag    []string
	version string     // database version the answer came from
	addr    netip.Addr // the cache key, set by put
	expires int64      // unix nanoseconds; utc_offset moves with daylight saving
}

func newAnswer(loc Location, version string) *answer {
	body := appendJSON(make([]byte, 0, 768), &loc)
	return &answer{loc: loc, json: body, etag: []string{etag(version, body)}, version: version}
}

// answerCache keeps the answers of hot addresses: a direct-mapped table of atomic
// pointers, each address hashed to one slot, a newer answer replacing whatever held it.
// Bounded and O(1) with no lock and no map: a lookup that misses (the common case under
// random addresses) costs one atomic load, and a hot address stays until another address
// of the same slot is asked for. Entries carry their address, database version and expiry.
type answerCache struct {
	slots []atomic.Pointer[answer]
	mask  uint64
	ttl   time.Duration
}

// newAnswerCache holds up to size answers, rounded up to a power of two (size <= 0
// disables the cache).
func newAnswerCache(size int, ttl time.Duration) *answerCache {
	if size <= 0 {
		return nil
	}
	n := 1
	for n < size {
		n <<= 1
	}
	return &answerCache{slots: make([]atomic.Pointer[answer], n), mask: uint64(n - 1), ttl: ttl}
}

func (c *answerCache) slot(addr netip.Addr) *atomic.Pointer[answer] {
	a := addr.As16()
	h := binary.LittleEndian.Uint64(a[0:8])*0x9e3779b97f4a7c15 ^ binary.LittleEndian.Uint64(a[8:16])
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return &c.slots[h&c.mask]
}

// get returns the answer for addr from database version, if fresh.
func (c *answerCache) get(addr netip.Addr, version string, now time.Time) *answer {
	if c == nil {
		return nil
	}
	a := c.slot(addr).Load()
	// Another address's answer, one from a replaced database, or one from before a
	// possible change of UTC offset is a miss; the next put replaces it.
	if a == nil || a.addr != addr || a.version != version || now.UnixNano() >= a.expires {
		return nil
	}
	return a
}

// put stores a, which must not be shared yet (its expiry is set here).
func (c *answerCache) put(addr netip.Addr, a *answer, now time.Time) {
	if c == nil {
		return
	}
	a.addr = addr
	a.expires = now.Add(c.ttl).UnixNano()
	c.slot(addr).Store(a)
}

// purge empties the cache; the database was replaced.
func (c *answerCache) purge() {
	if c == nil {
		return
	}
	for i := range c.slots {
		c.slots[i].Store(nil)
	}
}

// len counts the entries held (tests and metrics).
func (c *answerCache) len() int {
	if c == nil {
		return 0
	}
	n := 0
	for i := range c.slots {
		if c.slots[i].Load() != nil {
			n++
		}
	}
	return n
}
