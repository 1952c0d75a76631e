package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestCallerAddressThroughTrustedProxies(t *testing.T) {
	s := newTestServer(t, newFixtureDB(), trustedProxies("10.0.0.0/8", "fd00::/8"))
	xff := func(vs ...string) http.Header { return http.Header{"X-Forwarded-For": vs} }
	rows := []row{
		{name: "untrusted peer: forged X-Forwarded-For ignored",
			req: request{path: "/ip/", peer: "81.2.69.160:1", header: xff("1.0.16.1")}, status: 200, body: "81.2.69.160"},
		{name: "untrusted peer: json answers the peer",
			req: request{path: "/json/", peer: "81.2.69.160:1", header: xff("1.0.16.1")}, status: 200,
			json: map[string]any{"ip": "81.2.69.160", "city": "Berlin"}},
		{name: "trusted proxy: the client it forwards",
			req: request{path: "/json/", peer: "10.0.0.2:1", header: xff("1.0.16.1")}, status: 200,
			json: map[string]any{"ip": "1.0.16.1", "city": "Tokyo", "country": "JP", "continent_code": "AS"}},
		{name: "trusted IPv6 proxy, IPv6 client",
			req: request{path: "/ip/", peer: "[fd00::2]:1", header: xff("2a01:e0a::7")}, status: 200, body: "2a01:e0a::7"},
		{name: "chain of proxies: right-most untrusted wins over a forged left-most",
			req: request{path: "/ip/", peer: "10.0.0.2:1", header: xff("8.8.8.8, 1.0.16.1, 10.0.0.9")}, status: 200, body: "1.0.16.1"},
		{name: "chain across header lines",
			req: request{path: "/ip/", peer: "10.0.0.2:1", header: xff("8.8.8.8", "81.2.69.5", "10.1.1.1, 10.0.0.9")}, status: 200, body: "81.2.69.5"},
		{name: "every hop trusted: the left-most",
			req: request{path: "/ip/", peer: "10.0.0.2:1", header: xff("10.9.9.9, 10.0.0.9")}, status: 200, body: "10.9.9.9"},
		{name: "malformed hop ends the walk at the trusted proxy",
			req: request{path: "/ip/", peer: "10.0.0.2:1", header: xff("1.0.16.1, garbage")}, status: 200, body: "10.0.0.2"},
		{name: "trusted proxy without header: the proxy itself (reserved)",
			req: request{path: "/json/", peer: "10.0.0.2:1"}, status: 200, json: map[string]any{"ip": "10.0.0.2", "reserved": true}},
		{name: "explicit address ignores the caller",
			req: request{path: "/1.0.16.1/ip/", peer: "10.0.0.2:1", header: xff("81.2.69.5")}, status: 200, body: "1.0.16.1"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) { r.check(t, s) })
	}
}

func TestNoTrustedProxiesMeansThePeer(t *testing.T) {
	s := newTestServer(t, newFixtureDB())
	w := s.do(request{path: "/ip/", peer: "10.0.0.2:1", header: http.Header{"X-Forwarded-For": {"1.0.16.1"}}})
	if got := w.Body.String(); got != "10.0.0.2" {
		t.Errorf("caller = %q, want the peer 10.0.0.2", got)
	}
}

func TestConditionalRequests(t *testing.T) {
	db := newFixtureDB()
	s := newTestServer(t, db)
	for _, path := range []string{"/81.2.69.1/json/", "/81.2.69.1/xml/", "/81.2.69.1/csv/", "/81.2.69.1/yaml/",
		"/81.2.69.1/jsonp/?callback=cb", "/81.2.69.1/city/", "/2a01:e0a::1/json/", "/10.0.0.1/json/", "/json/", "/city/"} {
		t.Run(path, func(t *testing.T) {
			first := s.get(path)
			tag := first.Header().Get("ETag")
			if first.Code != 200 || !strings.HasPrefix(tag, `"v1-`) || !strings.HasSuffix(tag, `"`) {
				t.Fatalf("status %d, ETag %q: want 200 and a strong tag naming the database version", first.Code, tag)
			}
			for _, inm := range []string{tag, "W/" + tag, `"other", ` + tag, "*"} {
				w := s.do(request{path: path, header: http.Header{"If-None-Match": {inm}}})
				if w.Code != http.StatusNotModified || w.Body.Len() != 0 {
					t.Errorf("If-None-Match %s: status %d with %d bytes, want 304 and no body", inm, w.Code, w.Body.Len())
				}
				if w.Header().Get("ETag") != tag || w.Header().Get("Cache-Control") != first.Header().Get("Cache-Control") {
					t.Errorf("304 lacks the validators: %v", w.Header())
				}
			}
			if w := s.do(request{path: path, header: http.Header{"If-None-Match": {`"v0-0000000000000000"`}}}); w.Code != 200 {
				t.Errorf("stale If-None-Match: status %d, want 200", w.Code)
			}
		})
	}

	t.Run("ETag changes with the database", func(t *testing.T) {
		before := s.get("/81.2.69.1/json/")
		db.setVersion("v2")
		after := s.get("/81.2.69.1/json/")
		if before.Body.String() != after.Body.String() {
			t.Fatalf("fixture data changed: %s vs %s", before.Body, after.Body)
		}
		if before.Header().Get("ETag") == after.Header().Get("ETag") || !strings.HasPrefix(after.Header().Get("ETag"), `"v2-`) {
			t.Errorf("ETag %s after reload, was %s", after.Header().Get("ETag"), before.Header().Get("ETag"))
		}
		w := s.do(request{path: "/81.2.69.1/json/", header: http.Header{"If-None-Match": {before.Header().Get("ETag")}}})
		if w.Code != 200 {
			t.Errorf("old ETag after reload: status %d, want 200", w.Code)
		}
	})

	t.Run("representations have different tags", func(t *testing.T) {
		a := s.get("/81.2.69.1/jsonp/?callback=a").Header().Get("ETag")
		b := s.get("/81.2.69.1/jsonp/?callback=b").Header().Get("ETag")
		j := s.get("/81.2.69.1/json/").Header().Get("ETag")
		if a == b || a == j {
			t.Errorf("tags %s %s %s must differ", a, b, j)
		}
	})
}

