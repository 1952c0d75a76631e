package httpapi

import (
	"encoding/binary"
	"net/netip"
	"sync/atomic"
	"time"
	"unsafe"
)

// answer is a located record with its JSON encoding and that encoding's ETag. A cached one
// is shared read-only between requests and costs neither encoding nor hashing; the others
// live on the stack of the request that built them.
type answer struct {
	loc     Location
	json    []byte
	etag    string
	version string     // database version the answer came from
	addr    netip.Addr // the cache key, set by put
	expires int64      // unix nanoseconds; utc_offset moves with daylight saving
}

// set fills ans with loc, its JSON encoding and that encoding's ETag. The encoding and
// the ETag are appended to buf (nil, or what newLocation returned, holding loc's address
// texts), so that an uncached answer costs one allocation: the buffer.
func (ans *answer) set(loc *Location, version string, buf []byte) {
	if buf == nil {
		buf = make([]byte, 0, answerBufSize)
	}
	start := len(buf)
	buf = appendJSON(buf, loc)
	end := len(buf)
	buf = appendETag(buf, version, buf[start:end])
	// Three-index slice: nothing appended to the JSON can reach the ETag's bytes.
	ans.json = buf[start:end:end]
	ans.etag = unsafe.String(&buf[end], len(buf)-end)
	ans.loc = *loc
	ans.version = version
}

// answerBufSize holds a typical answer's address texts, JSON (about 600 bytes with every
// field set) and ETag; a longer one grows it once.
const answerBufSize = 896

// answerCache keeps the answers of hot addresses: a direct-mapped table of atomic
// pointers, each address hashed to one slot, a newer answer replacing whatever held it.
// Bounded and O(1) with no lock and no map: a lookup that misses (the common case under
// random addresses) costs one atomic load, and a hot address stays until another address
// of the same slot is asked for. Entries carry their address, database version and expiry.
//
// An address is admitted on its second miss: seen holds a fingerprint of the last address
// that missed in each slot. Under addresses asked once (a scan, random traffic) nothing is
// stored, so the cache neither allocates a shared answer per request nor keeps 65,536 of
// them live for the collector to mark; an address asked twice is cached from then on.
type answerCache struct {
	slots []cacheSlot
	mask  uint64
	ttl   time.Duration
}

// cacheSlot keeps the admission fingerprint beside the answer pointer: under random
// addresses every request misses, and one cache line per miss instead of two is felt.
type cacheSlot struct {
	ans  atomic.Pointer[answer]
	seen atomic.Uint64
}

// newAnswerCache holds up to size answers, rounded up to a power of two (size <= 0
// disables the cache).
func newAnswerCache(size int, ttl time.Duration) *answerCache {
	if size <= 0 {
		return nil
	}
	n := slotCount(size)
	return &answerCache{slots: make([]cacheSlot, n), mask: uint64(n - 1), ttl: ttl}
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

func (c *answerCache) slot(addr netip.Addr) *atomic.Pointer[answer] {
	return &c.slots[hashAddr(addr)&c.mask].ans
}

// admit reports whether addr missed before (it is then worth caching), and otherwise
// remembers it.
func (c *answerCache) admit(addr netip.Addr) bool {
	if c == nil {
		return false
	}
	h := hashAddr(addr)
	fp := h | 1 // never 0, the empty slot
	s := &c.slots[h&c.mask].seen
	if s.Load() == fp {
		return true
	}
	s.Store(fp)
	return false
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
		c.slots[i].ans.Store(nil)
	}
}

// len counts the entries held (tests and metrics).
func (c *answerCache) len() int {
	if c == nil {
		return 0
	}
	n := 0
	for i := range c.slots {
		if c.slots[i].ans.Load() != nil {
			n++
		}
	}
	return n
}
