package apiserver_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/apistack/platform/libs/apiserver"
)

func getItem(c *apiserver.Context[user], _ *struct{}) (item, error) {
	return item{ID: "1", Name: "n"}, nil
}

// TestResponsesDocumentEachShape: Operation.Responses declares, per status, the media
// types of the success answer with their schemas, further answers by description, and the
// headers the handler sends itself; each lands in the document as declared.
func TestResponsesDocumentEachShape(t *testing.T) {
	s := newFixture(t, nil, nil)
	type docs = map[int]apiserver.ResponseDoc
	type content = map[string]apiserver.Body
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/shape/json"}, getItem)
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/shape/text", Responses: docs{
		200: {Content: content{"text/plain": {Kind: apiserver.BodyText}}},
	}}, getItem)
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/shape/many", Responses: docs{
		200: {Description: "The item", Content: content{
			"application/json": {},
			"application/yaml": {Description: "A YAML mapping"},
			"application/xml":  {Kind: apiserver.BodyXML, XMLName: "root"},
			"text/csv":         {Kind: apiserver.BodyText, Description: "Columns: id, name"},
		}},
	}}, getItem)
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/shape/errors", Responses: docs{
		404: {Description: "No such item"},
		409: {},
	}}, getItem)
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/shape/headers", Responses: docs{
		200: {Headers: map[string]apiserver.HeaderDoc{
			"X-Total-Count": {Description: "Items in all pages", Required: true, Example: 42},
			"Link":          {Description: "The next page"},
		}},
		202: {Description: "Accepted: still computing", Headers: map[string]apiserver.HeaderDoc{
			"Content-Location": {Description: "Where the result will be", Example: "/results/1"},
		}},
	}}, getItem)
	doc := loadDoc(t, s)
	answer := func(path string, code int) *openapi3.Response {
		t.Helper()
		r := doc.Paths.Find(path).Get.Responses.Status(code)
		if r == nil {
			t.Fatalf("%s: %d not documented", path, code)
		}
		return r.Value
	}
	mediaTypes := func(r *openapi3.Response) []string {
		var out []string
		for mt := range r.Content {
			out = append(out, mt)
		}
		slices.Sort(out)
		return out
	}
	isItem := func(s *openapi3.SchemaRef) bool { return s != nil && s.Value.Properties["name"] != nil }

	// JSON by default: the response type's schema.
	if r := answer("/shape/json", 200); !slices.Equal(mediaTypes(r), []string{"application/json"}) || !isItem(r.Content["application/json"].Schema) {
		t.Errorf("default: %v", mediaTypes(r))
	}
	// Text only: no JSON, a string.
	if r := answer("/shape/text", 200); !slices.Equal(mediaTypes(r), []string{"text/plain"}) || !r.Content["text/plain"].Schema.Value.Type.Is("string") {
		t.Errorf("text only: %v", mediaTypes(r))
	}
	// Several media types, each with its real schema.
	many := answer("/shape/many", 200)
	if got := mediaTypes(many); !slices.Equal(got, []string{"application/json", "application/xml", "application/yaml", "text/csv"}) {
		t.Errorf("many: media types %v", got)
	}
	if *many.Description != "The item" {
		t.Errorf("many: description %q", *many.Description)
	}
	if !isItem(many.Content["application/json"].Schema) {
		t.Error("many: JSON is not the item's schema")
	}
	if y := many.Content["application/yaml"]; y == nil || !isItem(y.Schema) || y.Schema.Value.Description != "A YAML mapping" {
		t.Errorf("many: YAML = %+v", y)
	}
	if x := many.Content["application/xml"]; x == nil || !isItem(x.Schema) || x.Schema.Value.XML == nil || x.Schema.Value.XML.Name != "root" {
		t.Errorf("many: XML lacks the item's properties or its root name: %+v", x)
	}
	if c := many.Content["text/csv"]; c == nil || !c.Schema.Value.Type.Is("string") || c.Schema.Value.Description != "Columns: id, name" {
		t.Errorf("many: CSV = %+v", c)
	}
	// Further statuses: the standard error body, with the description given or the
	// status text.
	for code, desc := range map[int]string{404: "No such item", 409: "Conflict"} {
		r := answer("/shape/errors", code)
		if *r.Description != desc || r.Content["application/json"] == nil || r.Content["application/json"].Schema.Ref != "#/components/schemas/ErrorResponse" {
			t.Errorf("%d: description %q, content %v", code, *r.Description, mediaTypes(r))
		}
	}
	// Headers on the statuses that carry them, beside the library's.
	ok := answer("/shape/headers", 200).Headers
	if h := ok["X-Total-Count"]; h == nil || !h.Value.Required || h.Value.Description != "Items in all pages" ||
		!h.Value.Schema.Value.Type.Is("integer") || fmt.Sprint(h.Value.Schema.Value.Examples) != "[42]" {
		t.Errorf("X-Total-Count = %+v", h)
	}
	if h := ok["Link"]; h == nil || h.Value.Required || !h.Value.Schema.Value.Type.Is("string") {
		t.Errorf("Link = %+v", h)
	}
	if ok["X-Request-Id"] == nil || ok["RateLimit-Limit"] == nil {
		t.Errorf("the library's headers went missing beside the declared ones: %v", keys(ok))
	}
	accepted := answer("/shape/headers", 202)
	if h := accepted.Headers["Content-Location"]; h == nil || h.Value.Required || fmt.Sprint(h.Value.Schema.Value.Examples) != "[/results/1]" {
		t.Errorf("Content-Location on 202 = %+v", h)
	}
	if accepted.Headers["X-Total-Count"] != nil || !isItem(accepted.Content["application/json"].Schema) {
		t.Errorf("202: headers %v, content %v: want its own header and the success body", keys(accepted.Headers), mediaTypes(accepted))
	}
}

