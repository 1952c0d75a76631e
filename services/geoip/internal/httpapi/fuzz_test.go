package httpapi

import (
	"encoding/json"
	"net/netip"
	"net/url"
	"testing"
)

// FuzzAddressInPath: whatever the first path segment holds, /{it}/json/ answers a record
// or a 400 (a 404 when it decodes to several segments), never a 5xx, and a record names
// the canonical form of a valid address.
func FuzzAddressInPath(f *testing.F) {
	for _, s := range []string{"8.8.8.8", "::1", "2a01:e0a::1", "fe80::1%eth0", "::ffff:81.2.69.1", "999.1.1.1",
		"1.2.3", "010.1.1.1", "", " ", "a/b", "[::1]", "1.2.3.4:80", "%", "\x00"} {
		f.Add(s)
	}
	s := newTestServer(f, newFixtureDB())
	f.Fuzz(func(t *testing.T, text string) {
		s.t = t
		path := "/" + url.PathEscape(text) + "/json/"
		w := s.get(path)
		switch w.Code {
		case 200:
			var got map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatalf("%s: 200 with invalid JSON: %v", path, err)
			}
			addr, err := netip.ParseAddr(text)
			if err != nil {
				t.Fatalf("%s: 200 for text that is not an address", path)
			}
			if got["ip"] != addr.Unmap().String() {
				t.Fatalf("%s: ip %v, want %s", path, got["ip"], addr.Unmap())
			}
		case 400, 404:
		default:
			t.Fatalf("%s: status %d: %s", path, w.Code, w.Body)
		}
	})
}
