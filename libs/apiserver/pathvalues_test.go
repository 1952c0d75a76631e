package apiserver_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/apistack/platform/libs/apiserver"
)

type kindIn struct {
	ID   string `path:"id"`
	Kind string `path:"kind" maxLength:"8"`
}

type kindOut struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
}

// registerKinds serves /:id/json/ and /:id/:kind/, the kind limited to a, b and c when
// listed (PathValues), a wildcard otherwise; no rate limit, so requests can be counted.
func registerKinds(t *testing.T, listed bool) *apiserver.Server[struct{}] {
	t.Helper()
	s := quietServer(t)
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/:id/json/", RateLimit: apiserver.NoRateLimit},
		func(_ *apiserver.Context[struct{}], in *struct {
			ID string `path:"id"`
		}) (kindOut, error) {
			return kindOut{ID: in.ID, Kind: "json"}, nil
		})
	op := apiserver.Operation{Method: "GET", URL: "/:id/:kind/", RateLimit: apiserver.NoRateLimit}
	if listed {
		op.PathValues = map[string][]string{"kind": {"a", "b", "c"}}
	}
	apiserver.Register(s, op, func(_ *apiserver.Context[struct{}], in *kindIn) (kindOut, error) {
		return kindOut{ID: in.ID, Kind: in.Kind}, nil
	})
	return s
}

// TestPathValuesRouteEachValue: a parameter with PathValues is routed for its listed
// values only, each reaching the handler through its input; another value is an unknown
// route (404, the standard body); metrics and the endpoint list name the template, and
// OpenAPI documents the values as the parameter's enum.
func TestPathValuesRouteEachValue(t *testing.T) {
	s := registerKinds(t, true)
	h := s.Handler()
	for _, tc := range []struct {
		method, path string
		status       int
		body         string
	}{
		{"GET", "/7/a/", 200, `{"id":"7","kind":"a"}`},
		{"GET", "/7/c/", 200, `{"id":"7","kind":"c"}`},
		{"HEAD", "/8/b/", 200, ""},
		{"GET", "/7/json/", 200, `{"id":"7","kind":"json"}`},
		{"GET", "/7/d/", 404, `{"statusCode":404,"error":"Not Found","message":"Route GET /7/d/ not found"}`},
		{"GET", "/7/:kind/", 404, ""},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != tc.status || tc.body != "" && strings.TrimSpace(rec.Body.String()) != tc.body {
			t.Errorf("%s %s: %d %s, want %d %s", tc.method, tc.path, rec.Code, rec.Body, tc.status, tc.body)
		}
	}

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		`http_requests_total{code="200",method="GET",route="/:id/:kind/"} 2`,
		`http_requests_total{code="200",method="HEAD",route="/:id/:kind/"} 1`,
		`http_requests_total{code="404",method="GET",route="unmatched"} 2`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(rec.Body.String(), `route="/:id/a/"`) {
		t.Error("metrics label a value's own route, not the template")
	}

	if got, want := s.Endpoints(), []string{"GET /{id}/json/", "GET /{id}/{kind}/"}; !slices.Equal(got, want) {
		t.Errorf("Endpoints() = %q, want %q", got, want)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/openapi.json", nil))
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name   string `json:"name"`
				Schema struct {
					Enum []string `json:"enum"`
				} `json:"schema"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Paths) != 2 {
		t.Errorf("documented paths %v, want the two templates", doc.Paths)
	}
	for _, p := range doc.Paths["/{id}/{kind}/"]["get"].Parameters {
		want := map[string][]string{"id": nil, "kind": {"a", "b", "c"}}[p.Name]
		if !slices.Equal(p.Schema.Enum, want) {
			t.Errorf("parameter %s: enum %q, want %q", p.Name, p.Schema.Enum, want)
		}
	}
}

// TestPathValuesSpareTheWayBack: with the kind listed, a request to the literal sibling
// /:id/json/ allocates less than beside a :kind wildcard, where gin records a way back
// (the reason PathValues exists).
func TestPathValuesSpareTheWayBack(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts vary under the race detector (sync.Pool drops at random); make test runs this without it")
	}
	allocs := func(listed bool) float64 {
		h := registerKinds(t, listed).Handler()
		req := httptest.NewRequest("GET", "/7/json/", nil)
		return testing.AllocsPerRun(200, func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Fatal(rec.Code)
			}
		})
	}
	wild, listed := allocs(false), allocs(true)
	t.Logf("allocations a request: %.0f beside a wildcard, %.0f beside listed values", wild, listed)
	if listed > wild-2 {
		t.Errorf("a request beside listed values allocates %.0f times, beside a wildcard %.0f: want at least 2 fewer", listed, wild)
	}
}

// TestPathValuesRefusedAtRegistration: values that cannot be literal segments of the route
// or that the parameter refuses are a programming error, reported when registering.
func TestPathValuesRefusedAtRegistration(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string][]string
		want   string
	}{
		{"not a parameter", map[string][]string{"nope": {"a"}}, "no :nope segment"},
		{"no values", map[string][]string{"kind": {}}, "no values"},
		{"a slash", map[string][]string{"kind": {"a/b"}}, "cannot be a path segment"},
		{"a wildcard", map[string][]string{"kind": {":x"}}, "cannot be a path segment"},
		{"empty", map[string][]string{"kind": {""}}, "cannot be a path segment"},
		{"twice", map[string][]string{"kind": {"a", "a"}}, "listed twice"},
		{"refused by its constraints", map[string][]string{"kind": {"muchtoolong"}}, "muchtoolong"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				p := recover()
				if msg, _ := p.(string); !strings.Contains(msg, tc.want) {
					t.Errorf("panic %v, want one saying %q", p, tc.want)
				}
			}()
			apiserver.Register(quietServer(t), apiserver.Operation{Method: "GET", URL: "/:id/:kind/", PathValues: tc.values},
				func(_ *apiserver.Context[struct{}], in *kindIn) (kindOut, error) { return kindOut{}, nil })
		})
	}
	t.Run("not a string", func(t *testing.T) {
		defer func() {
			if msg, _ := recover().(string); !strings.Contains(msg, "listed values are for strings") {
				t.Errorf("panic %q", msg)
			}
		}()
		apiserver.Register(quietServer(t), apiserver.Operation{Method: "GET", URL: "/:n/", PathValues: map[string][]string{"n": {"1"}}},
			func(_ *apiserver.Context[struct{}], in *struct {
				N int `path:"n"`
			}) (kindOut, error) {
				return kindOut{}, nil
			})
	})
}
