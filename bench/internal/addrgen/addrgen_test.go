package addrgen

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

func TestNextGivesPublicAddressesInTheRequestedMix(t *testing.T) {
	g, err := New(42, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20000
	v6 := 0
	seen := map[netip.Addr]bool{}
	for i := 0; i < n; i++ {
		a := g.Next()
		seen[a] = true
		switch {
		case a.Is4():
			if !IsPublicV4(a) {
				t.Fatalf("non-public IPv4 %s", a)
			}
		case a.Is6():
			v6++
			if !IsPublicV6(a) {
				t.Fatalf("IPv6 %s outside registry blocks", a)
			}
			if a.Zone() != "" || a.Is4In6() {
				t.Fatalf("odd IPv6 %s", a)
			}
		}
	}
	if frac := float64(v6) / n; frac < 0.27 || frac > 0.33 {
		t.Errorf("IPv6 fraction %.3f, want about 0.30", frac)
	}
	if len(seen) < n*99/100 {
		t.Errorf("only %d distinct addresses out of %d", len(seen), n)
	}
}

func TestMixExtremes(t *testing.T) {
	for _, tc := range []struct {
		frac float64
		want func(netip.Addr) bool
	}{{0, netip.Addr.Is4}, {1, netip.Addr.Is6}} {
		g, _ := New(1, tc.frac)
		for i := 0; i < 1000; i++ {
			if a := g.Next(); !tc.want(a) {
				t.Fatalf("frac %v gave %s", tc.frac, a)
			}
		}
	}
	if _, err := New(1, 1.5); err == nil {
		t.Error("fraction 1.5 accepted")
	}
}

func TestIsPublicV4(t *testing.T) {
	cases := map[string]bool{
		"8.8.8.8": true, "1.1.1.1": true, "223.255.255.1": true,
		"10.1.2.3": false, "127.0.0.1": false, "192.168.1.1": false, "172.20.0.1": false,
		"100.64.0.1": false, "169.254.1.1": false, "224.0.0.1": false, "255.255.255.255": false,
		"198.51.100.7": false, "0.1.2.3": false,
	}
	for s, want := range cases {
		if got := IsPublicV4(netip.MustParseAddr(s)); got != want {
			t.Errorf("IsPublicV4(%s) = %v, want %v", s, got, want)
		}
	}
}

func TestTemplateFillsIPv4AndIPv6AsText(t *testing.T) {
	tpl, err := ParseTemplate("http://127.0.0.1:8080/{ip}/json/")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"8.8.4.4":           "http://127.0.0.1:8080/8.8.4.4/json/",
		"2a00:1450:4001::1": "http://127.0.0.1:8080/2a00:1450:4001::1/json/",
	}
	for ip, want := range cases {
		got := tpl.Fill(netip.MustParseAddr(ip))
		if got != want {
			t.Errorf("Fill(%s) = %q, want %q", ip, got, want)
		}
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("filled URL %q does not parse: %v", got, err)
		}
		if !strings.HasPrefix(u.Path, "/"+ip+"/") {
			t.Errorf("path %q does not carry %s", u.Path, ip)
		}
	}
	if _, err := ParseTemplate("http://x/{ip}/{ip}"); err == nil {
		t.Error("two placeholders accepted")
	}
	plain, _ := ParseTemplate("http://127.0.0.1/health")
	if plain.Fill(netip.MustParseAddr("1.2.3.4")) != "http://127.0.0.1/health" {
		t.Error("template without placeholder changed")
	}
}
