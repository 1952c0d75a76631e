package answer

import (
	"encoding/binary"
	"net/netip"
	"sync/atomic"
	"time"
	"unsafe"
)

// entry is an encoded answer: the JSON and its ETag. A cached one is shared read-only
// between requests and costs neither encoding nor hashing.
type entry struct {
	json    []byte
	etag    string
	version string     // of the data the answer came from
	addr    netip.Addr // the cache key, set by put
	expires int64      // unix nanoseconds; utc_offset moves with daylight saving
}

// encode makes the entry of loc: its JSON encoding and that encoding's ETag, appended to
// buf (nil, or what newLocation returned, holding loc's address texts), so that an
// uncached answer costs one allocation: the buffer.
func encode(loc *Location, version string, buf []byte) entry {
	if buf == nil {
		buf = make([]byte, 0, answerBufSize)
	}
	start := len(buf)
	buf = appendJSON(buf, loc)
	end := len(buf)
	buf = appendETag(buf, version, buf[start:end])
	// Three-index slice: nothing appended to the JSON can reach the ETag's bytes.
	return entry{json: buf[start:end:end], etag: unsafe.String(&buf[end], len(buf)-end), version: version}
}

// answerBufSize holds a typical answer's address texts, JSON (about 600 bytes with every
// field set) and ETag; a longer one grows it once.
const answerBufSize = 896

// answerCache keeps the answers of hot addresses: a direct-mapped table of atomic
// pointers, each address hashed to one slot, a newer answer replacing whatever held it.
// Bounded and O(1) with no lock and no map: a lookup that misses (the common case under
// random addresses) reads one word, and a hot address stays until another address of the
// same slot is asked for. Entries carry their address, database version and expiry.
//
// An address is admitted on its second miss: meta holds a fingerprint of the last address
// that missed in each slot. Under addresses asked once (a scan, random traffic) nothing is
// stored, so the cache neither allocates a shared answer per request nor keeps 65,536 of
// them live for the collector to mark; an address asked twice is cached from then on.
type answerCache struct {
	// meta[i] holds, for slot i, the tag of the answer's address (high half; 0: none)
	// and the admission fingerprint of the last address that missed (low half). Under
	// random addresses every request misses; a miss then reads and writes one word of an
	// array of 256 KiB, which stays in the CPU's caches, and not the answers' slots.
	meta    []atomic.Uint32
	answers []atomic.Pointer[entry]
	mask    uint64
	ttl     time.Duration
}

// newAnswerCache holds up to size answers, rounded up to a power of two (size <= 0
// disables the cache).
func newAnswerCache(size int, ttl time.Duration) *answerCache {
	if size <= 0 {
		return nil
	}
	n := slotCount(size)
	return &answerCache{meta: make([]atomic.Uint32, n), answers: make([]atomic.Pointer[entry], n), mask: uint64(n - 1), ttl: ttl}
}

// slotCount is size rounded up to a power of two, so that a hash masked by slotCount-1
// picks a slot (the direct-mapped tables of answers and of location fragments).
func slotCount(size int) int {
	n := 1
	for n < size {
		n <<= 1
	}
	return n
}

func hashAddr(addr netip.Addr) uint64 {
	a := addr.As16()
	h := binary.LittleEndian.Uint64(a[0:8])*0x9e3779b97f4a7c15 ^ binary.LittleEndian.Uint64(a[8:16])
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return h
}

// slotOf returns addr's slot and the tag and fingerprint of addr there: bits of the hash
// the slot index does not use, never 0 (the empty word).
func (c *answerCache) slotOf(addr netip.Addr) (i uint64, tag, fp uint32) {
	h := hashAddr(addr)
	return h & c.mask, uint32(h>>48) | 1, uint32(h>>32)&0xffff | 1
}

// admit reports whether addr missed before (it is then worth caching), and otherwise
// remembers it.
func (c *answerCache) admit(addr netip.Addr) bool {
	if c == nil {
		return false
	}
	i, _, fp := c.slotOf(addr)
	m := &c.meta[i]
	for {
		old := m.Load()
		if old&0xffff == fp {
			return true
		}
		if m.CompareAndSwap(old, old&^0xffff|fp) {
			return false
		}
	}
}

// get returns the answer for addr from database version, if fresh.
func (c *answerCache) get(addr netip.Addr, version string, now time.Time) *entry {
	if c == nil {
		return nil
	}
	i, tag, _ := c.slotOf(addr)
	if c.meta[i].Load()>>16 != tag {
		return nil // the tag of another address, or none: no need to read the answer
	}
	a := c.answers[i].Load()
	// Another address's answer (tags are 16 bits), one from a replaced database, or one
	// from before a possible change of UTC offset is a miss; the next put replaces it.
	if a == nil || a.addr != addr || a.version != version || now.UnixNano() >= a.expires {
		return nil
	}
	return a
}

// put stores a, which must not be shared yet (its address and expiry are set here).
func (c *answerCache) put(addr netip.Addr, a *entry, now time.Time) {
	if c == nil {
		return
	}
	a.addr = addr
	a.expires = now.Add(c.ttl).UnixNano()
	i, tag, _ := c.slotOf(addr)
	c.answers[i].Store(a)
	m := &c.meta[i]
	for {
		old := m.Load()
		if m.CompareAndSwap(old, tag<<16|old&0xffff) {
			return
		}
	}
}

// purge empties the cache; the database was replaced. The admission fingerprints stay:
// an address asked before is still worth caching.
func (c *answerCache) purge() {
	if c == nil {
		return
	}
	for i := range c.answers {
		c.answers[i].Store(nil)
		c.meta[i].And(0xffff)
	}
}

// len counts the entries held (tests and metrics).
func (c *answerCache) len() int {
	if c == nil {
		return 0
	}
	n := 0
	for i := range c.answers {
		if c.answers[i].Load() != nil {
			n++
		}
	}
	return n
}
