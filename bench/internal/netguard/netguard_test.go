package netguard

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestCheckURLAcceptsOnlyLoopback(t *testing.T) {
	ok := []string{
		"http://127.0.0.1:8080/{ip}/json/",
		"http://[::1]:8080/x",
		"ws://127.0.0.2:9/",
		"http://localhost:80/",
	}
	for _, u := range ok {
		if _, err := CheckURL(u); err != nil {
			t.Errorf("CheckURL(%q) = %v, want ok", u, err)
		}
	}
	bad := []string{
		"http://10.0.0.1/",
		"http://8.8.8.8/",
		"http://[2001:db8::1]/",
		"http://example.com/",
		"ftp://127.0.0.1/",
		"127.0.0.1:80",
		"http:///nohost",
	}
	for _, u := range bad {
		if _, err := CheckURL(u); err == nil {
			t.Errorf("CheckURL(%q) accepted, want refusal", u)
		}
	}
}

func TestControlRefusesNonLoopbackPeers(t *testing.T) {
	if err := control("tcp", "127.0.0.1:80", nil); err != nil {
		t.Errorf("loopback refused: %v", err)
	}
	if err := control("tcp", "[::1]:80", nil); err != nil {
		t.Errorf("::1 refused: %v", err)
	}
	if err := control("tcp", "192.0.2.1:80", nil); err == nil {
		t.Error("non-loopback accepted")
	}
}

func TestTransportDialsLoopback(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	c := &http.Client{Transport: Transport(4)}
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func TestSourcesAreLoopbackInDistinctSlash24s(t *testing.T) {
	srcs, err := Sources(300)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[netip.Prefix]bool{}
	for _, a := range srcs {
		if !a.IsLoopback() {
			t.Fatalf("%s is not loopback", a)
		}
		p := netip.PrefixFrom(a, 24).Masked()
		if seen[p] {
			t.Fatalf("%s shares %s with an earlier source", a, p)
		}
		seen[p] = true
	}
	if _, err := Sources(0); err == nil {
		t.Error("0 sources accepted")
	}
}

func TestTransportFromDialsFromItsSource(t *testing.T) {
	srcs, _ := Sources(2)
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.RemoteAddr
	}))
	defer srv.Close()
	tr, err := TransportFrom(srcs[1], 1)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ap := netip.MustParseAddrPort(<-got)
	if ap.Addr() != srcs[1] {
		t.Fatalf("request came from %s, want %s", ap.Addr(), srcs[1])
	}
	if _, err := TransportFrom(netip.MustParseAddr("10.0.0.1"), 1); err == nil {
		t.Error("a non-loopback source accepted")
	}
}
