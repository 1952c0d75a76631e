package answer

import (
	"bytes"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/apistack/platform/services/geoip/internal/lookup"
	"github.com/apistack/platform/services/geoip/internal/offheap"
)

// fragment is what a location's answer holds beyond the head fields (ip, network, version,
// which belong to the address; see appendHead) and the country's two runs of keys
// (countryJSON, the same for every location of a country): the values of the location's
// own keys (ownKeys: city, region, latitude, time zone...), each as appendJSON writes it
// less a string's quotes, after a byte of its length. The keys' names and the country's
// runs are put back when the answer is put together (appendAnswer): a location's values
// take about 90 bytes where its encoded keys took about 215 and its whole answer about
// 550. A fragment holds no pointer: the table keeps it inline, as words (fragmentTable),
// and a request copies it out to its stack.
type fragment struct {
	key     lookup.LocationKey
	country uint16 // countryJSON.index of the runs put back
	n       uint8  // own's length
	found   bool   // the record was found: network is the row's
	expires int64  // unix nanoseconds: the cache's TTL, or the end of utc_offset's period
	own     [fragmentOwn]byte
}

// fragmentSize is a table slot's size: three cache lines, a sequence word and the
// fragment. A location whose values take more than fragmentOwn bytes (0.04 % of those
// random IPv4 addresses fall in on DB-IP's IPv4 MMDB, 3.5 % with 32 bytes less) is not kept: its
// answers are built from the record every time.
const (
	fragmentSize  = 192
	fragmentWords = fragmentSize / 8
	fragmentHead  = 5 // words of a fragment before own
	fragmentOwn   = fragmentSize - 8 - 8*fragmentHead
)

var _ = [1]struct{}{}[unsafe.Sizeof(fragment{})+8-fragmentSize] // a fragment fills a slot after its sequence word
var _ = [1]struct{}{}[unsafe.Offsetof(fragment{}.own)-8*fragmentHead]

// layoutPart is one step of a located answer after its head, in appendJSON's order:
// the country's run r (r >= 0), or one of the location's own keys (r < 0), written as
// text, its value (the fragment's next one) and, for a string, the closing quote.
type layoutPart struct {
	r      int
	field  int    // in fields, of an own key
	text   string // a comma, the quoted name, a colon and, for a string, the opening quote
	quoted bool
}

// answerLayout is a located answer after its head (appendHead's three keys), up to the
// closing brace: the country's runs and the own keys. The optional keys are not in it:
// only answers that are not a located record carry them, and fill keeps no such answer.
// layoutText is the length of the parts' text and closing quotes, and the brace.
var answerLayout, layoutText = func() (parts []layoutPart, text int) {
	if fields[0].name != "ip" || fields[1].name != "network" || fields[2].name != "version" {
		panic("answer: the head's keys moved; see appendHead")
	}
	for i := 3; i < len(fields); i++ {
		run := -1
		for r := range factRuns {
			if i == factRuns[r].start {
				run = r
			}
		}
		switch f := &fields[i]; {
		case run >= 0:
			parts = append(parts, layoutPart{r: run})
			i = factRuns[run].end - 1
		case !f.optional:
			p := layoutPart{r: -1, field: i, text: `,"` + f.name + `":`, quoted: f.kind == 's'}
			if p.quoted {
				p.text += `"`
				text++
			}
			parts = append(parts, p)
			text += len(p.text)
		}
	}
	return parts, text + 1
}()

// fragmentCache keeps fragments in a table of slots, two per hash (a set of two ways, the
// one expiring first replaced): bounded, lock-free, no map. Under random addresses the
// rows of far fewer locations than addresses are asked for: on the full DB-IP data, 2
// million random IPv4 addresses fall in 139,000 locations, and over those 2 million from
// empty 65,536 slots (the default) answer 87.5 % of them, 131,072 90.7 % (83 % of the
// first 250,000, 93 % after 2 million), 262,144 92.2 %, where a table of one slot per
// hash answered 85.8, 88.9 and 90.9 %. A hit costs neither the record's strings (cold
// memory, scattered over the database), nor its time zone, region code and country facts,
// nor encoding them: under wrk's random addresses a miss cost about 13 us of CPU and a hit
// 2 us (pprof under bench/scripts/geoip-http.sh), so the hit rate is worth the memory
// (fragmentSize bytes a slot, 12 MiB at the default). The default is as many slots as
// answers: twice as many would make the MMDB's answers cheaper still (in
// BenchmarkAnswerFullData its CPU per answer is about the BIN's at the default, 0.76x in one
// run with twice the slots) but cost 12 MiB more, which the MMDB's memory target lacks.
//
// A table belongs to one database version: a fragment's key means nothing in another
// file. The first request that sees a new version replaces the table (table), so a
// fragment carries no version of its own.
type fragmentCache struct {
	tab  atomic.Pointer[fragmentTable]
	size int
	ttl  int64
	// mu makes tables one at a time: each is 12 MiB at the default, and every request that finds a new
	// version at once would otherwise make its own.
	mu     sync.Mutex
	tables int // made so far, under mu (tests)
}

