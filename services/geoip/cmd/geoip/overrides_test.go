package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// GEOIP_OVERRIDES through the real binary: an overridden private network answers its
// fields in every format instead of reserved; an edit is picked up by the watcher and by
// SIGHUP with a new ETag; a refused file keeps the table serving; a bad file at start
// stops the start.
func TestOverridesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "overrides.json")
	writeAtomically(t, path, []byte(`[{"network": "10.20.0.0/16", "city": "Head Office", "country": "NL", "latitude": 52.37, "longitude": 4.89}]`))
	p := startGeoip(t, map[string]string{"GEOIP_OVERRIDES": path, "GEOIP_WATCH_INTERVAL": "50ms", "RATE_LIMIT_MAX": "100000"})
	get := func(path string) (string, string) {
		t.Helper()
		res, err := http.Get(p.Base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s %s", path, res.Status, b)
		}
		return string(b), res.Header.Get("ETag")
	}
	body, etag := get("/10.20.1.2/json/")
	if strings.Contains(body, "reserved") || !strings.Contains(body, `"city":"Head Office"`) || !strings.Contains(body, `"country_name":"Netherlands"`) || !strings.Contains(body, `"network":"10.20.0.0/16"`) {
		t.Fatalf("/10.20.1.2/json/ = %s", body)
	}
	for path, want := range map[string]string{
		"/10.20.1.2/city/":    "Head Office",
		"/10.20.1.2/country/": "NL",
		"/10.20.1.2/csv/":     "Head Office",
		"/10.20.1.2/xml/":     "<city>Head Office</city>",
		"/10.20.1.2/yaml/":    "Head Office",
		"/10.21.1.2/json/":    `"reserved":true`,
	} {
		if got, _ := get(path); !strings.Contains(got, want) {
			t.Errorf("%s = %s, want %q in it", path, got, want)
		}
	}
	if doc, _ := get("/openapi.json"); !strings.Contains(doc, "GEOIP_OVERRIDES") {
		t.Error("/docs does not say how to override")
	}
	res, err := http.Post(p.Base+"/batch", "application/json", strings.NewReader(`["10.20.9.9", "10.21.0.1"]`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(b), "Head Office") {
		t.Errorf("batch: %s %s", res.Status, b)
	}

	waitFor := func(what, path, want string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if got, _ := get(path); strings.Contains(got, want) {
				return
			}
		}
		got, _ := get(path)
		t.Fatalf("%s: %s = %s, want %q in it", what, path, got, want)
	}
	// An edit, picked up by the watcher: a new answer and a new ETag, never the cached one.
	writeAtomically(t, path, []byte(`[{"network": "10.20.0.0/16", "city": "New Office"}]`))
	waitFor("watcher", "/10.20.1.2/json/", `"city":"New Office"`)
	if _, etag2 := get("/10.20.1.2/json/"); etag2 == etag || etag2 == "" {
		t.Fatalf("ETag %s after an edit, %s before", etag2, etag)
	}

	// A refused file is logged, and the table serving stays.
	writeAtomically(t, path, []byte(`[{"network": "10.20.0.0/16", "city": "Broken"}, {"network": "10.300.0.0/16"}]`))
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(p.Logs.String(), "overrides refused"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal logged:\n%s", p.Logs.String())
		}
	}
	if !strings.Contains(p.Logs.String(), "entry 1 (10.300.0.0/16)") {
		t.Errorf("the refusal does not name the entry:\n%s", grepLines(p.Logs.String(), "overrides"))
	}
	if got, _ := get("/10.20.1.2/city/"); got != "New Office" {
		t.Fatalf("after a refused file: %q", got)
	}

	// SIGHUP reloads at once, with no interval to wait (the watcher may have done it too).
	writeAtomically(t, path, []byte(`[{"network": "10.20.0.0/16", "city": "Signalled"}]`))
	if err := p.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor("SIGHUP", "/10.20.1.2/city/", "Signalled")
}

// A bad overrides file stops the start, naming the variable and the entry.
func TestOverridesFileRefusedAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "overrides.json")
	if err := os.WriteFile(path, []byte(`[{"network": "10.0.0.0/8", "citty": "x"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"GEOIP_OVERRIDES": path, "PORT": "0", "HOST": "127.0.0.1"}
	_, err := build(envOf(env), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "GEOIP_OVERRIDES") || !strings.Contains(err.Error(), `entry 0 (10.0.0.0/8): unknown or fixed field "citty"`) {
		t.Fatalf("build: %v", err)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
