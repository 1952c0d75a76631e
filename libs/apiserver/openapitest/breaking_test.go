package openapitest_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apistack/platform/libs/apiserver/openapitest"
)

// baseDoc is a small document the cases below change one thing in.
func baseDoc() map[string]any {
	obj := func(props map[string]any, required ...string) map[string]any {
		return map[string]any{"type": "object", "properties": props, "required": required}
	}
	thing := func() map[string]any {
		return obj(map[string]any{
			"id":   map[string]any{"type": "string"},
			"size": map[string]any{"type": "integer"},
			"kind": map[string]any{"type": "string", "enum": []any{"a", "b"}},
		}, "id")
	}
	ok := func(schema map[string]any) map[string]any {
		return map[string]any{"200": map[string]any{"description": "ok",
			"content": map[string]any{"application/json": map[string]any{"schema": schema}}}}
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info":    map[string]any{"title": "t", "version": "1"},
		"paths": map[string]any{
			"/things/{id}": map[string]any{
				"get": map[string]any{
					"parameters": []any{
						map[string]any{"name": "id", "in": "path", "required": true, "schema": map[string]any{"type": "string"}},
						map[string]any{"name": "format", "in": "query", "schema": map[string]any{"type": "string", "enum": []any{"json", "yaml"}}},
					},
					"responses": ok(thing()),
				},
				"delete": map[string]any{
					"parameters": []any{map[string]any{"name": "id", "in": "path", "required": true, "schema": map[string]any{"type": "string"}}},
					"responses":  map[string]any{"204": map[string]any{"description": "gone"}},
				},
			},
			"/things": map[string]any{
				"post": map[string]any{
					"requestBody": map[string]any{"content": map[string]any{"application/json": map[string]any{
						"schema": obj(map[string]any{
							"name": map[string]any{"type": "string"},
							"size": map[string]any{"type": "integer"},
						}, "name")}}},
					"responses": ok(thing()),
				},
			},
		},
	}
}

func encode(t *testing.T, doc map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// at walks doc along keys (map keys, or "0", "1" for list items).
func at(doc map[string]any, keys ...string) map[string]any {
	var cur any = doc
	for _, k := range keys {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[k]
		case []any:
			i := int(k[0] - '0')
			cur = c[i]
		}
	}
	return cur.(map[string]any)
}

func TestBreakingFindsEachKind(t *testing.T) {
	getThing := []string{"paths", "/things/{id}", "get"}
	thingSchema := append(slices.Clone(getThing), "responses", "200", "content", "application/json", "schema")
	postBody := []string{"paths", "/things", "post", "requestBody", "content", "application/json", "schema"}
	cases := []struct {
		name   string
		change func(d map[string]any)
		want   string // "" for a change that breaks no client
	}{
		{"nothing", func(map[string]any) {}, ""},
		{"removed path", func(d map[string]any) { delete(at(d, "paths"), "/things") },
			"removed path /things"},
		{"removed operation", func(d map[string]any) { delete(at(d, "paths", "/things/{id}"), "delete") },
			"removed operation DELETE /things/{id}"},
		{"removed response field", func(d map[string]any) { delete(at(d, append(thingSchema, "properties")...), "size") },
			"GET /things/{id} 200 application/json: removed response field size"},
		{"response type widened", func(d map[string]any) {
			at(d, append(thingSchema, "properties", "size")...)["type"] = []any{"integer", "string"}
		}, "GET /things/{id} 200 application/json.size: response type widened: string"},
		{"new required request field", func(d map[string]any) {
			at(d, postBody...)["required"] = []any{"name", "size"}
		}, "POST /things: request body application/json: new required field size"},
		{"narrowed request type", func(d map[string]any) {
			at(d, append(postBody, "properties", "name")...)["type"] = "integer"
		}, "POST /things: request body application/json.name: narrowed type: string no longer accepted"},
		{"narrowed enum", func(d map[string]any) {
			at(d, append(getThing, "parameters", "1", "schema")...)["enum"] = []any{"json"}
		}, `GET /things/{id}: parameter query format: narrowed enum: "yaml" no longer accepted`},
		{"new required parameter", func(d map[string]any) {
			op := at(d, getThing...)
			op["parameters"] = append(op["parameters"].([]any), map[string]any{"name": "v", "in": "query", "required": true, "schema": map[string]any{"type": "string"}})
		}, "GET /things/{id}: new required parameter query v"},
		{"parameter became required", func(d map[string]any) {
			at(d, append(getThing, "parameters", "1")...)["required"] = true
		}, "GET /things/{id}: parameter query format became required"},
		// Not breaking: new paths, optional request fields, new response
		// fields, a wider request enum, a narrower response type.
		{"additions", func(d map[string]any) {
			at(d, "paths")["/more"] = map[string]any{"get": map[string]any{"responses": map[string]any{"204": map[string]any{"description": "x"}}}}
			at(d, append(postBody, "properties")...)["tags"] = map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
			at(d, append(thingSchema, "properties")...)["color"] = map[string]any{"type": "string"}
			at(d, append(getThing, "parameters", "1", "schema")...)["enum"] = []any{"json", "yaml", "xml"}
			at(d, append(thingSchema, "properties", "kind")...)["enum"] = []any{"a"}
		}, ""},
	}
	base := encode(t, baseDoc())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := baseDoc()
			tc.change(d)
			got, err := openapitest.Breaking(base, encode(t, d))
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			if tc.want != "" {
				want = []string{tc.want}
			}
			if !slices.Equal(got, want) {
				t.Errorf("got %q\nwant %q", got, want)
			}
		})
	}
}

