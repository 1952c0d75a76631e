package answer

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"unicode/utf8"

	"gopkg.in/yaml.v2"

	"github.com/apistack/platform/services/geoip/internal/lookup"
)

var awkward = []string{
	"", "plain", `quote " and backslash \`, "new\nline\ttab\rcr", "\x00\x01\x1f control", "<script>&amp;",
	"Zürich", "東京", "emoji 😀", "bad utf-8 \xff\xfe end", "line sep \u2028 para sep \u2029", "no", "01234", "- dash", "a: b", "#hash",
}

func awkwardLocation(s string) Location {
	return Location{IP: "2001:db8::1", Version: "IPv6", City: s, Region: s, Country: "DE", CountryName: s,
		ContinentCode: "EU", InEU: true, Postal: s, Latitude: -33.8688, Longitude: 151.209, Timezone: s, UTCOffset: "+1000",
		Reserved: s == "", Error: s == "", Reason: s}
}

// The hand-written encoder must say what encoding/json says.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	for _, s := range awkward {
		loc := awkwardLocation(s)
		got := appendJSON(nil, &loc)
		std, err := json.Marshal(loc)
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("%q: invalid JSON %s: %v", s, got, err)
		}
		_ = json.Unmarshal(std, &b)
		ga, _ := json.Marshal(a)
		gb, _ := json.Marshal(b)
		if !bytes.Equal(ga, gb) {
			t.Errorf("%q:\n got %s\nwant %s", s, got, std)
		}
		// Same key order as the struct, so the answer reads like ipapi.co's.
		if !strings.HasPrefix(string(got), `{"ip":"2001:db8::1","network":"","version":"IPv6","city":`) {
			t.Errorf("key order: %s", got)
		}
		if bytes.ContainsRune(got, '\u2028') || bytes.ContainsRune(got, '\u2029') {
			t.Errorf("raw U+2028/U+2029 would break JSONP in older engines: %q", got)
		}
	}
}

func TestYAMLReadsBackUnchanged(t *testing.T) {
	for _, s := range awkward {
		if !utf8.ValidString(s) {
			continue // yaml.v2 refuses invalid UTF-8 in the document itself; JSON escaping makes it U+FFFD anyway
		}
		loc := awkwardLocation(s)
		var m map[string]any
		if err := yaml.Unmarshal(AppendYAML(nil, &loc), &m); err != nil {
			t.Fatalf("%q: %v\n%s", s, err, AppendYAML(nil, &loc))
		}
		if m["city"] != s || m["postal"] != s || m["latitude"] != -33.8688 || m["in_eu"] != true || m["ip"] != "2001:db8::1" {
			t.Errorf("%q read back as %#v", s, m)
		}
	}
}

func TestXMLReadsBackUnchanged(t *testing.T) {
	type root struct {
		XMLName xml.Name `xml:"root"`
		IP      string   `xml:"ip"`
		City    string   `xml:"city"`
		InEU    bool     `xml:"in_eu"`
		Lat     float64  `xml:"latitude"`
	}
	for _, s := range []string{"plain", `quote " and <tag> & amp`, "Zürich", "東京"} {
		loc := awkwardLocation(s)
		var r root
		if err := xml.Unmarshal(AppendXML(nil, &loc), &r); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if r.City != s || r.IP != "2001:db8::1" || !r.InEU || r.Lat != -33.8688 {
			t.Errorf("%q read back as %+v", s, r)
		}
	}
}

func TestCSVReadsBackUnchanged(t *testing.T) {
	for _, s := range []string{"plain", `quote " and, comma`, "new\nline", "Zürich"} {
		loc := awkwardLocation(s)
		b, err := AppendCSV(nil, &loc)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		if err != nil || len(recs) != 2 || len(recs[0]) != len(recs[1]) {
			t.Fatalf("%q: %v %q", s, err, recs)
		}
		row := map[string]string{}
		for i, k := range recs[0] {
			row[k] = recs[1][i]
		}
		if row["city"] != s || row["latitude"] != "-33.8688" || row["in_eu"] != "true" {
			t.Errorf("%q read back as %v", s, row)
		}
	}
}

