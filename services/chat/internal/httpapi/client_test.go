package httpapi_test

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/apistack/platform/libs/apiserver/openapitest"
)

var updateOpenAPI = flag.Bool("update-openapi", false, "rewrite openapi.json from the live document, unless the change breaks clients and openapi.breaking does not allow it")

// liveDocument is the document the service serves, indented as committed.
func liveDocument(t *testing.T, s *stack) []byte {
	t.Helper()
	r := s.must(200, "GET", "/openapi.json", "", nil, nil)
	doc, err := openapitest.Indent(r.Raw)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestOpenAPIDocument: the committed openapi.json is the live document, and
// a change to it that breaks clients is listed in openapi.breaking (see
// openapitest.Committed; CI also compares with the pull request's base).
func TestOpenAPIDocument(t *testing.T) {
	s := newStack(t, engine{name: "memory"}, stackOptions{})
	openapitest.Committed{
		Path:       "openapi.json",
		AllowFile:  "openapi.breaking",
		UpdateHint: "go test ./internal/httpapi -run TestOpenAPIDocument -update-openapi",
	}.Check(t, liveDocument(t, s), *updateOpenAPI)
}

// TestGeneratedClient: a client oapi-codegen generates from the live
// document compiles and calls the service's main operations against a live
// server (testdata/genclient/client_test.go).
func TestGeneratedClient(t *testing.T) {
	s := newStack(t, engine{name: "memory"}, stackOptions{})
	openapitest.GeneratedClient{
		Document: liveDocument(t, s),
		Tests:    []string{filepath.Join("testdata", "genclient", "client_test.go")},
		Env:      []string{"ADMIN_TOKEN=" + adminToken},
	}.Run(t, s.URL)
}
