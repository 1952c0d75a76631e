package answer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"

	"github.com/apistack/platform/services/geoip/internal/lookup"
	"github.com/apistack/platform/services/geoip/internal/testdb"
)

func mustOverrides(t testing.TB, text string) *Overrides {
	t.Helper()
	o, err := ParseOverrides([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// The longest prefix holding an address wins, in both families; IPv4-mapped forms in the
// file are the IPv4 networks; /0, /32 and /128 hold what they should.
func TestOverridesLongestPrefix(t *testing.T) {
	o := mustOverrides(t, `[
		{"network": "10.0.0.0/8", "city": "eight"},
		{"network": "10.1.0.0/16", "city": "sixteen"},
		{"network": "10.1.2.0/24", "city": "twenty-four"},
		{"network": "10.1.2.3/32", "city": "thirty-two"},
		{"network": "10.3.0.0/16", "city": "sibling"},
		{"network": "::ffff:192.168.0.0/112", "city": "mapped"},
		{"network": "0.0.0.0/0", "city": "all4"},
		{"network": "::/0", "city": "all6"},
		{"network": "2001:db8::/32", "city": "doc"},
		{"network": "2001:db8:1::/48", "city": "doc48"},
		{"network": "2001:db8:1::7/128", "city": "host"},
		{"network": "::1/128", "city": "loopback"}
	]`)
	for addr, want := range map[string]string{
		"10.200.0.1": "eight", "10.1.9.9": "sixteen", "10.1.2.9": "twenty-four", "10.1.2.3": "thirty-two",
		"10.1.2.4": "twenty-four", "10.3.255.255": "sibling", "10.2.0.0": "eight", "10.255.255.255": "eight",
		"192.168.7.7": "mapped", "::ffff:192.168.7.7": "mapped", "::ffff:10.1.2.3": "thirty-two",
		"8.8.8.8": "all4", "0.0.0.0": "all4", "255.255.255.255": "all4",
		"2001:db8::1": "doc", "2001:db8:1::8": "doc48", "2001:db8:1::7": "host", "2001:db8:2::": "doc",
		"::1": "loopback", "::2": "all6", "2a00::1": "all6",
	} {
		a, err := lookup.ParseAddr(addr)
		if err != nil {
			t.Fatal(err)
		}
		ov := o.lookup(a)
		if ov == nil || ov.loc.City != want {
			t.Errorf("%s: got %v, want %s", addr, ov, want)
		}
	}
	if o.Len() != 12 || o.Version() == "" {
		t.Fatalf("Len %d, Version %q", o.Len(), o.Version())
	}
}

// Without a /0, an address outside every prefix has no override; an empty table none.
func TestOverridesMiss(t *testing.T) {
	o := mustOverrides(t, `[{"network": "10.1.0.0/16", "city": "x"}, {"network": "2001:db8::/32", "city": "y"}]`)
	for _, s := range []string{"10.0.255.255", "10.2.0.0", "11.1.0.0", "2001:db9::", "2001:db7:ffff::", "::ffff:10.2.0.0"} {
		a, _ := lookup.ParseAddr(s)
		if ov := o.lookup(a); ov != nil {
			t.Errorf("%s matched %s", s, ov.network)
		}
	}
	empty := mustOverrides(t, `[]`)
	if empty.lookup(netip.MustParseAddr("10.1.0.0")) != nil || empty.Version() != "" || (*Overrides)(nil).lookup(netip.MustParseAddr("1.1.1.1")) != nil {
		t.Fatal("an empty table matched")
	}
}

// The table and the filter in front of it answer as a scan of every prefix does, for many
// random nested prefixes of both families (none so short that it turns the filter off).
func TestOverridesMatchAScan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[netip.Prefix]bool{}
	var ps []netip.Prefix
	var b strings.Builder
	b.WriteString("[")
	for len(ps) < 3000 {
		var p netip.Prefix
		if r.IntN(2) == 0 {
			// Few top bytes, so that prefixes nest and share the filter's slots.
			a := netip.AddrFrom4([4]byte{byte(r.IntN(4)), byte(r.IntN(4)), byte(r.IntN(256)), byte(r.IntN(256))})
			p = netip.PrefixFrom(a, 4+r.IntN(29)).Masked()
		} else {
			var a [16]byte
			a[0], a[1], a[2], a[3], a[4] = 0x20, 0x01, byte(r.IntN(3)), byte(r.IntN(3)), byte(r.IntN(256))
			p = netip.PrefixFrom(netip.AddrFrom16(a), 20+r.IntN(109)).Masked()
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		if len(ps) > 0 {
			b.WriteString(",")
		}
		ps = append(ps, p)
		fmt.Fprintf(&b, `{"network": %q, "city": %q}`, p, p)
	}
	b.WriteString("]")
	o := mustOverrides(t, b.String())
	if o.v4.all || o.v6.all {
		t.Fatal("the filter is off: the scan would not test it")
	}
	for range 20000 {
		var a netip.Addr
		if r.IntN(2) == 0 {
			a = netip.AddrFrom4([4]byte{byte(r.IntN(5)), byte(r.IntN(5)), byte(r.IntN(256)), byte(r.IntN(256))})
		} else {
			var x [16]byte
			x[0], x[1], x[2], x[3], x[4], x[5] = 0x20, 0x01, byte(r.IntN(4)), byte(r.IntN(4)), byte(r.IntN(256)), byte(r.IntN(256))
			a = netip.AddrFrom16(x)
		}
		want := ""
		bits := -1
		for _, p := range ps {
			if p.Contains(a) && p.Bits() > bits {
				want, bits = p.String(), p.Bits()
			}
		}
		got := ""
		if ov := o.lookup(a); ov != nil {
			got = ov.loc.City
		}
		if got != want {
			t.Fatalf("%s: got %q, want %q", a, got, want)
		}
	}
}

// A bad file is refused whole, with the entry it stumbled on named.
func TestOverridesRefused(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{`{"overrides": []}`, "JSON array"},
		{`[{"network": "10.0.0.0/33", "city": "x"}]`, "entry 0 (10.0.0.0/33): network"},
		{`[{"network": "10.0.0.0/8"}, {"network": "nope"}]`, "entry 1 (nope)"},
		{`[{"city": "x"}]`, `entry 0: "network" must be a CIDR`},
		{`[{"network": "10.0.0.0/8", "citty": "x"}]`, `entry 0 (10.0.0.0/8): unknown or fixed field "citty"`},
		{`[{"network": "10.0.0.0/8", "reserved": true}]`, `"reserved"`},
		{`[{"network": "10.0.0.0/8", "ip": "1.2.3.4"}]`, `"ip"`},
		{`[{"network": "10.0.0.0/8", "latitude": "north"}]`, "latitude: want a number"},
		{`[{"network": "10.0.0.0/8", "latitude": 91}]`, "latitude: want -90 to 90"},
		{`[{"network": "10.0.0.0/8", "in_eu": 1}]`, "in_eu: want true or false"},
		{`[{"network": "10.0.0.0/8", "country_population": 1.5}]`, "country_population: want an integer"},
		{`[{"network": "10.0.0.0/8", "city": 7}]`, "city: want a string"},
		{`[{"network": "10.0.0.0/8", "city": "` + strings.Repeat("x", 300) + `"}]`, "at most 256 bytes"},
		{`[{"network": "10.0.0.0/8", "timezone": "Mars/Olympus"}]`, "not an IANA time zone"},
		{`[{"network": "10.0.0.0/8", "utc_offset": "1 hour"}]`, "utc_offset"},
		{`[{"network": "10.0.0.1/8"}, {"network": "10.0.0.0/8"}]`, "entry 1 (10.0.0.0/8): the same network as entry 0"},
		{`[{"network": "fe80::1%eth0/64"}]`, "zone"},
		{`[{"network": "10.0.0.0/8"}`, "overrides:"},
		{`[] []`, "text after the array"},
		{`[{"network": "10.0.0.0/8"}, 5]`, "entry 1"},
	} {
		_, err := ParseOverrides([]byte(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.60s: got %v, want an error with %q", c.text, err, c.want)
		}
	}
}

// What one file can make the server hold is bounded: its size and its entries.
func TestOverridesBounded(t *testing.T) {
	if _, err := ParseOverrides(bytes.Repeat([]byte(" "), MaxOverridesSize+1)); err == nil || !strings.Contains(err.Error(), "bytes") {
		t.Fatalf("an oversized file: %v", err)
	}
	var b bytes.Buffer
	b.WriteString("[")
	for i := range MaxOverrides + 1 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"network":"%d.%d.%d.0/24"}`, 1+i>>16, i>>8&255, i&255)
	}
	b.WriteString("]")
	if _, err := ParseOverrides(b.Bytes()); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d entries", MaxOverrides)) {
		t.Fatalf("too many entries: %v", err)
	}
}

// An override is consulted before the reserved ranges and the database: its fields
// replace the record's (a new country brings its facts), in JSON and in records alike,
// and a swap changes the answers and their ETags at once, cached or not.
func TestEngineOverrides(t *testing.T) {
	db := testdb.EmbeddedSample(t)
	e := New(db, Options{})
	public, private := netip.MustParseAddr("8.8.8.8"), netip.MustParseAddr("10.1.2.3")
	before, beforeTag, _, err := e.Answer(public)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // cached
		e.Answer(public)
	}
	e.SetOverrides(mustOverrides(t, `[
		{"network": "10.1.0.0/16", "country": "DE", "city": "Office", "latitude": 48.1, "longitude": 11.5, "timezone": "Europe/Berlin"},
		{"network": "8.8.8.0/24", "city": "Local name", "org": "Ours"}
	]`))
	body, tag, version, err := e.Answer(private)
	if err != nil {
		t.Fatal(err)
	}
	var got Location
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.Reserved || got.Error || got.City != "Office" || got.CountryName != "Germany" || got.CountryCode != "DE" ||
		got.InEU != true || got.Network != "10.1.0.0/16" || got.Timezone != "Europe/Berlin" || got.UTCOffset == "" || got.IP != "10.1.2.3" {
		t.Fatalf("overridden private address: %s", body)
	}
	if !strings.Contains(version, "+o") || tag != ETag(version, body) {
		t.Fatalf("version %q, ETag %s", version, tag)
	}
	rec, rversion, err := e.Record(private)
	if err != nil || rversion != version || formatsOf(t, &rec) != formatsOf(t, &got) {
		t.Fatalf("record %+v %q %v", rec, rversion, err)
	}

	var dbLoc, ovLoc Location
	json.Unmarshal(before, &dbLoc)
	after, afterTag, _, _ := e.Answer(public)
	json.Unmarshal(after, &ovLoc)
	if ovLoc.City != "Local name" || ovLoc.Org != "Ours" || ovLoc.Country != dbLoc.Country || ovLoc.Latitude != dbLoc.Latitude || ovLoc.Network != "8.8.8.0/24" {
		t.Fatalf("overridden public address:\n%s\nfrom\n%s", after, before)
	}
	if afterTag == beforeTag {
		t.Fatal("the ETag did not change")
	}

	// An edit: the new table's answers, with a new ETag; removing it brings the
	// database's answer back, cached or not.
	e.SetOverrides(mustOverrides(t, `[{"network": "8.8.8.0/24", "city": "Renamed"}]`))
	edited, editedTag, _, _ := e.Answer(public)
	if !bytes.Contains(edited, []byte(`"city":"Renamed"`)) || editedTag == afterTag {
		t.Fatalf("after an edit: %s %s", edited, editedTag)
	}
	if body, _, _, _ := e.Answer(private); !bytes.Contains(body, []byte(`"reserved":true`)) {
		t.Fatalf("an override removed still answers: %s", body)
	}
	e.SetOverrides(nil)
	for range 3 {
		again, againTag, _, _ := e.Answer(public)
		if !bytes.Equal(again, before) || againTag != beforeTag {
			t.Fatalf("without overrides:\n%s\nwant\n%s", again, before)
		}
	}
}

// nonMatching is a table of n IPv4 /24s spread over the whole space, and addresses that
// none holds.
func nonMatching(tb testing.TB, n int) (*Overrides, []netip.Addr) {
	r := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	b.WriteString("[")
	seen := map[[3]byte]bool{}
	for len(seen) < n {
		k := [3]byte{byte(1 + r.IntN(222)), byte(r.IntN(256)), byte(r.IntN(256))}
		if seen[k] {
			continue
		}
		if len(seen) > 0 {
			b.WriteString(",")
		}
		seen[k] = true
		fmt.Fprintf(&b, `{"network":"%d.%d.%d.0/24","city":"x"}`, k[0], k[1], k[2])
	}
	b.WriteString("]")
	o := mustOverrides(tb, b.String())
	var addrs []netip.Addr
	for _, s := range []string{"8.8.8.8", "1.1.1.1", "81.2.69.160", "5.6.7.8", "41.1.1.1", "200.1.1.1", "2001:4860:4860::8888", "2a00:1450:4001::1"} {
		a := netip.MustParseAddr(s)
		if o.lookup(a) == nil {
			addrs = append(addrs, a)
		}
	}
	for len(addrs) < 1024 {
		a := netip.AddrFrom4([4]byte{byte(1 + r.IntN(222)), byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))})
		if o.lookup(a) == nil && !isReserved(a) {
			addrs = append(addrs, a)
		}
	}
	return o, addrs
}

// BenchmarkNonMatchingOverrides answers addresses no override holds, with no table and
// with 10,000 networks, side by side: cached answers (hot addresses) and uncached ones.
func BenchmarkNonMatchingOverrides(b *testing.B) {
	db := testdb.EmbeddedSample(b)
	big, addrs := nonMatching(b, 10_000)
	for _, cached := range []bool{true, false} {
		for _, c := range []struct {
			name string
			o    *Overrides
		}{{"0", nil}, {"10000", big}} {
			size := 0
			if !cached {
				size = -1
			}
			name := fmt.Sprintf("cached=%t/overrides=%s", cached, c.name)
			b.Run(name, func(b *testing.B) {
				e := New(db, Options{CacheSize: size})
				e.SetOverrides(c.o)
				for _, a := range addrs { // twice: admitted, then cached
					e.Answer(a)
					e.Answer(a)
				}
				i := 0
				for b.Loop() {
					if _, _, _, err := e.Answer(addrs[i&1023]); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

// BenchmarkOverridesLookup is the cost a table adds to an answer no override holds: the
// lookup alone, with no table and with 10,000 networks.
func BenchmarkOverridesLookup(b *testing.B) {
	big, addrs := nonMatching(b, 10_000)
	for _, c := range []struct {
		name string
		o    *Overrides
	}{{"0", nil}, {"10000", big}} {
		b.Run("overrides="+c.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				if c.o.lookup(addrs[i&1023]) != nil {
					b.Fatal("matched")
				}
				i++
			}
		})
	}
}
