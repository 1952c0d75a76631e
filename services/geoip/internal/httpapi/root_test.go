package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The root names the endpoints, docs and health checks, with links relative to itself so
// that they work behind a prefix-stripping proxy (/geoip/ -> /geoip/docs).
func TestRootIndex(t *testing.T) {
	s := newTestServer(t, newFixtureDB())

	res := s.do(request{path: "/", header: http.Header{"Accept": {"*/*"}}})
	if res.Code != http.StatusOK {
		t.Fatalf("GET /: status %d: %s", res.Code, res.Body)
	}
	if ct := res.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("GET / with Accept */*: Content-Type %q, want JSON", ct)
	}
	var idx rootIndex
	if err := json.Unmarshal(res.Body.Bytes(), &idx); err != nil {
		t.Fatalf("GET /: %v: %s", err, res.Body)
	}

	// Every link works from the root, and behind a proxy it stays under the prefix.
	proxied, _ := url.Parse("http://localhost:8080/geoip/")
	for name, link := range map[string]string{"docs": idx.Docs, "openapi": idx.OpenAPI, "health": idx.Health, "ready": idx.Ready} {
		ref, err := url.Parse(link)
		if err != nil || ref.IsAbs() || strings.HasPrefix(link, "/") {
			t.Errorf("%s link %q must be relative to the page", name, link)
			continue
		}
		if got := proxied.ResolveReference(ref).Path; !strings.HasPrefix(got, "/geoip/") {
			t.Errorf("%s link %q resolves to %s behind the proxy, outside /geoip/", name, link, got)
		}
		direct := s.get("/" + strings.TrimPrefix(link, "./"))
		if direct.Code != http.StatusOK && direct.Code != http.StatusFound {
			t.Errorf("%s link %q: status %d", name, link, direct.Code)
		}
	}

	// The endpoint list is exactly the documented API: each one in openapi.json, and every
	// documented operation listed; the library's own routes are not endpoints.
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(s.get("/openapi.json").Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for p, ops := range doc.Paths {
		for m := range ops {
			documented[strings.ToUpper(m)+" "+p] = true
		}
	}
	listed := map[string]bool{}
	for _, e := range idx.Endpoints {
		listed[e] = true
		if !documented[e] {
			t.Errorf("listed endpoint %q is not in openapi.json", e)
		}
	}
	for e := range documented {
		if !listed[e] {
			t.Errorf("documented endpoint %q is not listed", e)
		}
	}
	for _, want := range []string{"GET /{ip}/json/", "GET /json/", "POST /batch"} {
		if !listed[want] {
			t.Errorf("endpoint %q missing from %v", want, idx.Endpoints)
		}
	}
	for _, e := range idx.Endpoints {
		if strings.Contains(e, "metrics") || strings.Contains(e, "healthz") || strings.HasSuffix(e, " /") {
			t.Errorf("built-in route %q listed as an endpoint", e)
		}
	}
}

func TestRootIndexHTMLForBrowsers(t *testing.T) {
	s := newTestServer(t, newFixtureDB())
	res := s.do(request{path: "/", header: http.Header{"Accept": {"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}}})
	if res.Code != http.StatusOK {
		t.Fatalf("status %d", res.Code)
	}
	if ct := res.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("Content-Type %q, want text/html", ct)
	}
	body := res.Body.String()
	for _, want := range []string{`href="./docs"`, `href="./healthz"`, `href="./readyz"`, "<code>GET /{ip}/json/</code>"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s:\n%s", want, body)
		}
	}
	if strings.Contains(body, "metrics") {
		t.Errorf("page links /metrics, which is for the internal scraper")
	}
	if head := s.do(request{method: http.MethodHead, path: "/"}); head.Code != http.StatusOK {
		t.Errorf("HEAD /: status %d", head.Code)
	}
}
