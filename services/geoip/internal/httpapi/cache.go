package httpapi

import (
	"encoding/binary"
	"net/netip"
	"sync"
	"time"
)

// answer is a located record with its JSON encoding, shared read-only between requests.
type answer struct {
	loc     Location
	json    []byte
	version string // database version the answer came from
	expires int64  // unix nanoseconds; utc_offset moves with daylight saving
}

// answerCache keeps the answers of hot addresses. It is bounded and O(1): each shard holds
// two generations of entries, and when the young one is full the old one is dropped whole,
// so an address asked for again within a generation survives and a scan of random
// addresses costs one map insert each, never an eviction walk. Shards keep lock hold times
// short under concurrent requests.
type answerCache struct {
	shards   [cacheShards]cacheShard
	perShard int // entries per generation
	ttl      time.Duration
}

const cacheShards = 32

type cacheShard struct {
	mu       sync.Mutex
	young    map[netip.Addr]*answer
	old      map[netip.Addr]*answer
	_padding [40]byte // keep shards on separate cache lines
}

// newAnswerCache holds up to about size answers (size <= 0 disables the cache).
func newAnswerCache(size int, ttl time.Duration) *answerCache {
	if size <= 0 {
		return nil
	}
	c := &answerCache{perShard: max(size/cacheShards/2, 1), ttl: ttl}
	for i := range c.shards {
		c.shards[i].young = make(map[netip.Addr]*answer)
	}
	return c
}

func (c *answerCache) shard(addr netip.Addr) *cacheShard {
	a := addr.As16()
	h := binary.LittleEndian.Uint64(a[0:8]) ^ binary.LittleEndian.Uint64(a[8:16])
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return &c.shards[h%cacheShards]
}

// get returns the answer for addr from database version, if fresh.
func (c *answerCache) get(addr netip.Addr, version string, now time.Time) *answer {
	if c == nil {
		return nil
	}
	s := c.shard(addr)
	s.mu.Lock()
	a, ok := s.young[addr]
	if !ok {
		if a, ok = s.old[addr]; ok {
			s.putLocked(addr, a, c.perShard) // still hot: move it to the young generation
		}
	}
	s.mu.Unlock()
	// An answer from a replaced database or from before a possible change of UTC offset
	// is a miss; the next put replaces it.
	if !ok || a.version != version || now.UnixNano() >= a.expires {
		return nil
	}
	return a
}

func (c *answerCache) put(addr netip.Addr, a *answer, now time.Time) {
	if c == nil {
		return
	}
	a.expires = now.Add(c.ttl).UnixNano()
	s := c.shard(addr)
	s.mu.Lock()
	s.putLocked(addr, a, c.perShard)
	s.mu.Unlock()
}

func (s *cacheShard) putLocked(addr netip.Addr, a *answer, limit int) {
	if len(s.young) >= limit {
		s.old, s.young = s.young, make(map[netip.Addr]*answer, limit)
	}
	s.young[addr] = a
}

// purge empties the cache; the database was replaced.
func (c *answerCache) purge() {
	if c == nil {
		return
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		s.young, s.old = make(map[netip.Addr]*answer), nil
		s.mu.Unlock()
	}
}

// len counts the entries held (tests and metrics).
func (c *answerCache) len() int {
	if c == nil {
		return 0
	}
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += len(s.young) + len(s.old)
		s.mu.Unlock()
	}
	return n
}
