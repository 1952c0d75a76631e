package answer

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver/testkit"
	"github.com/apistack/platform/services/geoip/internal/dbfile"
	"github.com/apistack/platform/services/geoip/internal/lookup"
	"github.com/apistack/platform/services/geoip/internal/testdb"
	"github.com/apistack/platform/services/geoip/internal/tz"
)

// unkeyed hides a database's location keys: answers built the usual way, record by record.
type unkeyed struct{ m *dbfile.Manager }

func (u unkeyed) Version() string          { return u.m.Version() }
func (u unkeyed) Keys() lookup.KeyedSource { return nil }
func (u unkeyed) Borrow(addr netip.Addr) (lookup.Record, lookup.Lease, error) {
	return u.m.Borrow(addr)
}

// sameAnswersByLocation asks n random addresses (and their neighbours, which share rows)
// of both families from an engine that answers from location fragments and from one that
// does not, and requires the same JSON and ETag; most answers must come from a fragment.
func sameAnswersByLocation(t *testing.T, m *dbfile.Manager, n int) {
	keyed := New(m, Options{CacheSize: -1}) // no answer cache: every answer is a miss
	keyed.keys, keyed.frags = m, newFragmentCache(1<<12, time.Minute)
	plain := New(unkeyed{m}, Options{CacheSize: -1})
	if plain.keys != nil || plain.frags != nil {
		t.Fatal("the unkeyed engine keys its answers")
	}
	r := rand.New(rand.NewPCG(1, 2))
	hits := 0
	for i := range n {
		var addr netip.Addr
		if i%4 == 3 {
			addr = netip.AddrFrom16([16]byte{0x20, byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256)), 15: byte(r.IntN(256))})
		} else {
			addr = netip.AddrFrom4([4]byte{byte(1 + r.IntN(222)), byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))})
		}
		for _, a := range []netip.Addr{addr, addr.Next(), addr} {
			if isReserved(a) {
				continue
			}
			key, _, version, ok := m.LocationKey(a)
			var f fragment
			if ok && keyed.frags.get(&key, version, time.Now().UnixNano(), &f) {
				hits++
			}
			got, gotTag, gotVersion, err := keyed.Answer(a)
			if err != nil {
				t.Fatal(err)
			}
			want, wantTag, wantVersion, err := plain.Answer(a)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) || gotTag != wantTag || gotVersion != wantVersion {
				t.Fatalf("%s: from its location's fragment\n%s %s\nwant\n%s %s", a, got, gotTag, want, wantTag)
			}
		}
	}
	if hits < n {
		t.Errorf("%d answers of %d from a fragment: the path is not exercised", hits, 3*n)
	}
	t.Logf("%d of about %d answers from a fragment", hits, 3*n)
}

func TestLocationFragmentsAnswerAsTheRecordOnTheSample(t *testing.T) {
	sameAnswersByLocation(t, testdb.EmbeddedSample(t), 20000)
}