func TestCacheControl(t *testing.T) {
	s := newTestServer(t, newFixtureDB(), withOptions(func(o *testOptions) { o.MaxAge = 10 * time.Minute }))
	rows := []row{
		{name: "explicit", req: request{path: "/81.2.69.1/json/"}, status: 200, headers: map[string]string{"Cache-Control": "public, max-age=600"}},
		{name: "explicit field", req: request{path: "/81.2.69.1/city/"}, status: 200, headers: map[string]string{"Cache-Control": "public, max-age=600"}},
		{name: "caller", req: request{path: "/json/"}, status: 200, headers: map[string]string{"Cache-Control": "private, no-cache"}},
		{name: "caller field", req: request{path: "/country/"}, status: 200, headers: map[string]string{"Cache-Control": "private, no-cache"}},
		{name: "batch", req: request{method: "POST", path: "/batch", body: `["81.2.69.1"]`, ctype: "application/json"}, status: 200,
			headers: map[string]string{"Cache-Control": "no-store"}},
		{name: "error is not cached", req: request{path: "/nope/json/"}, status: 400, headers: map[string]string{"Cache-Control": "", "ETag": ""}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) { r.check(t, s) })
	}
}

func TestAnswerCache(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	db := newFixtureDB()
	s := newTestServer(t, db, withOptions(func(o *testOptions) {
		o.CacheSize = 64
		o.CacheTTL = time.Minute
		o.Now = func() time.Time { return now }
	}))
	lookups := func(paths ...string) int64 {
		t.Helper()
		before := db.lookups.Load()
		for _, p := range paths {
			if w := s.get(p); w.Code != 200 {
				t.Fatalf("%s: status %d", p, w.Code)
			}
		}
		return db.lookups.Load() - before
	}

	// An address is cached on its second miss: the first only marks it as seen.
	if n := lookups("/81.2.69.1/json/", "/81.2.69.1/xml/", "/81.2.69.1/city/", "/81.2.69.1/jsonp/"); n != 2 {
		t.Errorf("4 formats of one hot address: %d lookups, want 2", n)
	}
	if n := lookups("/json/", "/city/", "/yaml/"); n != 2 { // the default peer is another Berlin address
		t.Errorf("caller three times: %d lookups, want 2", n)
	}
	if n := lookups("/81.2.69.2/json/", "/81.2.69.3/json/", "/81.2.69.4/json/"); n != 3 || s.answers.CacheLen() != 2 {
		t.Errorf("3 addresses asked once: %d lookups, %d answers cached; want 3 and only the 2 hot ones", n, s.answers.CacheLen())
	}
	if n := lookups("/10.0.0.1/json/", "/10.0.0.1/json/"); n != 0 {
		t.Errorf("reserved: %d lookups, want 0", n)
	}

	db.setVersion("v2")
	if n := lookups("/81.2.69.1/json/"); n != 1 {
		t.Errorf("after a database change: %d lookups, want 1 (no answer of the old database is served)", n)
	}
	s.answers.Purge()
	if s.answers.CacheLen() != 0 {
		t.Errorf("%d answers after Purge", s.answers.CacheLen())
	}
	if n := lookups("/81.2.69.1/json/", "/81.2.69.1/json/"); n != 1 {
		t.Errorf("after Purge: %d lookups, want 1", n)
	}

	now = now.Add(time.Minute)
	if n := lookups("/81.2.69.1/json/"); n != 1 {
		t.Errorf("after the TTL: %d lookups, want 1 (utc_offset may have changed)", n)
	}

	for i := range 1000 {
		lookups(fmt.Sprintf("/81.2.%d.%d/json/", i/250, i%250+1))
	}
	if n := s.answers.CacheLen(); n > 64 {
		t.Errorf("%d answers cached, want at most 64", n)
	}
}

