package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver/redistest"
)

const (
	acmeKey   = "k-acme-3f9a1c2b7d8e4f60"
	globexKey = "k-globex-0b1c2d3e4f5a6b7c"
)

type reply struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func call(t *testing.T, url string, header http.Header) reply {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	a := reply{status: res.StatusCode, header: res.Header, raw: string(b)}
	_ = json.Unmarshal(b, &a.body)
	return a
}

// TestAPIKeys through the real binary, two replicas on a real Redis: a key's limit is
// counted across them, apart from the anonymous per-address limit; errors are ipapi.co's
// body; /usage counts both replicas' lookups; the file is reloaded on an edit and on
// SIGHUP, a refused one keeps the keys serving; no key is ever logged.
func TestAPIKeys(t *testing.T) {
	rds := redistest.Start(t)
	path := filepath.Join(t.TempDir(), "keys.json")
	writeAtomically(t, path, []byte(`{"keys": [{"key": "`+acmeKey+`", "name": "acme", "limit": 6, "window": "1h"}]}`))
	env := map[string]string{"GEOIP_KEYS_FILE": path, "GEOIP_WATCH_INTERVAL": "50ms", "REDIS_URL": rds.URL(),
		"RATE_LIMIT_MAX": "3", "RATE_LIMIT_WINDOW": "1h",
		"TRUSTED_PROXIES": "127.0.0.1"} // the test speaks for several clients
	a, b := startGeoip(t, env), startGeoip(t, env)

	// The key's 6 across both replicas, by ?key= and by bearer.
	var codes []int
	for i := range 8 {
		base, h := a.Base, http.Header(nil)
		if i%2 == 1 {
			base, h = b.Base, http.Header{"Authorization": {"Bearer " + acmeKey}}
		}
		url := base + "/8.8.8.8/json/"
		if h == nil {
			url += "?key=" + acmeKey
		}
		r := call(t, url, h)
		codes = append(codes, r.status)
		if r.status == 200 && r.header.Get("RateLimit-Limit") != "6" {
			t.Errorf("keyed answer: RateLimit-Limit %q, want the key's 6", r.header.Get("RateLimit-Limit"))
		}
		if r.status == 429 {
			if r.body["error"] != true || r.body["reason"] != "RateLimited" || r.header.Get("Retry-After") == "" || r.body["statusCode"] != nil {
				t.Errorf("429 = %s, Retry-After %q; want ipapi.co's body", r.raw, r.header.Get("Retry-After"))
			}
		}
	}
	if want := "[200,200,200,200,200,200,429,429]"; fmtInts(codes) != want {
		t.Errorf("keyed lookups across two replicas: %v, want %s", codes, want)
	}
	// An unknown key is a 403 in ipapi.co's shape, spending the address's limit.
	from := func(addr string) http.Header { return http.Header{"X-Forwarded-For": {addr}} }
	if r := call(t, b.Base+"/json/?key=k-unknown-000000000000", from("203.0.113.2")); r.status != 403 || r.body["reason"] != "Invalid Key" || r.body["error"] != true {
		t.Errorf("unknown key: %d %s", r.status, r.raw)
	}
	// Anonymous callers keep their own limit (existing users see no change): that
	// address has 2 left.
	for i := range 3 {
		r := call(t, a.Base+"/8.8.8.8/country/", from("203.0.113.2"))
		want := 200
		if i == 2 {
			want = 429
		}
		if r.status != want {
			t.Fatalf("anonymous lookup %d: %d %s, want %d", i, r.status, r.raw, want)
		}
		if want == 429 && r.body["reason"] != "RateLimited" {
			t.Errorf("anonymous 429 = %s", r.raw)
		}
	}

	// Usage, both replicas' lookups, read on either.
	usage := func(base string) reply {
		t.Helper()
		var r reply
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if r = call(t, base+"/usage?key="+acmeKey, nil); r.status == 200 && r.body["requests"] == 6.0 && r.body["limited"] == 2.0 {
				break
			}
		}
		return r
	}
	r := usage(b.Base)
	if r.status != 200 || r.body["name"] != "acme" || r.body["requests"] != 6.0 || r.body["limited"] != 2.0 ||
		r.body["limit"] != 6.0 || r.body["window"] != "1h0m0s" || r.body["day"] != time.Now().UTC().Format(time.DateOnly) || r.header.Get("Cache-Control") != "no-store" {
		t.Errorf("/usage = %d %s", r.status, r.raw)
	}
	if r := call(t, a.Base+"/usage", nil); r.status != 401 {
		t.Errorf("/usage without a key: %d %s", r.status, r.raw)
	}

	// An edit adds a key (the watcher); a refused file keeps both; SIGHUP reloads at once.
	writeAtomically(t, path, []byte(`{"keys": [{"key": "`+acmeKey+`", "name": "acme", "limit": 6, "window": "1h"},
		{"key": "`+globexKey+`", "name": "globex", "limit": 100, "window": "1m"}]}`))
	waitStatus(t, a.Base+"/8.8.8.8/json/?key="+globexKey, "2001:db8:1::1", 200)
	writeAtomically(t, path, []byte(`{"keys": [{"key": "short", "name": "x", "limit": 1, "window": "1m"}]}`))
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(a.Logs.String(), "API keys refused"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal logged:\n%s", a.Logs.String())
		}
	}
	if r := call(t, a.Base+"/8.8.8.8/json/?key="+globexKey, nil); r.status != 200 {
		t.Errorf("after a refused file: %d %s", r.status, r.raw)
	}
	writeAtomically(t, path, []byte(`{"keys": [{"key": "`+acmeKey+`", "name": "acme", "limit": 6, "window": "1h"}]}`))
	if err := b.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, b.Base+"/8.8.8.8/json/?key="+globexKey, "2001:db8:2::1", 403)

	for _, p := range []*geoipProc{a, b} {
		logs := p.Logs.String()
		for _, k := range []string{acmeKey, globexKey, "k-unknown", "short"} {
			if strings.Contains(logs, k) {
				t.Errorf("a key is in the log: %q", k)
			}
		}
	}
}

func fmtInts(v []int) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// waitStatus polls until url answers want, as client (each poll with an unknown key
// spends the client's address limit).
func waitStatus(t *testing.T, url, client string, want int) {
	t.Helper()
	var r reply
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if r = call(t, url, http.Header{"X-Forwarded-For": {client}}); r.status == want {
			return
		}
	}
	t.Fatalf("%s: %d %s, want %d", strings.SplitN(url, "?", 2)[0], r.status, r.raw, want)
}

// A bad keys file stops the start, naming the variable and the entry, not the key.
func TestKeysFileRefusedAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(path, []byte(`{"keys": [{"key": "`+acmeKey+`", "name": "acme", "limit": 0, "window": "1m"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := build(envOf(map[string]string{"GEOIP_KEYS_FILE": path, "PORT": "0", "HOST": "127.0.0.1"}), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "GEOIP_KEYS_FILE") || !strings.Contains(err.Error(), `entry 1 ("acme"): limit`) || strings.Contains(err.Error(), acmeKey) {
		t.Fatalf("build: %v", err)
	}
}