func TestIsReserved(t *testing.T) {
	reserved := []string{"0.0.0.0", "0.1.2.3", "10.0.0.1", "100.64.0.1", "127.0.0.1", "169.254.0.1", "172.16.0.1",
		"192.0.0.8", "192.0.2.1", "192.88.99.1", "192.168.1.1", "198.18.0.1", "198.51.100.1", "203.0.113.1", "224.0.0.1",
		"239.255.255.250", "240.0.0.1", "255.255.255.255",
		"::", "::1", "::ffff:0:0", "64:ff9b::808:808", "100::1", "2001:2::1", "2001:db8::1", "2002:a00::1", "2002:c0a8:101::1",
		"3fff::1", "5f00::1", "fc00::1", "fd00::1", "fe80::1", "fec0::1", "ff02::1"}
	public := []string{"1.1.1.1", "8.8.8.8", "81.2.69.142", "100.63.255.255", "100.128.0.0", "172.32.0.1", "192.0.3.1",
		"223.255.255.255", "2001:4860:4860::8888", "2606:4700::1111", "2a00:1450::1", "2c0f:fb50::1", "2002:808:808::1"}
	for _, s := range reserved {
		if !isReserved(netip.MustParseAddr(s).Unmap()) {
			t.Errorf("%s not reserved", s)
		}
	}
	for _, s := range public {
		if isReserved(netip.MustParseAddr(s)) {
			t.Errorf("%s reserved", s)
		}
	}
}

// teredo is the Teredo address (RFC 4380) of a client behind NAT at client, through the
// server 65.54.227.120 (RFC 4380's example): the client's address and port are inverted.
func teredo(client string) netip.Addr {
	c := netip.MustParseAddr(client).As4()
	return netip.AddrFrom16([16]byte{0x20, 0x01, 0, 0, 65, 54, 227, 120, 0x80, 0, 0x63, 0xbf, ^c[0], ^c[1], ^c[2], ^c[3]})
}

// TestTunnelledAddressesAreReservedAsTheirIPv4: a 6to4 or Teredo address carrying a private,
// loopback or otherwise reserved IPv4 address is reserved; one carrying a public address is
// looked up.
func TestTunnelledAddressesAreReservedAsTheirIPv4(t *testing.T) {
	if got := teredo("192.0.2.45"); got != netip.MustParseAddr("2001:0:4136:e378:8000:63bf:3fff:fdd2") {
		t.Fatalf("teredo(192.0.2.45) = %s, not RFC 4380's example", got)
	}
	for _, tc := range []struct {
		addr     netip.Addr
		reserved bool
	}{
		{teredo("192.168.1.1"), true},
		{teredo("10.0.0.1"), true},
		{teredo("172.16.5.4"), true},
		{teredo("127.0.0.1"), true},
		{teredo("169.254.0.1"), true},
		{teredo("100.64.0.1"), true},
		{teredo("192.0.2.45"), true}, // documentation
		{teredo("0.0.0.0"), true},
		{teredo("8.8.8.8"), false},
		{teredo("81.2.69.142"), false},
		{netip.MustParseAddr("2001:0:4136:e378:8000:63bf:0:0"), true}, // 255.255.255.255
		{netip.MustParseAddr("2002:6440:1::1"), true},                 // 6to4 of 100.64.0.1
		{netip.MustParseAddr("2002:a9fe:101::1"), true},               // 6to4 of 169.254.1.1
		{netip.MustParseAddr("2002:7f00:1::1"), true},                 // 6to4 of 127.0.0.1
		{netip.MustParseAddr("2002:5102:458e::1"), false},             // 6to4 of 81.2.69.142
		{netip.MustParseAddr("2001:1::1"), false},                     // outside Teredo's /32
	} {
		if got := isReserved(tc.addr); got != tc.reserved {
			t.Errorf("isReserved(%s) = %v, want %v", tc.addr, got, tc.reserved)
		}
	}
}

