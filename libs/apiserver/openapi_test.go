package apiserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestOpenAPIDocumentIsValid checks the generated document with an
// independent validator (kin-openapi, in OpenAPI 3.1 mode) and that it
// says what the endpoints enforce.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	s := newFixture(t, nil, nil)
	rec := send(s, request{method: "GET", path: "/openapi.json"})
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /openapi.json: %d", rec.Code)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(rec.Body.Bytes())
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi = %q, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the document is not valid OpenAPI 3.1: %v", err)
	}

	var raw map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	list := doc.Paths.Find("/items").Get
	if list == nil {
		t.Fatal("GET /items missing")
	}
	params := map[string]*openapi3.Parameter{}
	for _, p := range list.Parameters {
		params[p.Value.Name] = p.Value
	}
	limit := params["limit"]
	if limit == nil || limit.In != "query" {
		t.Fatalf("limit parameter missing: %v", params)
	}
	if limit.Description != "Page size" {
		t.Errorf("limit description = %q", limit.Description)
	}
	ls := limit.Schema.Value
	if ls.Min == nil || *ls.Min != 1 || ls.Max == nil || *ls.Max != 100 || ls.Default != float64(10) {
		t.Errorf("limit schema = min %v max %v default %v, want 1..100 default 10", ls.Min, ls.Max, ls.Default)
	}
	if os := params["offset"].Schema.Value; os.Min == nil || *os.Min != 0 || os.Default != float64(0) {
		t.Errorf("offset schema wrong: %+v", os)
	}

	create := doc.Paths.Find("/items").Post
	if create == nil || create.Security == nil || len(*create.Security) == 0 {
		t.Fatal("POST /items is authenticated but has no security requirement")
	}
	for _, code := range []int{201, 400, 401, 403, 413, 415, 429, 500} {
		if create.Responses.Status(code) == nil {
			t.Errorf("POST /items does not document %d", code)
		}
	}
	if create.RequestBody == nil || !create.RequestBody.Value.Required {
		t.Error("POST /items body is not documented as required")
	}
	if doc.Paths.Find("/items/{id}") == nil {
		t.Error("path parameters are not in OpenAPI {id} form")
	}
	if list.Security != nil && len(*list.Security) > 0 {
		t.Error("public endpoint documented as authenticated")
	}
	if _, ok := doc.Components.SecuritySchemes["bearerAuth"]; !ok {
		t.Error("no bearerAuth security scheme")
	}
	if len(doc.Tags) != 1 || doc.Tags[0].Description != "Items" {
		t.Errorf("tags = %+v", doc.Tags)
	}
	if doc.Info.Title != "Fixture" {
		t.Errorf("title = %q", doc.Info.Title)
	}
	if _, ok := doc.Components.Schemas["ErrorResponse"]; !ok {
		t.Error("ErrorResponse schema missing")
	}
	if doc.Paths.Find("/limited").Get.Responses.Status(429) == nil {
		t.Error("a limited endpoint does not document 429")
	}
	if doc.Paths.Find("/unlimited").Get.Responses.Status(429) != nil {
		t.Error("an unlimited endpoint documents 429")
	}
}

// TestOpenAPIAuthAnswersAreTheServed: the documented 401 and 403 of an
// authenticated route name the status and message the route answers.
func TestOpenAPIAuthAnswersAreTheServed(t *testing.T) {
	s := newFixture(t, nil, nil)
	var spec struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct{ Description string }
		}
	}
	if err := json.Unmarshal(send(s, request{method: "GET", path: "/openapi.json"}).Body.Bytes(), &spec); err != nil {
		t.Fatal(err)
	}
	docs := spec.Paths["/items"]["post"].Responses
	for _, h := range []map[string]string{{}, {"Authorization": "Token abc"}, {"Authorization": "Bearer wrong"}} {
		rec := send(s, request{method: "POST", path: "/items", body: `{"name":"a"}`, header: withJSON(h)})
		var body struct {
			StatusCode int
			Message    string
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.StatusCode != rec.Code {
			t.Fatalf("%v: %d %s (%v)", h, rec.Code, rec.Body, err)
		}
		doc, ok := docs[strconv.Itoa(rec.Code)]
		if !ok || !strings.Contains(doc.Description, `"`+body.Message+`"`) {
			t.Errorf("%v answers %d %q; documented %d: %q", h, rec.Code, body.Message, rec.Code, doc.Description)
		}
	}
	if d := docs["403"].Description; !strings.Contains(d, "API_TOKEN") || !strings.Contains(d, "valid: false") {
		t.Errorf("403 = %q; want both ways a token is refused", d)
	}
}
