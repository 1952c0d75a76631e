package clientip

import (
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestParseSet(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string // canonical String(), when no error
		wantErr string // substring of the error; must name the bad entry
	}{
		{name: "empty trusts nobody", in: "", want: ""},
		{name: "blanks skipped", in: " , ,", want: ""},
		{name: "bare IPv4", in: "10.0.0.1", want: "10.0.0.1"},
		{name: "CIDR masked", in: "10.1.2.3/8", want: "10.0.0.0/8"},
		{name: "list with spaces", in: " 10.0.0.0/8 , 192.168.1.1,2001:db8::/32 ", want: "10.0.0.0/8,192.168.1.1,2001:db8::/32"},
		{name: "mapped IPv6 unmapped", in: "::ffff:10.0.0.1", want: "10.0.0.1"},
		{name: "mapped CIDR unmapped", in: "::ffff:10.0.0.0/104", want: "10.0.0.0/8"},
		{name: "mapped CIDR too wide", in: "::ffff:0:0/80", wantErr: `"::ffff:0:0/80"`},
		{name: "garbage", in: "10.0.0.1,localhost", wantErr: `"localhost"`},
		{name: "bad CIDR bits", in: "10.0.0.0/33", wantErr: `"10.0.0.0/33"`},
		{name: "bad CIDR addr", in: "10.0.0/8", wantErr: `"10.0.0/8"`},
		{name: "zone rejected", in: "fe80::1%eth0", wantErr: `"fe80::1%eth0"`},
		{name: "port rejected", in: "10.0.0.1:80", wantErr: `"10.0.0.1:80"`},
		{name: "hostname rejected", in: "proxy.internal", wantErr: `"proxy.internal"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseSet(tt.in)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseSet(%q) = %v, want error containing %s", tt.in, s, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseSet(%q) error %q does not name %s", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSet(%q): %v", tt.in, err)
			}
			if got := s.String(); got != tt.want {
				t.Fatalf("ParseSet(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSetContains(t *testing.T) {
	s := MustParseSet("10.0.0.0/8,192.168.1.1,2001:db8::/32,fe80::/10")
	tests := []struct {
		addr string
		want bool
	}{
		{"10.255.0.1", true},
		{"11.0.0.1", false},
		{"192.168.1.1", true},
		{"192.168.1.2", false},
		{"::ffff:10.0.0.1", true}, // mapped form of a listed IPv4
		{"2001:db8::1", true},
		{"2001:db9::1", false},
		{"fe80::1%eth0", true}, // zone ignored
		{"127.0.0.1", false},
		{"::1", false},
	}
	for _, tt := range tests {
		if got := s.Contains(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("Contains(%s) = %v, want %v", tt.addr, got, tt.want)
		}
	}
	if s.Contains(netip.Addr{}) {
		t.Error("Contains(zero Addr) = true, want false")
	}
	if (Set{}).Contains(netip.MustParseAddr("10.0.0.1")) {
		t.Error("zero Set contains an address")
	}
}

func TestResolve(t *testing.T) {
	// 10.0.0.0/8 is the proxies' network; 203.0.113.0/24 and 2001:db8::/32
	// are clients on the internet.
	r, err := NewResolver([]string{"10.0.0.0/8", "fd00::/8"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		remote string
		xff    []string
		want   string
	}{
		{name: "direct client, no header", remote: "203.0.113.7:5555", want: "203.0.113.7"},
		{name: "forged header from untrusted peer ignored", remote: "203.0.113.7:5555", xff: []string{"1.2.3.4"}, want: "203.0.113.7"},
		{name: "forged loopback from untrusted peer ignored", remote: "203.0.113.7:5555", xff: []string{"127.0.0.1"}, want: "203.0.113.7"},
		{name: "trusted proxy gives the real client", remote: "10.0.0.2:40000", xff: []string{"203.0.113.7"}, want: "203.0.113.7"},
		{name: "trusted proxy, no header: the proxy itself", remote: "10.0.0.2:40000", want: "10.0.0.2"},
		{name: "client forges a prefix, proxy appends the truth", remote: "10.0.0.2:40000", xff: []string{"127.0.0.1, 203.0.113.7"}, want: "203.0.113.7"},
		{name: "two trusted proxies", remote: "10.0.0.2:40000", xff: []string{"198.51.100.9, 203.0.113.7, 10.0.0.3"}, want: "203.0.113.7"},
		{name: "several header lines read as one list", remote: "10.0.0.2:40000", xff: []string{"198.51.100.9", "203.0.113.7, 10.0.0.3", "10.0.0.4"}, want: "203.0.113.7"},
		{name: "all hops trusted: left-most", remote: "10.0.0.2:40000", xff: []string{"10.0.0.5, 10.0.0.4"}, want: "10.0.0.5"},
		{name: "whitespace and empty elements", remote: "10.0.0.2:40000", xff: []string{" ,\t203.0.113.7 ,, 10.0.0.3 , "}, want: "203.0.113.7"},
		{name: "empty header line", remote: "10.0.0.2:40000", xff: []string{""}, want: "10.0.0.2"},
		{name: "garbage right after proxy stops at proxy", remote: "10.0.0.2:40000", xff: []string{"203.0.113.7, unknown"}, want: "10.0.0.2"},
		{name: "garbage behind second proxy stops at that proxy", remote: "10.0.0.2:40000", xff: []string{"203.0.113.7, not-an-ip, 10.0.0.3"}, want: "10.0.0.3"},
		{name: "garbage left of client is never reached", remote: "10.0.0.2:40000", xff: []string{"<script>, 203.0.113.7"}, want: "203.0.113.7"},
		{name: "hostname is garbage", remote: "10.0.0.2:40000", xff: []string{"evil.example"}, want: "10.0.0.2"},
		{name: "obfuscated node name is garbage", remote: "10.0.0.2:40000", xff: []string{"_hidden"}, want: "10.0.0.2"},
		{name: "entry with port", remote: "10.0.0.2:40000", xff: []string{"203.0.113.7:1234"}, want: "203.0.113.7"},
		{name: "bracketed IPv6 with port", remote: "10.0.0.2:40000", xff: []string{"[2001:db8::7]:1234"}, want: "2001:db8::7"},
		{name: "bracketed IPv6 without port", remote: "10.0.0.2:40000", xff: []string{"[2001:db8::7]"}, want: "2001:db8::7"},
		{name: "zone in header is garbage", remote: "10.0.0.2:40000", xff: []string{"fe80::1%eth0"}, want: "10.0.0.2"},
		{name: "IPv6 client through IPv6 proxy", remote: "[fd00::2]:40000", xff: []string{"2001:db8::7"}, want: "2001:db8::7"},
		{name: "IPv6 peer untrusted", remote: "[2001:db8::1]:40000", xff: []string{"203.0.113.7"}, want: "2001:db8::1"},
		{name: "mapped peer unmapped and trusted", remote: "[::ffff:10.0.0.2]:40000", xff: []string{"203.0.113.7"}, want: "203.0.113.7"},
		{name: "mapped header entry unmapped", remote: "10.0.0.2:40000", xff: []string{"::ffff:203.0.113.7"}, want: "203.0.113.7"},
		{name: "mapped untrusted peer unmapped", remote: "[::ffff:203.0.113.7]:1", want: "203.0.113.7"},
		{name: "zoned peer loses zone", remote: "[fe80::1%eth0]:1", want: "fe80::1"},
		{name: "bare peer address", remote: "203.0.113.7", want: "203.0.113.7"},
		{name: "unparseable peer", remote: "@", xff: []string{"203.0.113.7"}, want: "invalid IP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.Resolve(tt.remote, tt.xff); got.String() != tt.want {
				t.Fatalf("Resolve(%q, %q) = %s, want %s", tt.remote, tt.xff, got, tt.want)
			}
		})
	}
}

func TestResolveTrustsNobodyByDefault(t *testing.T) {
	r, err := NewResolver(nil)
	if err != nil {
		t.Fatal(err)
	}
	got := r.Resolve("127.0.0.1:1", []string{"203.0.113.7"})
	if got.String() != "127.0.0.1" {
		t.Fatalf("empty trust list believed X-Forwarded-For: got %s", got)
	}
}

func TestNewResolverNamesBadEntry(t *testing.T) {
	_, err := NewResolver([]string{"10.0.0.0/8", "10.0.0.300"})
	if err == nil || !strings.Contains(err.Error(), `"10.0.0.300"`) {
		t.Fatalf("error %v does not name the bad entry", err)
	}
}

func TestResolveRequestReadsAllHeaderLines(t *testing.T) {
	r := NewResolverFromSet(MustParseSet("10.0.0.0/8"))
	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = "10.0.0.2:1234"
	req.Header.Add("X-Forwarded-For", "198.51.100.1")
	req.Header.Add("x-forwarded-for", "203.0.113.7, 10.0.0.9")
	if got := r.ResolveRequest(req); got.String() != "203.0.113.7" {
		t.Fatalf("ResolveRequest = %s, want 203.0.113.7", got)
	}
}

func FuzzParseSet(f *testing.F) {
	for _, s := range []string{"", "10.0.0.1", "10.0.0.0/8, 2001:db8::/32", "::ffff:10.0.0.0/104", "fe80::1%eth0", ",,", "1.2.3.4/33"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		s, err := ParseSet(list)
		if err != nil {
			if s.Len() != 0 {
				t.Fatalf("error with non-empty set: %v", err)
			}
			return
		}
		// The canonical form must parse back to the same set, so start-up
		// logs show exactly what is in effect.
		again, err := ParseSet(s.String())
		if err != nil {
			t.Fatalf("String() %q does not parse: %v", s.String(), err)
		}
		if again.String() != s.String() {
			t.Fatalf("round trip %q -> %q", s.String(), again.String())
		}
		for _, p := range s.Prefixes() {
			if p.Addr().Is4In6() || p.Addr().Zone() != "" || p != p.Masked() {
				t.Fatalf("entry %s is not canonical", p)
			}
			if !s.Contains(p.Addr()) {
				t.Fatalf("set does not contain its own entry %s", p)
			}
		}
	})
}

func FuzzResolve(f *testing.F) {
	f.Add("10.0.0.2:1", "203.0.113.7, 10.0.0.3")
	f.Add("203.0.113.7:1", "1.2.3.4")
	f.Add("[fd00::1]:1", "[2001:db8::1]:80,,garbage")
	r := NewResolverFromSet(MustParseSet("10.0.0.0/8,fd00::/8"))
	f.Fuzz(func(t *testing.T, remote, xff string) {
		got := r.Resolve(remote, []string{xff})
		peer := r.Resolve(remote, nil)
		if !got.IsValid() {
			if peer.IsValid() {
				t.Fatalf("valid peer %s but invalid result", peer)
			}
			return
		}
		if got.Is4In6() || got.Zone() != "" {
			t.Fatalf("result %s not normalized", got)
		}
		// An untrusted peer is always the answer, whatever the header says.
		if !r.Trusted().Contains(peer) && got != peer {
			t.Fatalf("untrusted peer %s, header %q moved the client to %s", peer, xff, got)
		}
		// The answer is the peer or something that appears in the header.
		if got != peer && !headerHas(xff, got) {
			t.Fatalf("result %s is neither the peer nor in %q", got, xff)
		}
	})
}

func headerHas(xff string, a netip.Addr) bool {
	for _, e := range strings.Split(xff, ",") {
		if h, ok := parseHop(strings.TrimSpace(e)); ok && h == a {
			return true
		}
	}
	return false
}