func TestAnswerCacheDisabled(t *testing.T) {
	db := newFixtureDB()
	s := newTestServer(t, db, withOptions(func(o *testOptions) { o.CacheSize = -1 }))
	s.get("/81.2.69.1/json/")
	s.get("/81.2.69.1/json/")
	if n := db.lookups.Load(); n != 2 {
		t.Errorf("%d lookups with the cache off, want 2", n)
	}
}

func TestTrailingSlashRedirects(t *testing.T) {
	s := newTestServer(t, newFixtureDB())
	rows := []struct {
		path, location string
	}{
		{"/8.8.8.8/json", "./json/"},
		{"/json", "./json/"},
		{"/8.8.8.8/city", "./city/"},
		{"/city", "./city/"},
		{"/2001:db8::1/json", "./json/"},
		{"/8.8.8.8/jsonp?callback=cb", "./jsonp/?callback=cb"},
		{"/jsonp?callback=a.b", "./jsonp/?callback=a.b"},
		{"/fe80::1%25eth0/json", "./json/"},
	}
	for _, r := range rows {
		t.Run(r.path, func(t *testing.T) {
			w := s.get(r.path)
			if w.Code != http.StatusMovedPermanently || w.Header().Get("Location") != r.location {
				t.Fatalf("status %d Location %q, want 301 %q", w.Code, w.Header().Get("Location"), r.location)
			}
			// Behind the reverse proxy the client asked for /geoip/...: the relative
			// Location must keep that prefix.
			base, _ := url.Parse("http://localhost:8080/geoip" + r.path)
			loc, _ := url.Parse(w.Header().Get("Location"))
			got := base.ResolveReference(loc)
			want, _ := url.Parse("http://localhost:8080/geoip" + r.path)
			want.Path += "/"
			want.RawPath = ""
			if got.String() != want.String() {
				t.Errorf("resolved behind the proxy to %s, want %s", got, want)
			}
			// And directly, it lands on an endpoint.
			direct, _ := url.Parse("http://geoip.test" + r.path)
			next := direct.ResolveReference(loc)
			if w2 := s.get(next.RequestURI()); w2.Code == http.StatusMovedPermanently || w2.Code == http.StatusNotFound {
				t.Errorf("%s after the redirect: status %d", next.RequestURI(), w2.Code)
			}
		})
	}
	for _, path := range []string{"/nope", "/a/b/c", "/healthz/x/y"} {
		if w := s.get(path); w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), `"statusCode":404`) {
			t.Errorf("%s: status %d %s, want the library's 404", path, w.Code, w.Body)
		}
	}
	if w := s.do(request{method: "POST", path: "/8.8.8.8/json"}); w.Code == http.StatusMovedPermanently {
		t.Errorf("POST redirected")
	}
	for _, path := range []string{"/healthz", "/docs/index.html", "/openapi.json"} {
		if w := s.get(path); w.Code != 200 {
			t.Errorf("built-in %s: status %d", path, w.Code)
		}
	}
}

func TestCORS(t *testing.T) {
	s := newTestServer(t, newFixtureDB())
	w := s.do(request{path: "/json/", header: http.Header{"Origin": {"https://app.example"}}})
	if w.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("Access-Control-Allow-Origin %q, want *", w.Header().Get("Access-Control-Allow-Origin"))
	}
	if !strings.Contains(w.Header().Get("Access-Control-Expose-Headers"), "ETag") {
		t.Errorf("ETag not exposed to scripts: %q", w.Header().Get("Access-Control-Expose-Headers"))
	}
	pre := s.do(request{method: "OPTIONS", path: "/batch", header: http.Header{
		"Origin": {"https://app.example"}, "Access-Control-Request-Method": {"POST"}, "Access-Control-Request-Headers": {"content-type"}}})
	if pre.Code != http.StatusNoContent || pre.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("preflight: %d %v", pre.Code, pre.Header())
	}
}

