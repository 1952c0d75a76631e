package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/apistack/platform/libs/apiserver/openapitest"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// TestOpenAPIDocumentsEveryEndpoint reads /openapi.json: every endpoint of
// the API with a summary, a tag and its error statuses, authenticated
// ones marked so, and the permission table the service enforces in the
// description.
func TestOpenAPIDocumentsEveryEndpoint(t *testing.T) {
	s := newStack(t, engine{name: "memory"}, stackOptions{})
	var doc struct {
		Info struct {
			Description string `json:"description"`
		} `json:"info"`
		Paths map[string]map[string]struct {
			Summary   string                     `json:"summary"`
			Tags      []string                   `json:"tags"`
			Security  []map[string]any           `json:"security"`
			Responses map[string]json.RawMessage `json:"responses"`
		} `json:"paths"`
	}
	s.must(200, "GET", "/openapi.json", "", nil, &doc)
	if !strings.Contains(doc.Info.Description, chat.PermissionsMarkdown()) {
		t.Fatalf("the description lacks the permission table:\n%s", doc.Info.Description)
	}
	want := []struct {
		method, path string
		public       bool
		statuses     string
	}{
		{"get", "/api/v1/messages", true, "200 400 503"},
		{"post", "/api/v1/messages/send", false, "201 202 400 401 403 422 429 503"},
		{"delete", "/api/v1/messages/{id}", false, "200 401 403 404 503"},
		{"post", "/api/v1/commands", false, "201 400 401 403 409 503"},
		{"get", "/api/v1/commands", true, "200 503"},
		{"get", "/api/v1/commands/{name}", true, "200 404 503"},
		{"patch", "/api/v1/commands/{name}", false, "200 400 403 404 409"},
		{"delete", "/api/v1/commands/{name}", false, "204 403 404"},
		{"post", "/api/v1/users", false, "201 400 403 409"},
		{"get", "/api/v1/users", false, "200 403"},
		{"get", "/api/v1/users/me", false, "200 401"},
		{"get", "/api/v1/users/{id}", false, "200 403 404"},
		{"patch", "/api/v1/users/{id}", false, "200 400 403 404"},
		{"delete", "/api/v1/users/{id}", false, "204 403 404"},
		{"post", "/api/v1/users/{id}/timeout", false, "200 400 403 404 409"},
		{"post", "/api/v1/users/{id}/ban", false, "200 403 404 409"},
		{"delete", "/api/v1/users/{id}/ban", false, "200 403 404"},
		{"get", "/api/v1/filters", false, "200 403"},
		{"post", "/api/v1/filters", false, "201 400 403"},
		{"delete", "/api/v1/filters/{id}", false, "204 403 404"},
		{"get", "/api/v1/channels/{channel}", true, "200 400"},
		{"patch", "/api/v1/channels/{channel}", false, "200 400 403"},
		{"get", "/api/v1/channels/{channel}/roles", false, "200 400 403"},
		{"put", "/api/v1/channels/{channel}/roles/{user_id}", false, "200 400 403 404 409"},
		{"delete", "/api/v1/channels/{channel}/roles/{user_id}", false, "204 400 403 404 409"},
		{"get", "/api/v1/channels/{channel}/held", false, "200 400 403"},
		{"post", "/api/v1/channels/{channel}/held/{id}/approve", false, "201 403 404 409"},
		{"delete", "/api/v1/channels/{channel}/held/{id}", false, "204 403 404"},
		{"get", "/api/v1/channels/{channel}/modlog", false, "200 400 403"},
		{"get", "/api/v1/channels/{channel}/users/{id}/messages", false, "200 400 403"},
		{"post", "/api/v1/channels/{channel}/users/{id}/purge", false, "200 400 403 404"},
		{"get", "/api/v1/permissions", true, "200"},
		{"post", "/api/v1/webhooks", false, "201 400 401 403 409 503"},
		{"get", "/api/v1/webhooks", false, "200 400 403"},
		{"delete", "/api/v1/webhooks/{id}", false, "204 404"},
		{"get", "/api/v1/webhooks/{id}/deliveries", false, "200 400 404"},
		{"post", "/api/v1/webhooks/{id}/deliveries/{delivery}/retry", false, "200 404 409"},
	}
	n := 0
	for _, ops := range doc.Paths {
		n += len(ops)
	}
	if n != len(want) {
		t.Errorf("%d operations documented, want %d", n, len(want))
	}
	for _, w := range want {
		op, ok := doc.Paths[w.path][w.method]
		if !ok {
			t.Errorf("%s %s is not documented", w.method, w.path)
			continue
		}
		if op.Summary == "" || len(op.Tags) == 0 {
			t.Errorf("%s %s: no summary or tag", w.method, w.path)
		}
		if (len(op.Security) == 0) != w.public {
			t.Errorf("%s %s: public=%v but security=%v", w.method, w.path, w.public, op.Security)
		}
		for _, st := range strings.Fields(w.statuses) {
			if _, ok := op.Responses[st]; !ok {
				t.Errorf("%s %s: status %s is not documented", w.method, w.path, st)
			}
		}
	}
	// Swagger UI is served.
	if r := s.call("GET", "/docs/index.html", "", nil); r.Status != 200 {
		if r2 := s.call("GET", "/docs", "", nil); r2.Status != 200 && r2.Status != 301 && r2.Status != 302 {
			t.Fatalf("/docs: %d / %d", r.Status, r2.Status)
		}
	}
}

// TestPrivateReadDocumented: with CHAT_PUBLIC_READ=false the reads say so.
func TestPrivateReadDocumented(t *testing.T) {
	s := newStack(t, engine{name: "memory"}, stackOptions{privateRead: true})
	var doc struct {
		Paths map[string]map[string]struct {
			Security []map[string]any `json:"security"`
		} `json:"paths"`
	}
	s.must(200, "GET", "/openapi.json", "", nil, &doc)
	for _, p := range []string{"/api/v1/messages", "/api/v1/commands", "/api/v1/commands/{name}", "/api/v1/channels/{channel}"} {
		if len(doc.Paths[p]["get"].Security) == 0 {
			t.Errorf("GET %s is documented as public", p)
		}
	}
}

// TestContractIsChecked: the stack's client checks answers against the
// service's document (so every test using it is a contract test), and the
// document's examples validate against their schemas.
func TestContractIsChecked(t *testing.T) {
	s := newStack(t, engine{name: "memory"}, stackOptions{})
	s.must(200, "GET", "/api/v1/messages", "", nil, nil)
	s.must(200, "GET", "/api/v1/users/me", adminToken, nil, nil)
	s.call("POST", "/api/v1/messages/send", "", map[string]any{"message": "hi"})
	s.call("PUT", "/api/v1/messages", "", nil)
	s.call("GET", "/healthz", "", nil) // not an operation: not counted
	if n := s.contract.Checked(); n != 4 {
		t.Errorf("%d answers checked against the document, want 4", n)
	}
	checked, errs := openapitest.ExampleErrors(s.contract.Doc())
	for _, err := range errs {
		t.Error(err)
	}
	if checked < 10 {
		t.Errorf("only %d examples checked", checked)
	}
}
