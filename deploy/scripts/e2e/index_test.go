package main

import (
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// caddyIndex reads the page the proxy answers at / from the Caddyfile the stack mounts:
// the Content-Type header and the body of `respond` in the `handle / { ... }` block.
func caddyIndex(t *testing.T) *response {
	t.Helper()
	b, err := os.ReadFile("../../caddy/Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	start := strings.Index(s, "\thandle / {\n")
	if start < 0 {
		t.Fatal("Caddyfile: no `handle / {` block")
	}
	block := s[start:]
	ct := regexp.MustCompile(`header Content-Type "([^"]*)"`).FindStringSubmatch(block)
	body := regexp.MustCompile(`(?s)respond "((?:[^"\\]|\\.)*)" 200`).FindStringSubmatch(block)
	if ct == nil || body == nil {
		t.Fatalf("Caddyfile: the / block has no Content-Type header or no respond body:\n%.400s", block)
	}
	u, _ := url.Parse("http://127.0.0.1:8080/")
	return &response{
		status:   http.StatusOK,
		header:   http.Header{"Content-Type": {ct[1]}},
		body:     []byte(strings.ReplaceAll(body[1], `\"`, `"`)),
		finalURL: u,
	}
}

// The proxy's front page, as configured, passes the compose test's index check: HTML
// that links to each service, its docs and a lookup.
func TestCaddyIndexLinksEveryService(t *testing.T) {
	links, err := indexLinks(caddyIndex(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/geoip/openapi.json", "/chat/openapi.json"} {
		if !slices.Contains(links, want) {
			t.Errorf("links %v lack %s", links, want)
		}
	}
}

func TestIndexLinksRefusesWhatIsNotAnIndex(t *testing.T) {
	page, _ := url.Parse("http://127.0.0.1:8080/")
	html := func(body string) *response {
		return &response{status: 200, header: http.Header{"Content-Type": {"text/html; charset=utf-8"}}, body: []byte(body), finalURL: page}
	}
	all := `<html><body><a href="/geoip/">g</a> <a href='/geoip/8.8.8.8/json/'>l</a>
		<A HREF=/geoip/docs>d</A> <a class="x" href="chat/">c</a> <a href="/chat/docs">cd</a></body></html>`
	got, err := indexLinks(html(all))
	if err != nil {
		t.Fatalf("a complete index: %v", err)
	}
	if want := []string{"/geoip/", "/geoip/8.8.8.8/json/", "/geoip/docs", "/chat/", "/chat/docs"}; !slices.Equal(got, want) {
		t.Errorf("links %v, want %v", got, want)
	}

	for name, res := range map[string]*response{
		// The proxy's old front page: the paths named in text, no links.
		"plain text": {status: 200, header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}},
			body: []byte("apistack: /geoip/ (docs: /geoip/docs), /chat/ (docs: /chat/docs)\n"), finalURL: page},
		"HTML naming the paths without links": html(`<html><body>/geoip/ /geoip/8.8.8.8/json/ /geoip/docs /chat/ /chat/docs</body></html>`),
		"no link to chat's docs":              html(strings.Replace(all, `<a href="/chat/docs">cd</a>`, "", 1)),
		"a link off the stack":                html(strings.Replace(all, `href="/chat/docs"`, `href="https://example.com/chat/docs"`, 1)),
	} {
		if _, err := indexLinks(res); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