func TestLocationFragmentsAnswerAsTheRecordOnFullData(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the full DB-IP database")
	}
	m, err := dbfile.New(dbfile.Config{Path: testdb.ConvertedBIN(t), TimeZones: tz.New(), PollInterval: -1, Logger: testkit.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	sameAnswersByLocation(t, m, 100000)
}

// The MMDB reader keys its records by their offset in the file: the answers from their
// fragments are those built from the record, on the full DB-IP IPv4 file as served.
func TestLocationFragmentsAnswerAsTheRecordOnFullMMDB(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the full DB-IP database")
	}
	m, err := dbfile.New(dbfile.Config{Path: testdb.MMDB(t, testdb.IPv4), TimeZones: tz.New(), PollInterval: -1, Logger: testkit.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	sameAnswersByLocation(t, m, 100000)
}

// keyedFake is one location (New York) in one row, on a clock the test moves: its UTC
// offset changes at end.
type keyedFake struct {
	now     *time.Time
	end     time.Time
	version string
	borrows atomic.Int64
}

func (f *keyedFake) Lookup(netip.Addr) (lookup.Record, error) {
	off := "-0400"
	if !f.now.Before(f.end) {
		off = "-0500"
	}
	return lookup.Record{Country: "US", City: "New York", Latitude: 40.7, Longitude: -74, HasLocation: true,
		TimeZone: "America/New_York", UTCOffset: off, Network: netip.MustParsePrefix("8.8.8.0/24")}, nil
}
func (f *keyedFake) Version() string          { return "v1" }
func (f *keyedFake) Keys() lookup.KeyedSource { return f }
func (f *keyedFake) Borrow(addr netip.Addr) (lookup.Record, lookup.Lease, error) {
	rec, err := f.Lookup(addr)
	return rec, noLease{}, err
}
func (f *keyedFake) LocationKey(netip.Addr) (lookup.LocationKey, netip.Prefix, string, bool) {
	return lookup.LocationKey{1}, netip.MustParsePrefix("8.8.8.0/24"), f.version, true
}
func (f *keyedFake) BorrowKeyed(addr netip.Addr) (lookup.Record, lookup.LocationKey, string, bool, lookup.Lease, error) {
	f.borrows.Add(1)
	rec, err := f.Lookup(addr)
	return rec, lookup.LocationKey{1}, f.version, true, noLease{}, err
}
func (f *keyedFake) OffsetEnd(_ string, t time.Time) int64 {
	if t.Before(f.end) {
		return f.end.UnixNano()
	}
	return math.MaxInt64
}

// A fragment holds until the cache's TTL or the end of its UTC offset, whichever is first;
// Purge drops them; a key of another database version is not used.
func TestLocationFragmentsEndWithTheirUTCOffset(t *testing.T) {
	end := time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)
	now := end.Add(-30 * time.Second)
	db := &keyedFake{now: &now, end: end, version: "v1"}
	e := New(db, Options{Now: func() time.Time { return now }})
	if e.keys == nil {
		t.Fatal("the engine does not use the source's location keys")
	}
	if got, want := e.frags.size, slotCount(1<<16); got != want {
		t.Errorf("the default table holds %d fragments, want %d (as many as answers)", got, want)
	}
	ask := func(ip, wantOffset string, wantBorrows int64) {
		t.Helper()
		body, _, _, err := e.Answer(netip.MustParseAddr(ip))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(body, []byte(`"ip":"`+ip+`","network":"8.8.8.0/24"`)) || !bytes.Contains(body, []byte(`"utc_offset":"`+wantOffset+`"`)) {
			t.Errorf("%s at %s: %s, want utc_offset %s", ip, now, body, wantOffset)
		}
		if n := db.borrows.Load(); n != wantBorrows {
			t.Errorf("%s at %s: %d records looked up, want %d", ip, now, n, wantBorrows)
		}
	}
	ask("8.8.8.1", "-0400", 1)
	ask("8.8.8.2", "-0400", 1) // the fragment
	now = end.Add(time.Second)
	ask("8.8.8.3", "-0500", 2) // the offset ended
	ask("8.8.8.4", "-0500", 2)
	now = now.Add(time.Minute)
	ask("8.8.8.5", "-0500", 3) // the TTL ended
	e.Purge()
	ask("8.8.8.6", "-0500", 4)
	db.version = "v0" // keys of another database version: looked up as usual, not kept
	ask("8.8.8.7", "-0500", 4)
	ask("8.8.8.8", "-0500", 4)
}

// appendHead writes what appendJSON writes for the first three fields.
func TestAppendHeadMatchesTheEncoder(t *testing.T) {
	for _, tc := range []struct{ addr, network string }{
		{"8.8.8.8", "8.8.8.0/24"}, {"8.8.8.8", ""}, {"255.255.255.255", "255.255.255.255/32"},
		{"2001:4860:4860::8888", "2001:4860::/32"}, {"::ffff:1.2.3.4", "::ffff:1.2.3.0/120"},
		{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"},
		{"::ffff:255.255.255.255", "::ffff:255.255.255.255/128"},
	} {
		addr := netip.MustParseAddr(tc.addr)
		var network netip.Prefix
		l := Location{IP: addr.String(), Version: ipVersion(addr)}
		if tc.network != "" {
			network = netip.MustParsePrefix(tc.network)
			l.Network = network.String()
		}
		full := appendJSON(nil, &l)
		head := appendHead(nil, addr, network)
		if len(head) > maxHead || !bytes.HasPrefix(full, head) || full[len(head)] != ',' {
			t.Errorf("%s in %q: head %s (%d bytes, at most %d), the encoder's answer %s", addr, tc.network, head, len(head), maxHead, full)
		}
	}
}

// A fragment holds no pointer, so the table can keep it as words, and it fills a slot
// after the sequence word: a hit reads three adjacent cache lines.
func TestFragmentsHoldNoPointers(t *testing.T) {
	typ := reflect.TypeFor[fragment]()
	for i := range typ.NumField() {
		switch k := typ.Field(i).Type.Kind(); k {
		case reflect.Bool, reflect.Uint8, reflect.Uint16, reflect.Int64:
		case reflect.Array:
			if e := typ.Field(i).Type.Elem().Kind(); e != reflect.Uint8 && e != reflect.Uint16 {
				t.Errorf("fragment.%s is an array of %s", typ.Field(i).Name, e)
			}
		default:
			t.Errorf("fragment.%s is a %s: fragments must hold no pointer", typ.Field(i).Name, k)
		}
	}
	if typ.Size()+8 != fragmentSize {
		t.Errorf("a fragment takes %d bytes, want %d", typ.Size(), fragmentSize-8)
	}
}

// A location's fragment keeps its values alone: not the keys' names, nor its country's runs,
// which every location of the country shares; both are put back where they were, and a
// location of no country has the empty runs. One whose values do not fit is not kept (a
// long name), nor one of a country code the table lacks (its name then comes from the
// database).
func TestFragmentsKeepTheLocationsValues(t *testing.T) {
	end := time.Now().Add(time.Hour)
	for _, tc := range []struct {
		name     string
		rec      lookup.Record
		country  *countryJSON // cut out; nil: the fragment is not kept
		maxBytes int
	}{
		{"known country", lookup.Record{Country: "DE", Region: "Bavaria", City: "Munich", TimeZone: "Europe/Berlin", UTCOffset: "+0100",
			Latitude: 48.1, Longitude: 11.5, HasLocation: true, Network: netip.MustParsePrefix("5.6.0.0/16")}, countryFragments("DE"), 60},
		{"escapes", lookup.Record{Country: "FR", Region: "Île-de-\"France\"\\", City: "a\x00b\u2028c\xffd", Org: "<&>", Network: netip.MustParsePrefix("5.6.0.0/16")}, countryFragments("FR"), 64},
		{"no country", lookup.Record{}, noCountry, 13},
		// Fourteen bytes of lengths and other values besides the city's.
		{"the longest that fits", lookup.Record{Country: "DE", City: strings.Repeat("x", fragmentOwn-15), Network: netip.MustParsePrefix("5.6.0.0/16")}, countryFragments("DE"), fragmentOwn},
		{"a byte too long", lookup.Record{Country: "DE", City: strings.Repeat("x", fragmentOwn-14), Network: netip.MustParsePrefix("5.6.0.0/16")}, nil, 0},
		{"a code the table lacks", lookup.Record{Country: "XZ", CountryName: "Nowhere", City: "Q", Network: netip.MustParsePrefix("5.6.0.0/16")}, nil, 0},
		{"own keys too long", lookup.Record{Country: "DE", City: strings.Repeat("Ortsteil ", 20), Network: netip.MustParsePrefix("5.6.0.0/16")}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := netip.MustParseAddr("5.6.7.8")
			loc, buf := newLocation(addr, tc.rec, nil)
			want := encode(&loc, "v1", buf)
			var f fragment
			kept := f.fill(want.json, &loc, addr, tc.rec.Network)
			if tc.country == nil {
				if kept {
					t.Fatalf("kept %d bytes of own keys (at most %d fit)", f.n, fragmentOwn)
				}
				return
			}
			if !kept {
				t.Fatal("not kept")
			}
			if got := countryByIndex(int(f.country)); got != tc.country {
				t.Fatalf("cut the runs of country %d", f.country)
			}
			own := f.own[:f.n]
			if bytes.Contains(own, []byte(`"city"`)) || bytes.Contains(own, []byte(`"country_name"`)) || len(own) > tc.maxBytes {
				t.Fatalf("the fragment (%d bytes, at most %d) holds keys: %q", len(own), tc.maxBytes, own)
			}
			f.expires = end.UnixNano()
			got := fromFragment(addr, tc.rec.Network, "v1", &f)
			if !bytes.Equal(got.json, want.json) || got.etag != want.etag {
				t.Errorf("put together\n%s %s\nwant\n%s %s", got.json, got.etag, want.json, want.etag)
			}
		})
	}
}

// The table is one database version's: a fragment kept for one is not found for another,
// and keeping one for another version starts a new table.
func TestFragmentTablesBelongToOneVersion(t *testing.T) {
	c := newFragmentCache(16, time.Minute)
	now := time.Now().UnixNano()
	key := lookup.LocationKey{7}
	var f fragment
	c.put(&fragment{key: key, expires: now + int64(time.Minute)}, "v1")
	if !c.get(&key, "v1", now, &f) {
		t.Fatal("the fragment just kept is not found")
	}
	if c.get(&key, "v2", now, &f) {
		t.Fatal("found for another version")
	}
	c.put(&fragment{key: lookup.LocationKey{8}, expires: now + int64(time.Minute)}, "v2")
	if c.get(&key, "v1", now, &f) {
		t.Fatal("v1's table outlived a fragment of v2")
	}
	if !c.get(&lookup.LocationKey{8}, "v2", now, &f) {
		t.Fatal("v2's fragment is not found")
	}
	c.purge()
	if c.get(&lookup.LocationKey{8}, "v2", now, &f) {
		t.Fatal("found after purge")
	}
}

// sameSet returns n keys that hash to the set of key in a table of c.
func sameSet(c *fragmentCache, key lookup.LocationKey, n int) []lookup.LocationKey {
	t := c.table("v1")
	want := &t.set(&key)[0]
	keys := []lookup.LocationKey{key}
	for i := uint32(1); len(keys) < n; i++ {
		k := key
		binary.LittleEndian.PutUint32(k[24:], i)
		if &t.set(&k)[0] == want {
			keys = append(keys, k)
		}
	}
	return keys
}

// Two locations of one set are both kept; a third replaces the one that expires first,
// and a fragment past its expiry is not answered.
func TestFragmentSetsKeepTwoWays(t *testing.T) {
	c := newFragmentCache(64, time.Minute)
	now := time.Now().UnixNano()
	keys := sameSet(c, lookup.LocationKey{1, 2, 3}, 3)
	keep := func(k lookup.LocationKey, expires int64, own string) {
		f := fragment{key: k, expires: expires, n: uint8(len(own))}
		copy(f.own[:], own)
		c.put(&f, "v1")
	}
	found := func(k lookup.LocationKey, at int64) string {
		var f fragment
		if !c.get(&k, "v1", at, &f) {
			return ""
		}
		return string(f.own[:f.n])
	}
	keep(keys[0], now+2e9, `,"city":"first"}`)
	keep(keys[1], now+1e9, `,"city":"second"}`)
	if a, b := found(keys[0], now), found(keys[1], now); a != `,"city":"first"}` || b != `,"city":"second"}` {
		t.Fatalf("two keys of a set: %q and %q", a, b)
	}
	keep(keys[2], now+3e9, `,"city":"third"}`)
	if a, b, c := found(keys[0], now), found(keys[1], now), found(keys[2], now); a == "" || b != "" || c != `,"city":"third"}` {
		t.Fatalf("a third key replaced the wrong one: %q, %q, %q", a, b, c)
	}
	if got := found(keys[0], now+2e9); got != "" {
		t.Errorf("answered %q at its expiry", got)
	}
}

// Readers racing writers on one set get a whole fragment or none: each writer keeps
// fragments whose every byte is derived from its key, and each reader checks what it got.
// Under -race this is also the proof that every word is read and written atomically.
func TestFragmentReadersNeverSeeATornFragment(t *testing.T) {
	c := newFragmentCache(2, time.Minute) // one set: every key collides
	now := time.Now().UnixNano()
	keys := sameSet(c, lookup.LocationKey{9}, 4)
	fill := func(k lookup.LocationKey, round int) fragment {
		f := fragment{key: k, expires: now + int64(time.Minute), n: uint8(fragmentOwn - int(k[24]) - round%7)}
		for i := range f.own[:f.n] {
			f.own[i] = k[24] + byte(i) + byte(f.n)
		}
		return f
	}
	var wg sync.WaitGroup
	var puts atomic.Int64
	stop := make(chan struct{})
	for w := range 2 {
		wg.Go(func() {
			for round := 0; ; round++ {
				select {
				case <-stop:
					return
				default:
				}
				f := fill(keys[(round+w)%len(keys)], round)
				c.put(&f, "v1")
				puts.Add(1)
			}
		})
	}
	fail := func(format string, args ...any) {
		close(stop)
		wg.Wait()
		t.Fatalf(format, args...)
	}
	// Reading starts once the writers are under way (the table exists only after a first
	// put; on a loaded machine they may not have run yet), and goes on until enough whole
	// fragments were read, however the scheduler shares the cores: a fixed number of reads
	// could all fall before the writers ran.
	for puts.Load() < 2 {
		runtime.Gosched()
	}
	before := puts.Load()
	deadline := time.Now().Add(20 * time.Second)
	hits, reads := 0, 0
	for ; hits < 20000 || reads < 200000; reads++ {
		if reads%4096 == 0 && time.Now().After(deadline) {
			break
		}
		k := keys[reads%len(keys)]
		var f fragment
		if !c.get(&k, "v1", now, &f) {
			continue
		}
		hits++
		for j, b := range f.own[:f.n] {
			if int(f.n) > fragmentOwn || b != k[24]+byte(j)+byte(f.n) {
				fail("torn fragment for key %d: byte %d of %d is %d", k[24], j, f.n, b)
			}
		}
	}
	during := puts.Load() - before
	close(stop)
	wg.Wait()
	if hits == 0 || during == 0 {
		t.Fatalf("%d whole fragments read in %d reads while the writers kept %d: the race was not exercised", hits, reads, during)
	}
	t.Logf("%d whole fragments read in %d reads while two writers kept %d", hits, reads, during)
}

// Requests that all find a new database version at once make one table between them: a
// table is 12 MiB at the default size.
func TestFragmentTablesAreMadeOnce(t *testing.T) {
	c := newFragmentCache(1<<12, time.Minute)
	now := time.Now().UnixNano()
	for _, version := range []string{"v1", "v2"} {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 32 {
			wg.Go(func() {
				<-start
				c.put(&fragment{key: lookup.LocationKey{byte(i)}, expires: now + int64(time.Minute)}, version)
			})
		}
		close(start)
		wg.Wait()
	}
	if c.tables != 2 {
		t.Errorf("64 fragments of two versions made %d tables, want 2", c.tables)
	}
	var f fragment
	if !c.get(&lookup.LocationKey{31}, "v2", now, &f) {
		t.Error("a fragment of the last version is not found")
	}
}

// TestFragmentTablesAreReleased: a table's words live outside the Go heap, and are
// unmapped once the table is replaced and unreachable, not before: a reader holding the
// old table still reads it (run under -race, with the collector forced meanwhile).
func TestFragmentTablesAreReleased(t *testing.T) {
	var made, released atomic.Int32
	alloc := allocTable
	allocTable = func(size int) ([]byte, func() error, error) {
		data, release, err := alloc(size)
		made.Add(1)
		return data, func() error { released.Add(1); return release() }, err
	}
	defer func() { allocTable = alloc }()

	c := newFragmentCache(1<<12, time.Minute)
	now := time.Now().UnixNano()
	key := lookup.LocationKey{7}
	c.put(&fragment{key: key, n: 8, expires: now + int64(time.Minute)}, "v1")
	old := c.tab.Load()
	for _, version := range []string{"v2", "v3"} {
		c.put(&fragment{key: key, n: 8, expires: now + int64(time.Minute)}, version)
	}
	runtime.GC()
	runtime.GC()
	var f fragment
	if !f.read(old.set(&key)[:fragmentWords], &key, now) { // old is still reachable here
		t.Error("the replaced table kept alive by a reader lost its fragment")
	}
	runtime.KeepAlive(old)
	old = nil
	deadline := time.Now().Add(5 * time.Second)
	for released.Load() < 2 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if made.Load() != 3 || released.Load() != 2 {
		t.Errorf("%d tables made, %d released; want 3 and 2 (the serving one kept)", made.Load(), released.Load())
	}
	if !c.get(&key, "v3", now, &f) {
		t.Error("the serving table lost its fragment")
	}
}
