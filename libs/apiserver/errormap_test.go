package apiserver_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/apistack/platform/libs/apiserver"
)

type mapItemIn struct {
	ID string `path:"id"`
}

// errorMapServer has mapped routes (GET /items/:id, one literal route per value of
// /fields/:name, POST /mapped-post) beside unmapped ones that share their paths under
// other methods or outrank them in gin's tree (GET /items/new).
func errorMapServer(t *testing.T, env string) http.Handler {
	t.Helper()
	s, err := apiserver.New(apiserver.Config[struct{}]{
		Getenv: func(string) string { return "" }, Logger: slog.New(slog.DiscardHandler), Env: env,
		RateLimitMax: 1000, RateLimitWindow: "1m",
	})
	if err != nil {
		t.Fatal(err)
	}
	panicky := func(c *apiserver.Context[struct{}], in *mapItemIn) (listOut, error) {
		if in.ID == "boom" {
			panic("secret panic text")
		}
		return listOut{}, nil
	}
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/items/:id", ErrorMap: shapeMap}, panicky)
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/items/new"},
		func(c *apiserver.Context[struct{}], _ *struct{}) (listOut, error) { return listOut{}, nil })
	apiserver.Register(s, apiserver.Operation{Method: "DELETE", URL: "/items/:id"}, panicky)
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/plain/:id"}, panicky)
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/fields/:name", ErrorMap: shapeMap,
		PathValues: map[string][]string{"name": {"a", "b"}}},
		func(c *apiserver.Context[struct{}], _ *struct {
			Name string `path:"name"`
		}) (listOut, error) {
			panic("field panic")
		})
	apiserver.Register(s, apiserver.Operation{Method: "POST", URL: "/mapped-post", ErrorMap: shapeMap},
		func(c *apiserver.Context[struct{}], _ *struct{}) (listOut, error) { return listOut{}, nil })
	// A route of the application's own on the engine: never mapped.
	s.Instance().GET("/own/:id", func(c *gin.Context) { panic("own panic") })
	return s.Handler()
}

// TestErrorMapCoversPanicsAnd405: a panic recovered on a mapped route, and a 405 on a
// path a mapped route serves under another method, answer in the mapped body; the same
// on unmapped routes (or where an unmapped route is the one gin would pick) keep the
// standard body. In production the panic's text is not sent.
func TestErrorMapCoversPanicsAnd405(t *testing.T) {
	for _, env := range []string{"production", "development"} {
		h := errorMapServer(t, env)
		for _, tc := range []struct {
			method, path string
			status       int
			mapped       bool
		}{
			{"GET", "/items/boom", 500, true},
			{"HEAD", "/items/boom", 500, true},
			{"GET", "/fields/a", 500, true}, // a literal route of PathValues
			{"POST", "/items/boom", 405, true},
			{"PUT", "/items/1", 405, true},
			{"OPTIONS", "/fields/b", 405, true},
			{"GET", "/mapped-post", 405, true},
			{"DELETE", "/items/boom", 500, false}, // the unmapped DELETE route
			{"GET", "/plain/boom", 500, false},
			{"POST", "/plain/1", 405, false},
			{"POST", "/items/new", 405, false}, // GET /items/new, unmapped, outranks /items/:id
			{"GET", "/own/1", 500, false},
			{"POST", "/own/1", 405, false},
			{"POST", "/healthz", 405, false},
			{"POST", "/docs/index.html", 405, false}, // a catch-all route
			{"GET", "/nowhere", 404, false},
		} {
			// The recorder keeps what a HEAD answer writes too (net/http drops it on the wire).
			req := httptest.NewRequest(tc.method, tc.path, nil)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			name := env + " " + tc.method + " " + tc.path
			if w.Code != tc.status {
				t.Errorf("%s: %d %s, want %d", name, w.Code, w.Body, tc.status)
				continue
			}
			if tc.status == 405 && w.Header().Get("Allow") == "" {
				t.Errorf("%s: 405 without Allow", name)
			}
			if got := w.Header().Get("Content-Type"); got != "application/json; charset=utf-8" {
				t.Errorf("%s: Content-Type %q", name, got)
			}
			var mapped shapeErr
			var std struct {
				StatusCode int    `json:"statusCode"`
				Message    string `json:"message"`
			}
			body := w.Body.Bytes()
			if tc.mapped {
				if err := json.Unmarshal(body, &mapped); err != nil || !mapped.Error || mapped.Reason != http.StatusText(tc.status) ||
					strings.Contains(string(body), "statusCode") {
					t.Errorf("%s: want the mapped body, got %s", name, body)
				}
			} else if err := json.Unmarshal(body, &std); err != nil || std.StatusCode != tc.status {
				t.Errorf("%s: want the standard body, got %s", name, body)
			}
			leaked := strings.Contains(string(body), "panic")
			if tc.status == 500 && leaked == (env == "production") {
				t.Errorf("%s: panic text shown %v in %s: %s", name, leaked, env, body)
			}
		}
	}
}