func TestBatch(t *testing.T) {
	db := newFixtureDB()
	s := newTestServer(t, db)
	post := func(body string) *row {
		return &row{req: request{method: "POST", path: "/batch", body: body, ctype: "application/json"}}
	}
	w := s.do(post(`["81.2.69.1", "2a01:e0a::1", "nope", "10.0.0.1", " 1.0.16.1 ", "5.6.7.8", "fe80::1%eth0", "::ffff:81.2.69.2"]`).req)
	if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	var got []map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"ip": "81.2.69.1", "version": "IPv4", "city": "Berlin", "in_eu": true},
		{"ip": "2a01:e0a::1", "version": "IPv6", "country": "FR"},
		{"ip": "nope", "error": true, "reason": "Invalid IP Address", "version": "", "city": ""},
		{"ip": "10.0.0.1", "reserved": true, "error": true, "reason": "Reserved IP Address"},
		{"ip": "1.0.16.1", "country": "JP"},
		{"ip": "5.6.7.8", "country": ""},
		{"ip": "fe80::1%eth0", "error": true, "reason": "Invalid IP Address"},
		{"ip": "81.2.69.2", "version": "IPv4", "city": "Berlin"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d results for %d addresses", len(got), len(want))
	}
	for i := range want {
		for k, v := range want[i] {
			if fmt.Sprint(got[i][k]) != fmt.Sprint(v) {
				t.Errorf("result %d: %s = %v, want %v", i, k, got[i][k], v)
			}
		}
		for _, k := range theEight {
			if _, ok := got[i][k]; !ok {
				t.Errorf("result %d lacks %s", i, k)
			}
		}
	}

	hundred := `["` + strings.Repeat(`81.2.69.1","`, 99) + `81.2.69.1"]`
	tooMany := `["` + strings.Repeat(`81.2.69.1","`, 100) + `81.2.69.1"]`
	rows := []row{
		{name: "100 addresses", req: post(hundred).req, status: 200},
		{name: "101 addresses", req: post(tooMany).req, status: 400, has: []string{"body"}},
		{name: "empty list", req: post(`[]`).req, status: 400},
		{name: "not a list", req: post(`{"ips":["8.8.8.8"]}`).req, status: 400},
		{name: "not strings", req: post(`[1,2]`).req, status: 400},
		{name: "malformed", req: post(`["8.8.8.8"`).req, status: 400, has: []string{"Malformed JSON"}},
		{name: "no body", req: request{method: "POST", path: "/batch", ctype: "application/json"}, status: 400},
		{name: "not JSON", req: request{method: "POST", path: "/batch", body: "8.8.8.8", ctype: "text/plain"}, status: 415},
		{name: "GET is not allowed", req: request{path: "/batch"}, status: 405},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) { r.check(t, s) })
	}
}

func TestDocsDeclareEveryEndpoint(t *testing.T) {
	s := newTestServer(t, newFixtureDB())
	w := s.get("/openapi.json")
	var doc struct {
		Info struct {
			Description string `json:"description"`
		} `json:"info"`
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name   string         `json:"name"`
				Schema map[string]any `json:"schema"`
			} `json:"parameters"`
			Responses map[string]struct {
				Content map[string]any `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc.Info.Description, "[IP Geolocation by DB-IP](https://db-ip.com)") {
		t.Errorf("DB-IP attribution missing from the docs: %q", doc.Info.Description)
	}
	want := map[string]string{
		"/json/": "get", "/{ip}/json/": "get", "/{ip}/{field}/": "get", "/batch": "post",
		"/{ip}/xml/": "get", "/{ip}/csv/": "get", "/{ip}/yaml/": "get", "/{ip}/jsonp/": "get",
		"/xml/": "get", "/csv/": "get", "/yaml/": "get", "/jsonp/": "get",
	}
	for _, f := range textFieldNames {
		want["/"+f+"/"] = "get"
	}
	for path, method := range want {
		op, ok := doc.Paths[path][method]
		if !ok {
			t.Errorf("%s %s not in /openapi.json", method, path)
			continue
		}
		if _, ok := op.Responses["200"]; !ok {
			t.Errorf("%s: no 200 response documented", path)
		}
		for _, p := range op.Parameters {
			if p.Name == "ip" && p.Schema["examples"] == nil {
				t.Errorf("%s: the ip parameter has no example", path)
			}
		}
	}
	if c := doc.Paths["/{ip}/xml/"]["get"].Responses["200"].Content; c["application/xml"] == nil {
		t.Errorf("xml media type not documented: %v", c)
	}
	if _, ok := doc.Paths["/{ip}/json/"]["get"].Responses["304"]; !ok {
		t.Errorf("304 not documented")
	}
}

func TestSlashRedirectLeavesOtherPathsAlone(t *testing.T) {
	for _, p := range []string{"/", "/json/", "/8.8.8.8/json/", "/a/b/c", "//x", "/unknown"} {
		r := &httpRequestStub{path: p}
		if to, ok := slashRedirect(r.request()); ok {
			t.Errorf("%s redirected to %s", p, to)
		}
	}
}
