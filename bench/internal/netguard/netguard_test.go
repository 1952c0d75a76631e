package netguard

import (
	"net/http"
	"net/http/httptest"
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