// TestResponsesRefusedAtRegister: a declaration that cannot mean what it says panics at
// Register with an error that says why.
func TestResponsesRefusedAtRegister(t *testing.T) {
	s := newFixture(t, nil, nil)
	type docs = map[int]apiserver.ResponseDoc
	type content = map[string]apiserver.Body
	type hdrs = map[string]apiserver.HeaderDoc
	success := func(c content) docs { return docs{200: {Content: c}} }
	cases := []struct {
		name      string
		responses docs
		want      string
	}{
		{"no media type", success(content{}), "Content is empty"},
		{"content on another status", docs{201: {Content: content{"application/yaml": {}}}}, "success status (200) only"},
		{"JSON as text", success(content{"application/json": {Kind: apiserver.BodyText}}), "its Kind is BodySameSchema"},
		{"parameters", success(content{"application/yaml; charset=utf-8": {}}), "without parameters"},
		{"empty media type", success(content{"": {Kind: apiserver.BodyText}}), "without parameters"},
		{"upper case", success(content{"Text/CSV": {Kind: apiserver.BodyText}}), "lower-case"},
		{"unknown kind", success(content{"text/csv": {Kind: 7}}), "unknown Kind"},
		{"XMLName without XML", success(content{"application/yaml": {XMLName: "root"}}), "XMLName is for a BodyXML"},
		{"not a status", docs{99: {Description: "?"}}, "not an HTTP status"},
		{"library header", docs{429: {Headers: hdrs{"retry-after": {}}}}, "documented by the library"},
		{"header name", docs{200: {Headers: hdrs{"X Total": {}}}}, "not a header name"},
		{"same header twice", docs{200: {Headers: hdrs{"X-Total": {}, "x-total": {}}}}, "are one header"},
		{"header example", docs{200: {Headers: hdrs{"X-Ratio": {Example: 0.5}}}}, "use a string or an integer"},
	}
	refused := func(register func()) string {
		t.Helper()
		var msg string
		func() {
			defer func() { msg = fmt.Sprint(recover()) }()
			register()
		}()
		return msg
	}
	for i, tc := range cases {
		op := apiserver.Operation{Method: "GET", URL: fmt.Sprintf("/refused/%d", i), Responses: tc.responses}
		msg := refused(func() { apiserver.Register(s, op, getItem) })
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%s: panic %q, want one saying %q", tc.name, msg, tc.want)
		}
	}

	// Content where no body is sent.
	msg := refused(func() {
		apiserver.Register(s, apiserver.Operation{Method: "DELETE", URL: "/refused/nobody",
			Responses: docs{204: {Content: content{"text/plain": {Kind: apiserver.BodyText}}}}},
			func(c *apiserver.Context[user], _ *struct{}) (apiserver.NoBody, error) {
				return apiserver.NoBody{}, nil
			})
	})
	if !strings.Contains(msg, "answers NoBody") {
		t.Errorf("Content on NoBody: panic %q", msg)
	}
	// A header both in Headers and in the Response's header struct, on the same status.
	msg = refused(func() {
		apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/refused/twice",
			Responses: docs{304: {Headers: hdrs{"ETag": {}}}}},
			func(c *apiserver.Context[user], _ *struct{}) (apiserver.Response[taggedHeaders, item], error) {
				return apiserver.Response[taggedHeaders, item]{}, nil
			})
	})
	if !strings.Contains(msg, "declared twice") {
		t.Errorf("a header declared twice: panic %q", msg)
	}
	// The same header on a status the struct's header is not sent on is fine.
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/accepted/elsewhere",
		Responses: docs{http.StatusAccepted: {Headers: hdrs{"ETag": {Description: "The pending result's"}}}}},
		func(c *apiserver.Context[user], _ *struct{}) (apiserver.Response[taggedHeaders, item], error) {
			return apiserver.Response[taggedHeaders, item]{}, nil
		})
}