// TestCountryFragmentsMatchTheFieldEncoder: the country's keys copied from countryTable are
// the bytes the per-field encoder writes, for every country the table knows, around
// records of every shape.
func TestCountryFragmentsMatchTheFieldEncoder(t *testing.T) {
	countries := 0
	for a := byte('A'); a <= 'Z'; a++ {
		for b := byte('A'); b <= 'Z'; b++ {
			code := string([]byte{a, b})
			for i, s := range awkward {
				rec := lookup.Record{Country: code, CountryName: s, Region: s, City: s, Postal: s, TimeZone: s,
					UTCOffset: "+0100", Org: s, ASN: uint32(i), Latitude: -33.8688, Longitude: 151.209, HasLocation: i%2 == 0,
					Network: netip.MustParsePrefix("81.2.69.0/24")}
				loc, _ := newLocation(netip.MustParseAddr("81.2.69.160"), rec, nil)
				if loc.facts == nil {
					if countryFragments(code) != nil {
						t.Fatalf("%s: newLocation left out the country's fragments", code)
					}
					continue
				}
				if i == 0 {
					countries++
				}
				got := appendJSON(nil, &loc)
				plain := loc
				plain.facts = nil
				if want := appendJSON(nil, &plain); !bytes.Equal(got, want) {
					t.Fatalf("%s, %q:\n got %s\nwant %s", code, s, got, want)
				}
			}
		}
	}
	if countries < 240 {
		t.Errorf("only %d countries have fragments", countries)
	}
}

// isReservedReference is isReserved as it was before it split the prefixes by family: every
// predicate and every prefix tried in turn.
func isReservedReference(addr netip.Addr) bool {
	if addr.IsPrivate() || addr.IsLoopback() || addr.IsLinkLocalUnicast() || addr.IsMulticast() ||
		addr.IsUnspecified() || addr.IsLinkLocalMulticast() || addr.IsInterfaceLocalMulticast() {
		return true
	}
	if addr.Is6() && !globalUnicast6.Contains(addr) {
		return true
	}
	if v4, _, ok := lookup.TunnelledIPv4(addr); ok && addr.Is6() {
		return isReservedReference(v4)
	}
	for _, p := range reservedPrefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// TestIsReservedMatchesTheReference: the same answer as trying every predicate and prefix,
// at every prefix's edges and on random addresses of both families.
func TestIsReservedMatchesTheReference(t *testing.T) {
	var addrs []netip.Addr
	for _, p := range append(reservedPrefixes, netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("172.16.0.0/12"),
		netip.MustParsePrefix("192.168.0.0/16"), netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("169.254.0.0/16"),
		netip.MustParsePrefix("224.0.0.0/4"), globalUnicast6, netip.MustParsePrefix("2002::/16"), netip.MustParsePrefix("2001::/32")) {
		first := p.Masked().Addr()
		last := first
		for range 1 << min(p.Addr().BitLen()-p.Bits(), 16) { // walk to the end of small prefixes
			if n := last.Next(); n.IsValid() && p.Contains(n) {
				last = n
			}
		}
		addrs = append(addrs, first, first.Prev(), first.Next(), last, last.Next())
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 500000 {
		addrs = append(addrs, netip.AddrFrom4([4]byte{byte(r.UintN(256)), byte(r.UintN(256)), byte(r.UintN(256)), byte(r.UintN(256))}))
		var b [16]byte
		for j := range b {
			b[j] = byte(r.UintN(256))
		}
		b[0] &= 0x3f // mostly 0000::/2, where the global unicast space and the reserved ranges are
		addrs = append(addrs, netip.AddrFrom16(b))
		b[0], b[1], b[2], b[3] = 0x20, 0x01, 0, 0 // Teredo
		addrs = append(addrs, netip.AddrFrom16(b))
		b[1] = 0x02 // 6to4
		addrs = append(addrs, netip.AddrFrom16(b))
	}
	for _, a := range addrs {
		if !a.IsValid() {
			continue
		}
		if got, want := isReserved(a), isReservedReference(a); got != want {
			t.Fatalf("isReserved(%s) = %v, want %v", a, got, want)
		}
	}
}
