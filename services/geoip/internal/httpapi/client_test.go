package httpapi

import (
	"flag"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/apistack/platform/libs/apiserver/openapitest"
)

var updateOpenAPI = flag.Bool("update-openapi", false, "rewrite openapi.json from the live document, unless the change breaks clients and openapi.breaking does not allow it")

// liveDocument is the document a server with default options and a keys file
// (GEOIP_KEYS_FILE, which adds the key schemes) serves, indented as committed.
func liveDocument(t *testing.T) []byte {
	t.Helper()
	s := newTestServer(t, newFixtureDB(), withKeys(t, `{"keys": []}`))
	rec := s.get("/openapi.json")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /openapi.json: %d", rec.Code)
	}
	doc, err := openapitest.Indent(rec.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestOpenAPIDocument: the committed openapi.json is the live document, and
// a change to it that breaks clients is listed in openapi.breaking (see
// openapitest.Committed; CI also compares with the pull request's base).
func TestOpenAPIDocument(t *testing.T) {
	openapitest.Committed{
		Path:       "openapi.json",
		AllowFile:  "openapi.breaking",
		UpdateHint: "go test ./internal/httpapi -run TestOpenAPIDocument -update-openapi",
	}.Check(t, liveDocument(t), *updateOpenAPI)
}

// TestGeneratedClient: a client oapi-codegen generates from the live
// document compiles and calls the service's main operations against a live
// server (testdata/genclient/client_test.go).
func TestGeneratedClient(t *testing.T) {
	s := newTestServer(t, newFixtureDB())
	ts := httptest.NewServer(s.srv.Handler())
	t.Cleanup(ts.Close)
	openapitest.GeneratedClient{
		Document: liveDocument(t),
		// The YAML answer has the JSON keys (snake_case, as ipapi.co's);
		// without yaml tags go.yaml.in/yaml/v3 matches keys to lowercased
		// field names and leaves country_name empty.
		YAMLTags: true,
		Tests:    []string{filepath.Join("testdata", "genclient", "client_test.go")},
		Env:      []string{"REASON_INVALID=" + reasonInvalid},
	}.Run(t, ts.URL)
}