func TestCheckCompatibleHonoursTheAllowFile(t *testing.T) {
	base := encode(t, baseDoc())
	d := baseDoc()
	delete(at(d, "paths"), "/things")
	delete(at(d, "paths", "/things/{id}"), "delete")
	changed := encode(t, d)
	allow := filepath.Join(t.TempDir(), "openapi.breaking")

	err := openapitest.CheckCompatible(base, changed, allow)
	if err == nil || !strings.Contains(err.Error(), "removed path /things\n") || !strings.Contains(err.Error(), "removed operation DELETE /things/{id}") {
		t.Fatalf("no allow file: %v", err)
	}
	if err := os.WriteFile(allow, []byte("# accepted in review\nremoved path /things\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = openapitest.CheckCompatible(base, changed, allow)
	if err == nil || strings.Contains(err.Error(), "removed path /things\n") || !strings.Contains(err.Error(), "removed operation DELETE") {
		t.Fatalf("one change allowed: %v", err)
	}
	if err := os.WriteFile(allow, []byte("removed path /things\nremoved operation DELETE /things/{id}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := openapitest.CheckCompatible(base, changed, allow); err != nil {
		t.Fatalf("both allowed: %v", err)
	}
}

func TestCommittedDocument(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	c := openapitest.Committed{Path: "openapi.json", AllowFile: "openapi.breaking", UpdateHint: "the update"}
	base := encode(t, baseDoc())
	d := baseDoc()
	at(d, "paths")["/more"] = map[string]any{"get": map[string]any{"responses": map[string]any{"204": map[string]any{"description": "x"}}}}
	added := encode(t, d)
	d = baseDoc()
	delete(at(d, "paths"), "/things")
	removed := encode(t, d)

	if err := c.Compare(base, true); err != nil {
		t.Fatalf("first update: %v", err)
	}
	if err := c.Compare(base, false); err != nil {
		t.Fatalf("unchanged: %v", err)
	}
	if err := c.Compare(added, false); err == nil || !strings.Contains(err.Error(), "run the update") {
		t.Fatalf("a live document that differs: %v", err)
	}
	if err := c.Compare(removed, true); err == nil || !strings.Contains(err.Error(), "removed path /things") {
		t.Fatalf("a breaking update: %v", err)
	}
	if b, _ := os.ReadFile("openapi.json"); string(b) != string(base) {
		t.Fatal("a refused update rewrote the document")
	}
	if err := c.Compare(added, true); err != nil {
		t.Fatalf("an addition: %v", err)
	}

	// Against a git base: a document edited by hand to break clients.
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	git("init", "-q")
	git("add", "openapi.json")
	git("commit", "-qm", "base")
	if err := os.WriteFile("openapi.json", removed, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OPENAPI_BASE", "HEAD")
	if err := c.Compare(removed, false); err == nil || !strings.Contains(err.Error(), "against HEAD") {
		t.Fatalf("a hand-edited breaking document: %v", err)
	}
	if err := os.WriteFile("openapi.breaking", []byte("removed path /more\nremoved path /things\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.Compare(removed, false); err != nil {
		t.Fatalf("the same, allowed: %v", err)
	}
}
