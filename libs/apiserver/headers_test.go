package apiserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/testkit"
)

type taggedHeaders struct {
	ETag         string `header:"ETag" doc:"Version of the item" required:"true" status:"200,304"`
	CacheControl string `header:"Cache-Control" example:"public, max-age=60"`
	Count        int    `header:"X-Count" minimum:"0"`
}

func loadDoc(t *testing.T, s *apiserver.Server[user]) *openapi3.T {
	t.Helper()
	rec := send(s, request{method: "GET", path: "/openapi.json"})
	doc, err := openapi3.NewLoader().LoadFromData(rec.Body.Bytes())
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the document is not valid OpenAPI 3.1: %v", err)
	}
	return doc
}

// TestResponseHeadersAreDocumented: declared headers land on the statuses
// they name, the library's own headers on the answers that carry them, and
// each of those is really sent.
func TestResponseHeadersAreDocumented(t *testing.T) {
	s := newFixture(t, nil, nil)
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/tagged"},
		func(c *apiserver.Context[user], _ *struct{}) (apiserver.Response[taggedHeaders, item], error) {
			return apiserver.Response[taggedHeaders, item]{
				Header: taggedHeaders{ETag: `"v1"`, CacheControl: "public, max-age=60", Count: 3},
				Body:   item{ID: "1", Name: "t"},
			}, nil
		})
	doc := loadDoc(t, s)

	tagged := doc.Paths.Find("/tagged").Get
	ok := tagged.Responses.Status(200).Value.Headers
	if h := ok["ETag"]; h == nil || !h.Value.Required || h.Value.Description != "Version of the item" || !h.Value.Schema.Value.Type.Is("string") {
		t.Errorf("ETag on 200 = %+v", h)
	}
	if h := ok["Cache-Control"]; h == nil || h.Value.Required || h.Value.Schema.Value.Examples == nil && h.Value.Schema.Value.Example == nil {
		t.Errorf("Cache-Control on 200 = %+v", h)
	}
	if h := ok["X-Count"]; h == nil || !h.Value.Schema.Value.Type.Is("integer") || h.Value.Schema.Value.Min == nil {
		t.Errorf("X-Count on 200 = %+v", h)
	}
	if h := tagged.Responses.Status(304).Value.Headers; h["ETag"] == nil || h["Cache-Control"] != nil {
		t.Errorf("304 headers = %v, want ETag only (and the library's)", keys(h))
	}
	if h := tagged.Responses.Status(429).Value.Headers; h["ETag"] != nil {
		t.Error("ETag documented on 429, which never carries it")
	}

	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			limited := op.Responses.Status(429) != nil
			for code, r := range op.Responses.Map() {
				hs := r.Value.Headers
				if hs["X-Request-Id"] == nil || !hs["X-Request-Id"].Value.Required {
					t.Errorf("%s %s %s: X-Request-Id not documented", method, path, code)
				}
				if (hs["RateLimit-Limit"] != nil) != limited || (hs["RateLimit-Remaining"] != nil) != limited || (hs["RateLimit-Reset"] != nil) != limited {
					t.Errorf("%s %s %s: RateLimit-* documented = %v, rate limited = %v", method, path, code, hs["RateLimit-Limit"] != nil, limited)
				}
				if (code == "429") != (hs["Retry-After"] != nil) && code != "503" {
					t.Errorf("%s %s %s: Retry-After documented = %v", method, path, code, hs["Retry-After"] != nil)
				}
				if (code == "401") != (hs["WWW-Authenticate"] != nil) {
					t.Errorf("%s %s %s: WWW-Authenticate documented = %v", method, path, code, hs["WWW-Authenticate"] != nil)
				}
			}
		}
	}
	mna := doc.Components.Responses["MethodNotAllowed"]
	if mna == nil || mna.Value.Headers["Allow"] == nil || !mna.Value.Headers["Allow"].Value.Required {
		t.Fatalf("components.responses.MethodNotAllowed with Allow missing: %+v", mna)
	}

	// What is documented is sent.
	rec := send(s, request{method: "GET", path: "/tagged"})
	for _, h := range []string{"ETag", "Cache-Control", "X-Count", "X-Request-Id", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} {
		if rec.Header().Get(h) == "" {
			t.Errorf("GET /tagged: %s documented, not sent", h)
		}
	}
	rec = send(s, request{method: "GET", path: "/tagged", header: map[string]string{"If-None-Match": `"v1"`}})
	if rec.Code != http.StatusNotModified || rec.Header().Get("ETag") != `"v1"` {
		t.Errorf("304: %d ETag %q", rec.Code, rec.Header().Get("ETag"))
	}
	rec = send(s, request{method: "GET", path: "/me"})
	if rec.Code != http.StatusUnauthorized || rec.Header().Get("WWW-Authenticate") != "Bearer" {
		t.Errorf("401: %d WWW-Authenticate %q", rec.Code, rec.Header().Get("WWW-Authenticate"))
	}
	for range 2 {
		send(s, request{method: "GET", path: "/limited"})
	}
	rec = send(s, request{method: "GET", path: "/limited"})
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" || rec.Header().Get("RateLimit-Remaining") != "0" {
		t.Errorf("429: %d Retry-After %q RateLimit-Remaining %q", rec.Code, rec.Header().Get("Retry-After"), rec.Header().Get("RateLimit-Remaining"))
	}
	rec = send(s, request{method: "DELETE", path: "/limited"})
	if rec.Code != http.StatusMethodNotAllowed || !strings.Contains(rec.Header().Get("Allow"), "GET") || rec.Header().Get("X-Request-Id") == "" {
		t.Errorf("405: %d Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestSecuritySchemeOnlyWhenUsed: a document whose operations are all
// public declares no scheme (Swagger UI would show an Authorize button that
// does nothing).
func TestSecuritySchemeOnlyWhenUsed(t *testing.T) {
	s, err := apiserver.New(apiserver.Config[user]{APIToken: token, Getenv: func(string) string { return "" }, Logger: testkit.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/open", RateLimit: &apiserver.RateLimit{Max: 5, Window: time.Minute}},
		func(c *apiserver.Context[user], in *struct{}) (item, error) { return item{ID: "1", Name: "o"}, nil })
	if doc := loadDoc(t, s); doc.Components.SecuritySchemes != nil {
		t.Errorf("securitySchemes = %v on a document without authenticated operations", keys(doc.Components.SecuritySchemes))
	}
	if doc := loadDoc(t, newFixture(t, nil, nil)); doc.Components.SecuritySchemes["bearerAuth"] == nil {
		t.Error("bearerAuth missing though operations use it")
	}
}

// TestHeaderDeclaredOnUnknownStatusPanics: a header on an answer the
// operation never gives is a declaration error found when the document is
// built.
func TestHeaderDeclaredOnUnknownStatus(t *testing.T) {
	type bad struct {
		Loc string `header:"Location" status:"302"`
	}
	s := newFixture(t, nil, nil)
	defer func() {
		if recover() == nil {
			t.Error("no panic for a header on an undeclared status")
		}
	}()
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/bad"},
		func(c *apiserver.Context[user], in *struct{}) (apiserver.Response[bad, item], error) {
			return apiserver.Response[bad, item]{}, nil
		})
}
