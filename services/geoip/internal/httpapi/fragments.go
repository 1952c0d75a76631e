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
// belong to the address; see appendHead), from ,"city": to the closing brace as appendJSON
// writes it, less the country's two runs of keys (countryJSON), which are the same for
// every location of a country and are copied from countryTable when the answer is put
// together (setFragment). What is left, the location's own keys, is about 200 bytes where
// the whole was about 550: a fragment is one pointer-free object of fragmentSize bytes,
// which a hit reads in five adjacent cache lines, the collector never scans, and of which
// twice as many fit in the memory the whole encodings took.
type fragment struct {
	key     lookup.LocationKey
	found   bool      // the record was found: network is the row's
	country uint16    // countryJSON.index of the runs cut out of own
	cut     [2]uint16 // where in own the country's runs go
	n       uint16    // own's length
	expires int64     // unix nanoseconds: the cache's TTL, or the end of utc_offset's period
	own     [fragmentOwn]byte
}

// fragmentSize is a fragment's size in memory, one of the allocator's size classes; own
// takes the rest. A location whose own keys are longer (a 150-byte city name) is not kept:
// its answers are built from the record every time.
const (
	fragmentSize = 320
	fragmentOwn  = fragmentSize - 48
)

var _ = [1]struct{}{}[unsafe.Sizeof(fragment{})-fragmentSize] // fragmentOwn fills the size class exactly

// fragmentCache keeps fragments in a direct-mapped table of atomic pointers, as
// answerCache keeps answers: bounded, lock-free, a newer fragment replacing whatever held
// its slot. Under random addresses the rows of far fewer locations than addresses are
// asked for (on the full DB-IP data, 2 million random IPv4 addresses fall in 139,000
// locations; over those 2 million from empty, a table of 65,536 slots answers 86 % of
// them, 131,072 slots, the default, 89 % (82 % of the first 250,000, 91 % after 2 million),
// and holds 42 MB when full), and a hit costs neither the record's strings
// (cold memory, scattered over the database), nor its time zone, region code and country
// facts, nor encoding them: under wrk's random addresses a miss cost about 13 us of CPU
// and a hit 2 us (docs/benchmarks.md, issue 16 round 4), so the hit rate is worth the
// memory.
//
// The table belongs to one database version: a fragment's key means nothing in another
// file. The first request that sees a new version replaces the table (table), so a
// fragment carries no version of its own and holds no pointer.
type fragmentCache struct {
	tab  atomic.Pointer[fragmentTable]
	size int
	ttl  int64
}

type fragmentTable struct {
	version string
	slots   []atomic.Pointer[fragment]
	mask    uint64
}

// newFragmentCache holds up to size fragments, rounded up to a power of two (size <= 0:
// none).
func newFragmentCache(size int, ttl time.Duration) *fragmentCache {
	if size <= 0 {
		return nil
	}
	return &fragmentCache{size: slotCount(size), ttl: int64(ttl)}
}

// table returns the table of version, replacing one of another version. Requests that
// straddle a reload may swap the tables back and forth once or twice, each time losing
// what the other version kept: a few misses, never a fragment of the wrong file.
func (c *fragmentCache) table(version string) *fragmentTable {
	t := c.tab.Load()
	if t != nil && t.version == version {
		return t
	}
	n := &fragmentTable{version: version, slots: make([]atomic.Pointer[fragment], c.size), mask: uint64(c.size - 1)}
	if c.tab.CompareAndSwap(t, n) {
		return n
	}
	return c.table(version) // another request replaced it first
}

func (t *fragmentTable) slot(key *lookup.LocationKey) *atomic.Pointer[fragment] {
	return &t.slots[xxhash.Sum64(key[:])&t.mask]
}

// get returns the fragment of key in database version, if fresh.
func (c *fragmentCache) get(key *lookup.LocationKey, version string, now int64) *fragment {
	t := c.tab.Load()
	if t == nil || t.version != version {
		return nil
	}
	f := t.slot(key).Load()
	if f == nil || f.key != *key || now >= f.expires {
		return nil
	}
	return f
}

// put keeps f, a fragment of database version.
func (c *fragmentCache) put(f *fragment, version string) { c.table(version).slot(&f.key).Store(f) }

func (c *fragmentCache) purge() {
	if c == nil {
		return
	}
	c.tab.Store(nil)
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
		ans.setFragment(addr, network, version, f)
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
		if f := newFragment(ans.json, addr, rec.Network, loc.facts); f != nil {
			f.key = key
			f.expires = now.UnixNano() + a.frags.ttl
			if end := a.keyed.OffsetEnd(loc.Timezone, now); end < f.expires {
				f.expires = end
			}
			a.frags.put(f, kver)
		}
	}
	ans.loc = Location{} // its strings may be the database's, released on return
	return true, nil
}

// newFragment returns the fragment of json, the encoding of addr's record in network
// whose country's runs are facts (nil: not from countryTable), with its key and expiry
// left for the caller; nil if json does not start with the head as appendHead writes it,
// or its keys do not fit in a fragment.
func newFragment(json []byte, addr netip.Addr, network netip.Prefix, facts *countryJSON) *fragment {
	var scratch [maxHead]byte
	head := appendHead(scratch[:0], addr, network)
	if !bytes.HasPrefix(json, head) {
		return nil
	}
	tail := json[len(head):]
	// The runs are found by their text: each starts with ,"key": and no string value can
	// hold an unescaped quote, so the first match is where appendJSON wrote the run. A
	// location of no country has the empty runs; one whose country the table lacks (its
	// name from the database) has none to cut, and is not kept.
	if facts == nil {
		facts = noCountry
	}
	r0 := bytes.Index(tail, facts.runs[0])
	r1 := bytes.Index(tail, facts.runs[1])
	if r0 < 0 || r1 < r0+len(facts.runs[0]) {
		return nil
	}
	mid, rest := tail[r0+len(facts.runs[0]):r1], tail[r1+len(facts.runs[1]):]
	if r0+len(mid)+len(rest) > fragmentOwn {
		return nil
	}
	f := &fragment{found: network.IsValid(), country: uint16(facts.index)}
	n := copy(f.own[:], tail[:r0])
	n += copy(f.own[n:], mid)
	n += copy(f.own[n:], rest)
	f.cut = [2]uint16{uint16(r0), uint16(r0 + len(mid))}
	f.n = uint16(n)
	return f
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
// fragment is f, and its ETag, in one allocation; ans.loc stays empty.
func (ans *answer) setFragment(addr netip.Addr, network netip.Prefix, version string, f *fragment) {
	own, facts := f.own[:f.n], countryByIndex(int(f.country))
	buf := make([]byte, 0, maxHead+len(own)+len(facts.runs[0])+len(facts.runs[1])+len(version)+19)
	buf = appendHead(buf, addr, network)
	buf = append(buf, own[:f.cut[0]]...)
	buf = append(buf, facts.runs[0]...)
	buf = append(buf, own[f.cut[0]:f.cut[1]]...)
	buf = append(buf, facts.runs[1]...)
	buf = append(buf, own[f.cut[1]:]...)
	end := len(buf)
	buf = appendETag(buf, version, buf[:end])
	ans.json = buf[:end:end]
	ans.etag = unsafe.String(&buf[end], len(buf)-end)
	ans.loc = Location{}
	ans.version = version
}
