package httpapi

import (
	"bytes"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apistack/platform/services/geoip/internal/dbfile"
	"github.com/apistack/platform/services/geoip/internal/lookup"
	"github.com/apistack/platform/services/geoip/internal/testdb"
	"github.com/apistack/platform/services/geoip/internal/tz"
)

// unkeyed hides a database's location keys: answers built the usual way, record by record.
type unkeyed struct{ m *dbfile.Manager }

func (u unkeyed) Lookup(addr netip.Addr) (lookup.Record, error) { return u.m.Lookup(addr) }
func (u unkeyed) Version() string                               { return u.m.Version() }
func (u unkeyed) Borrow(addr netip.Addr) (lookup.Record, lookup.Lease, error) {
	return u.m.Borrow(addr)
}

// sameAnswersByLocation asks n random addresses (and their neighbours, which share rows)
// of both families from an API that answers from location fragments and from one that
// does not, and requires the same JSON and ETag; most answers must come from a fragment.
func sameAnswersByLocation(t *testing.T, m *dbfile.Manager, n int) {
	keyed := newTestServer(t, m, withOptions(func(o *Options) { o.CacheSize = -1 })) // no answer cache: every answer is a miss
	keyed.api.keyed, keyed.api.frags = m, newFragmentCache(1<<12, time.Minute)
	plain := newTestServer(t, unkeyed{m}, withOptions(func(o *Options) { o.CacheSize = -1 }))
	if plain.api.keyed != nil || plain.api.frags != nil {
		t.Fatal("the unkeyed API keys its answers")
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
			if ok && keyed.api.frags.get(&key, version, time.Now().UnixNano()) != nil {
				hits++
			}
			var got, want answer
			if err := keyed.api.resolve(a, &got, false); err != nil {
				t.Fatal(err)
			}
			if err := plain.api.resolve(a, &want, false); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.json, want.json) || got.etag != want.etag || got.version != want.version {
				t.Fatalf("%s: from its location's fragment\n%s %s\nwant\n%s %s", a, got.json, got.etag, want.json, want.etag)
			}
		}
	}
	if hits < n {
		t.Errorf("%d answers of %d from a fragment: the path is not exercised", hits, 3*n)
	}
	t.Logf("%d of about %d answers from a fragment", hits, 3*n)
}

func TestLocationFragmentsAnswerAsTheRecordOnTheSample(t *testing.T) {
	sameAnswersByLocation(t, embeddedSample(t), 20000)
}

func TestLocationFragmentsAnswerAsTheRecordOnFullData(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the full DB-IP database")
	}
	m, err := dbfile.New(dbfile.Config{Path: testdb.ConvertedBIN(t), TimeZones: tz.New(), PollInterval: -1, Logger: slog.New(slog.DiscardHandler)})
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
func (f *keyedFake) Version() string { return "v1" }
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
	s := newTestServer(t, db, withOptions(func(o *Options) { o.Now = func() time.Time { return now } }))
	if s.api.keyed == nil {
		t.Fatal("the API does not use the database's location keys")
	}
	ask := func(ip, wantOffset string, wantBorrows int64) {
		t.Helper()
		var ans answer
		if err := s.api.resolve(netip.MustParseAddr(ip), &ans, false); err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(ans.json, []byte(`"ip":"`+ip+`","network":"8.8.8.0/24"`)) || !bytes.Contains(ans.json, []byte(`"utc_offset":"`+wantOffset+`"`)) {
			t.Errorf("%s at %s: %s, want utc_offset %s", ip, now, ans.json, wantOffset)
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
	s.api.Purge()
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
