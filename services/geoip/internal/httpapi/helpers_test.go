package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/openapitest"
	"github.com/apistack/platform/libs/apiserver/testkit"
	"github.com/apistack/platform/services/geoip/internal/answer"
	"github.com/apistack/platform/services/geoip/internal/lookup"
)

// fixtureDB is the small fixture: a few ranges, a version tests can change as a reload
// would, and a count of lookups so tests see what was answered without one.
type fixtureDB struct {
	mu      sync.Mutex
	version string
	ranges  []fixtureRange
	fail    error
	panics  bool // Lookup panics, as a bug would
	lookups atomic.Int64
}

type fixtureRange struct {
	prefix netip.Prefix
	rec    lookup.Record
}

var (
	berlin = lookup.Record{Country: "DE", Region: "Land Berlin", City: "Berlin", Postal: "10115",
		Latitude: 52.5244, Longitude: 13.4105, HasLocation: true, TimeZone: "Europe/Berlin", UTCOffset: "+0100"}
	paris = lookup.Record{Country: "FR", Region: "Île-de-France", City: "Paris \"Centre\"",
		Latitude: 48.8534, Longitude: 2.3488, HasLocation: true, TimeZone: "Europe/Paris", UTCOffset: "+0100"}
	tokyo = lookup.Record{Country: "JP", Region: "Tokyo", City: "Tokyo",
		Latitude: 35.6895, Longitude: 139.6917, HasLocation: true, TimeZone: "Asia/Tokyo", UTCOffset: "+0900"}
)

func newFixtureDB() *fixtureDB {
	return &fixtureDB{version: "v1", ranges: []fixtureRange{
		{netip.MustParsePrefix("81.2.69.0/24"), berlin},
		{netip.MustParsePrefix("2a01:e0a::/32"), paris},
		{netip.MustParsePrefix("1.0.16.0/20"), tokyo},
	}}
}

func (f *fixtureDB) Lookup(addr netip.Addr) (lookup.Record, error) {
	f.lookups.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.panics {
		panic("fixture: lookup bug")
	}
	if f.fail != nil {
		return lookup.Record{}, f.fail
	}
	for _, r := range f.ranges {
		if r.prefix.Contains(addr) {
			return r.rec, nil
		}
	}
	return lookup.Record{}, nil
}

func (f *fixtureDB) Version() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.version
}

func (f *fixtureDB) setVersion(v string) {
	f.mu.Lock()
	f.version = v
	f.mu.Unlock()
}

func (f *fixtureDB) setFail(err error) {
	f.mu.Lock()
	f.fail = err
	f.mu.Unlock()
}

// DB is what the tests answer from: a fixture, or a dbfile.Manager (which is an
// answer.Source itself, with its location keys).
type DB interface {
	Lookup(addr netip.Addr) (lookup.Record, error)
	Version() string
}

// testServer is one API on its own apiserver.
type testServer struct {
	t       testing.TB
	srv     *apiserver.Server[struct{}]
	api     *API
	answers *answer.Engine
	// contract checks every answer against the service's own document
	// (nil in benchmarks and fuzz targets).
	contract *openapitest.Validator
}

// testOptions are the API's options (MaxAge) and its answer engine's.
type testOptions struct {
	MaxAge    time.Duration
	CacheSize int
	CacheTTL  time.Duration
	Now       func() time.Time
	Keys      *Keys
}

type serverOption func(*apiserver.Config[struct{}], *testOptions)

func trustedProxies(cidrs ...string) serverOption {
	return func(c *apiserver.Config[struct{}], _ *testOptions) { c.TrustedProxies = cidrs }
}

func withOptions(f func(*testOptions)) serverOption {
	return func(_ *apiserver.Config[struct{}], o *testOptions) { f(o) }
}

func newTestServer(t testing.TB, db DB, opts ...serverOption) *testServer {
	t.Helper()
	cfg := apiserver.Config[struct{}]{
		APITitle:       "geoip",
		APIDescription: Description,
		Getenv:         func(string) string { return "" },
		Logger:         testkit.Logger(),
		RateLimitMax:   1 << 30, // the tests send many requests from one peer
	}
	var o testOptions
	for _, opt := range opts {
		opt(&cfg, &o)
	}
	srv, err := apiserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	src, ok := db.(answer.Source)
	if !ok {
		src = answer.Records(db)
	}
	answers := answer.New(src, answer.Options{CacheSize: o.CacheSize, CacheTTL: o.CacheTTL, Now: o.Now})
	api, err := New(srv, answers, Options{MaxAge: o.MaxAge, Keys: o.Keys})
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{t: t, srv: srv, api: api, answers: answers}
	if _, ok := t.(*testing.T); ok {
		v, err := openapitest.FromHandler(srv.Handler())
		if err != nil {
			t.Fatal(err)
		}
		ts.contract = v
	}
	return ts
}

// request describes one call.
type request struct {
	method string
	path   string
	peer   string // RemoteAddr; default a public address
	header http.Header
	body   string
	ctype  string
}

const defaultPeer = "81.2.69.160:40000" // Berlin in the fixture

func (s *testServer) do(r request) *httptest.ResponseRecorder {
	s.t.Helper()
	if r.method == "" {
		r.method = http.MethodGet
	}
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req := httptest.NewRequest(r.method, "http://geoip.test"+r.path, body)
	req.RemoteAddr = defaultPeer
	if r.peer != "" {
		req.RemoteAddr = r.peer
	}
	for k, vs := range r.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if r.ctype != "" {
		req.Header.Set("Content-Type", r.ctype)
	}
	w := httptest.NewRecorder()
	s.srv.Handler().ServeHTTP(w, req)
	if s.contract != nil {
		s.contract.CheckRecorded(s.t, req, w)
	}
	return w
}

func (s *testServer) get(path string) *httptest.ResponseRecorder {
	s.t.Helper()
	return s.do(request{path: path})
}

// decodeObject decodes a JSON object answer, keeping numbers exact.
func decodeObject(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, body)
	}
	return m
}

var errBroken = errors.New("disk on fire")

type httpRequestStub struct{ path string }

func (h *httpRequestStub) request() *http.Request {
	return httptest.NewRequest(http.MethodGet, "http://geoip.test"+h.path, nil)
}