// fragmentTable is slots of fragmentWords words, each a sequence word and a fragment's
// words, read and written as a sequence lock: a writer makes the sequence odd, writes the
// words and makes it even again; a reader copies the words out and keeps the copy only if
// the sequence was even and unchanged across the copy. Every word is read and written
// atomically, so a reader racing a writer gets a torn copy it throws away, never a data
// race. Inline slots cost a hit one cache miss where a table of pointers to fragments
// cost two, and the collector sees one pointer-free array, not a hundred thousand objects.
type fragmentTable struct {
	version string
	words   []atomic.Uint64
	mask    uint64 // of a set's first slot: even
}

// newFragmentCache holds up to size fragments, rounded up to a power of two, at least two
// (size <= 0: none).
func newFragmentCache(size int, ttl time.Duration) *fragmentCache {
	if size <= 0 {
		return nil
	}
	return &fragmentCache{size: max(slotCount(size), 2), ttl: int64(ttl)}
}

// table returns the table of version, replacing one of another version. A request that
// straddles a reload and keeps a fragment of the old version after one of the new was kept
// swaps the tables back, losing what the other version kept: a few misses, never a
// fragment of the wrong file (byLocation keeps only the serving version's, which
// makes that rare).
func (c *fragmentCache) table(version string) *fragmentTable {
	if t := c.tab.Load(); t != nil && t.version == version {
		return t
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.tab.Load(); t != nil && t.version == version {
		return t // another request made it while this one waited
	}
	t := newFragmentTable(version, c.size)
	c.tab.Store(t)
	c.tables++
	return t
}

// allocTable is offheap.Alloc (a variable for the test of its release).
var allocTable = offheap.Alloc

// newFragmentTable makes the table of version with size slots, outside the Go heap and on
// huge pages where the kernel gives them: a hit reads one slot at random in 12 MiB, and on
// the heap's 4 KiB pages nearly every one missed the TLB and walked the page tables. The
// memory is unmapped once the table is unreachable, so every reader keeps the table alive
// until its last read of the words (runtime.KeepAlive in get and put). Where mapping
// fails the words are on the heap.
func newFragmentTable(version string, size int) *fragmentTable {
	t := &fragmentTable{version: version, mask: uint64(size-1) &^ 1}
	n := size * fragmentWords
	data, release, err := allocTable(n * 8)
	if err != nil {
		t.words = make([]atomic.Uint64, n)
		return t
	}
	t.words = unsafe.Slice((*atomic.Uint64)(unsafe.Pointer(unsafe.SliceData(data))), n)
	runtime.AddCleanup(t, func(release func() error) { _ = release() }, release)
	return t
}

// set returns the words of the two slots key may be kept in.
func (t *fragmentTable) set(key *lookup.LocationKey) []atomic.Uint64 {
	i := int(xxhash.Sum64(key[:])&t.mask) * fragmentWords
	return t.words[i : i+2*fragmentWords : i+2*fragmentWords]
}

// words is f as the words a slot holds after its sequence word.
func (f *fragment) words() *[fragmentWords - 1]uint64 {
	return (*[fragmentWords - 1]uint64)(unsafe.Pointer(f))
}

// ownWords is how many words of own a fragment of n bytes uses.
func ownWords(n uint8) int { return min((int(n)+7)/8, fragmentOwn/8) }

// read copies slot's fragment into f if it is key's and fresh at now.
func (f *fragment) read(slot []atomic.Uint64, key *lookup.LocationKey, now int64) bool {
	seq := slot[0].Load()
	if seq == 0 || seq&1 != 0 {
		return false // empty, or being written
	}
	w := f.words()
	for i := range fragmentHead {
		w[i] = slot[1+i].Load()
	}
	if f.key != *key || now >= f.expires {
		return false
	}
	for i := range ownWords(f.n) { // n may be torn: bounded, and the sequence check drops the copy
		w[fragmentHead+i] = slot[1+fragmentHead+i].Load()
	}
	return slot[0].Load() == seq
}

// get copies the fragment of key in database version into f, if one is kept and fresh.
func (c *fragmentCache) get(key *lookup.LocationKey, version string, now int64, f *fragment) bool {
	t := c.tab.Load()
	if t == nil || t.version != version {
		return false
	}
	set := t.set(key)
	ok := f.read(set[:fragmentWords], key, now) || f.read(set[fragmentWords:], key, now)
	runtime.KeepAlive(t) // its words are unmapped once it is unreachable
	return ok
}

// put keeps f, a fragment of database version, in the slot of its set that is empty or
// expires first (the older one: every fragment lives the TTL unless its UTC offset ends
// sooner). When another request is writing that slot, f is not kept.
func (c *fragmentCache) put(f *fragment, version string) {
	t := c.table(version)
	t.put(f)
	runtime.KeepAlive(t) // its words are unmapped once it is unreachable
}

func (t *fragmentTable) put(f *fragment) {
	set := t.set(&f.key)
	slot := set[:fragmentWords]
	const expires = 1 + unsafe.Offsetof(fragment{}.expires)/8 // its word in a slot
	if other := set[fragmentWords:]; slot[0].Load() != 0 && (other[0].Load() == 0 || int64(other[expires].Load()) < int64(slot[expires].Load())) {
		slot = other
	}
	seq := slot[0].Load()
	if seq&1 != 0 || !slot[0].CompareAndSwap(seq, seq+1) {
		return
	}
	w := f.words()
	for i := range fragmentHead + ownWords(f.n) {
		slot[1+i].Store(w[i])
	}
	slot[0].Store(seq + 2)
}

func (c *fragmentCache) purge() {
	if c == nil {
		return
	}
	c.tab.Store(nil)
}

// byLocation answers addr, an uncached JSON answer that will not be kept whole, from the
// fragment of its location, looking the record up and keeping its fragment when there is
// none yet. done is false, nothing having been done, when addr's row has no key in the data
// serving (Answer then answers from the record).
func (e *Engine) byLocation(addr netip.Addr, srcVersion, version string, now time.Time) (ent entry, done bool, err error) {
	key, network, kver, ok := e.keys.LocationKey(addr)
	if !ok || kver != srcVersion {
		return entry{}, false, nil
	}
	var f fragment
	if e.frags.get(&key, srcVersion, now.UnixNano(), &f) {
		if !f.found {
			network = netip.Prefix{}
		}
		return fromFragment(addr, network, version, &f), true, nil
	}
	rec, key, kver, keyed, lease, err := e.keys.BorrowKeyed(addr)
	if err != nil {
		return entry{}, true, fmt.Errorf("look up %s: %w", addr, err)
	}
	defer lease.Release()
	loc, buf := newLocation(addr, rec, make([]byte, 0, answerBufSize))
	ent = encode(&loc, version, buf)
	if keyed && kver == srcVersion && kver == e.src.Version() { // not a file replaced since
		if f.fill(ent.json, &loc, addr, rec.Network) {
			f.key = key
			f.expires = now.UnixNano() + e.frags.ttl
			if end := e.keys.OffsetEnd(loc.Timezone, now); end < f.expires {
				f.expires = end
			}
			e.frags.put(&f, kver)
		}
	}
	return ent, true, nil
}

// fill makes f the fragment of json, the encoding of loc, the answer for addr in network,
// with its key and expiry left for the caller; false if f would not give json back (an
// answer with a flag, a country the table lacks, whose name came from the database) or
// loc's values do not fit in a fragment.
func (f *fragment) fill(json []byte, loc *Location, addr netip.Addr, network netip.Prefix) bool {
	facts := loc.facts
	if facts == nil {
		facts = noCountry // the runs of an answer of no country, or of one the table lacks
	}
	f.found, f.country, f.n = network.IsValid(), uint16(facts.index), 0
	var scratch [256]byte
	n := 0
	for i := range answerLayout {
		p := &answerLayout[i]
		if p.r >= 0 {
			continue
		}
		v := fields[p.field].appendJSONValue(scratch[:0], loc)
		if p.quoted {
			v = v[1 : len(v)-1]
		}
		if n+1+len(v) > len(f.own) {
			return false
		}
		f.own[n] = byte(len(v))
		n += 1 + copy(f.own[n+1:], v)
	}
	f.n = uint8(n)
	var answer [1024]byte
	return bytes.Equal(f.appendAnswer(answer[:0], addr, network, facts), json)
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

// fromFragment is the JSON answer for addr in network whose location's fragment is f,
// with its ETag, in one allocation.
func fromFragment(addr netip.Addr, network netip.Prefix, version string, f *fragment) entry {
	facts := countryByIndex(int(f.country))
	buf := make([]byte, 0, maxHead+layoutText+int(f.n)+len(facts.runs[0])+len(facts.runs[1])+len(version)+19)
	buf = f.appendAnswer(buf, addr, network, facts)
	end := len(buf)
	buf = appendETag(buf, version, buf[:end])
	return entry{json: buf[:end:end], etag: unsafe.String(&buf[end], len(buf)-end), version: version}
}

// appendAnswer writes the JSON answer for addr in network from f and its country's runs
// (facts), as appendJSON writes it.
func (f *fragment) appendAnswer(b []byte, addr netip.Addr, network netip.Prefix, facts *countryJSON) []byte {
	b = appendHead(b, addr, network)
	own := f.own[:f.n]
	for i := range answerLayout {
		p := &answerLayout[i]
		if p.r >= 0 {
			b = append(b, facts.runs[p.r]...)
			continue
		}
		n := int(own[0])
		b = append(b, p.text...)
		b = append(b, own[1:1+n]...)
		if p.quoted {
			b = append(b, '"')
		}
		own = own[1+n:]
	}
	return append(b, '}')
}
