package httpapi

import (
	"bytes"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/apistack/platform/services/geoip/internal/lookup"
)

// keyedDB is a DB whose rows have location keys (dbfile.Manager over a BIN held in
// memory): the JSON of a row's location data, everything after the address's own keys,
// is then encoded once and reused for every address whose row shares that data.
type keyedDB interface {
	LocationKey(addr netip.Addr) (key lookup.LocationKey, network netip.Prefix, version string, ok bool)
	BorrowKeyed(addr netip.Addr) (rec lookup.Record, key lookup.LocationKey, version string, keyed bool, lease lookup.Lease, err error)
	OffsetEnd(zone string, t time.Time) int64
}

// fragment is the JSON of a location after the head fields (ip, network, version, which
// belong to the address; see appendHead): from ,"city": to the closing
// brace, as appendJSON writes it.
type fragment struct {
	key     lookup.LocationKey
	version string // database version the key belongs to
	expires int64  // unix nanoseconds: the cache's TTL, or the end of utc_offset's period
	found   bool   // the record was found: network is the row's
	json    []byte
}

// fragmentCache keeps fragments in a direct-mapped table of atomic pointers, as
// answerCache keeps answers: bounded, lock-free, a newer fragment replacing whatever held
// its slot. Under random addresses the rows of far fewer locations than addresses are
// asked for (on the full DB-IP data, 2 million random IPv4 addresses fall in 139,000
// locations; 16,384 slots answer 74 % of them, 65,536 slots, the default, 85 %, and hold
// about 42 MB when full), and a hit costs neither the record's
// strings (cold memory, scattered over the database), nor its time zone, region code and
// country facts, nor encoding them: under wrk's random addresses a miss cost about 13 us
// of CPU and a hit 2 us (docs/benchmarks.md, issue 16 round 4), so the hit rate is worth
// the memory.
type fragmentCache struct {
	slots []atomic.Pointer[fragment]
	mask  uint64
	ttl   int64
}

// newFragmentCache holds up to size fragments, rounded up to a power of two (size <= 0:
// none).
func newFragmentCache(size int, ttl time.Duration) *fragmentCache {
	if size <= 0 {
		return nil
	}
	n := slotCount(size)
	return &fragmentCache{slots: make([]atomic.Pointer[fragment], n), mask: uint64(n - 1), ttl: int64(ttl)}
}

func (c *fragmentCache) slot(key *lookup.LocationKey) *atomic.Pointer[fragment] {
	return &c.slots[xxhash.Sum64(key[:])&c.mask]
}

// get returns the fragment of key in database version, if fresh.
func (c *fragmentCache) get(key *lookup.LocationKey, version string, now int64) *fragment {
	f := c.slot(key).Load()
	if f == nil || f.key != *key || f.version != version || now >= f.expires {
		return nil
	}
	return f
}

func (c *fragmentCache) put(f *fragment) { c.slot(&f.key).Store(f) }

func (c *fragmentCache) purge() {
	if c == nil {
		return
	}
	for i := range c.slots {
		c.slots[i].Store(nil)
	}
}

// resolveByLocation fills ans, an uncached JSON answer that will not be kept, from the
// fragment of addr's location, looking the record up and keeping its fragment when there
// is none yet. It reports false, having done nothing, when addr's row has no key in the
// database serving (resolve then answers as usual).
func (a *API) resolveByLocation(addr netip.Addr, version string, now time.Time, ans *answer) (bool, error) {
	key, network, kver, ok := a.keyed.LocationKey(addr)
	if !ok || kver != version {
		return false, nil
	}
	if f := a.frags.get(&key, version, now.UnixNano()); f != nil {
		if !f.found {
			network = netip.Prefix{}
		}
		ans.setFragment(addr, network, version, f.json)
		return true, nil
	}
	rec, key, kver, keyed, lease, err := a.keyed.BorrowKeyed(addr)
	if err != nil {
		return true, fmt.Errorf("look up %s: %w", addr, err)
	}
	defer lease.Release()
	loc, buf := newLocation(addr, rec, make([]byte, 0, answerBufSize))
	ans.set(&loc, version, buf)
	if keyed && kver == version {
		if tail, ok := fragmentOf(ans.json, addr, rec.Network); ok {
			expires := now.UnixNano() + a.frags.ttl
			if end := a.keyed.OffsetEnd(loc.Timezone, now); end < expires {
				expires = end
			}
			a.frags.put(&fragment{key: key, version: kver, expires: expires, found: rec.Network.IsValid(), json: bytes.Clone(tail)})
		}
	}
	ans.loc = Location{} // its strings may be the database's, released on return
	return true, nil
}

// fragmentOf returns the part of json, the encoding of addr's record in network, after
// its head fields; false if json does not start with them as appendHead writes them.
func fragmentOf(json []byte, addr netip.Addr, network netip.Prefix) ([]byte, bool) {
	var scratch [maxHead]byte
	head := appendHead(scratch[:0], addr, network)
	if !bytes.HasPrefix(json, head) {
		return nil, false
	}
	return json[len(head):], true
}

// maxHead bounds appendHead's output: the keys and quotes (38 bytes), the longest
// address text (45, an IPv4-mapped IPv6 address) and network text (49).
const maxHead = 38 + 45 + 49

// appendHead writes the opening brace and the head fields (ip, network, version) as
// appendJSON writes them for addr in network (none: ""), without the field table: neither
// addresses nor networks have characters JSON escapes (TestAppendHeadMatchesTheEncoder).
func appendHead(b []byte, addr netip.Addr, network netip.Prefix) []byte {
	b = append(b, `{"ip":"`...)
	b = addr.AppendTo(b)
	b = append(b, `","network":"`...)
	if network.IsValid() {
		b = network.AppendTo(b)
	}
	b = append(b, `","version":"`...)
	b = append(b, ipVersion(addr)...)
	return append(b, '"')
}

// setFragment fills ans with the JSON answer for addr in network whose location's
// fragment is frag, and its ETag, in one allocation; ans.loc stays empty.
func (ans *answer) setFragment(addr netip.Addr, network netip.Prefix, version string, frag []byte) {
	buf := make([]byte, 0, maxHead+len(frag)+len(version)+19)
	buf = appendHead(buf, addr, network)
	buf = append(buf, frag...)
	end := len(buf)
	buf = appendETag(buf, version, buf[:end])
	ans.json = buf[:end:end]
	ans.etag = unsafe.String(&buf[end], len(buf)-end)
	ans.loc = Location{}
	ans.version = version
}
