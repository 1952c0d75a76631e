package schema

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

type role string

type base struct {
	CreatedAt time.Time `json:"created_at"`
}

type node struct {
	base
	Name     string           `json:"name" minLength:"1" maxLength:"5" pattern:"^[a-z]+$"`
	Role     role             `json:"role" enum:"admin,user" default:"user"`
	Score    *float64         `json:"score,omitempty" exclusiveMinimum:"0" maximum:"10"`
	Children []*node          `json:"children,omitempty" maxItems:"2"`
	Meta     map[string]int8  `json:"meta,omitempty"`
	Tags     []string         `json:"tags,omitempty" enum:"a,b"`
	Raw      json.RawMessage  `json:"raw,omitempty"`
	Any      any              `json:"any,omitempty"`
	Ignored  string           `json:"-"`
	Lookup   map[string]*node `json:"lookup,omitempty"`
}

func decode(t *testing.T, s string) any { return decodeB(t, s) }

func decodeB(t testing.TB, s string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestCheckJSON(t *testing.T) {
	reg := NewRegistry()
	n, err := reg.Type(reflect.TypeFor[node]())
	if err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		doc  string
		want []string // "field: message" fragments; none means valid
	}{
		{`{"created_at":"2024-01-01T00:00:00Z","name":"ab"}`, nil},
		{`{"created_at":"2024-01-01T00:00:00Z","name":"ab","role":"admin","score":10,"children":[{"created_at":"2024-01-01T00:00:00Z","name":"c"}],"meta":{"x":127},"tags":["a"],"raw":{"free":1},"any":[1,"x"]}`, nil},
		{`{"name":"ab"}`, []string{"x.created_at: is required"}},
		{`{"created_at":"yesterday","name":"ab"}`, []string{"x.created_at: must be an RFC 3339 date-time"}},
		{`{"created_at":"2024-01-01T00:00:00Z","name":""}`, []string{"x.name: must not be empty", "x.name: must match the pattern"}},
		{`{"created_at":"2024-01-01T00:00:00Z","name":"abcdef"}`, []string{"x.name: must be at most 5 characters long"}},
		{`{"created_at":"2024-01-01T00:00:00Z","name":"ab","role":"root"}`, []string{"x.role: must be one of: admin, user"}},
		{`{"created_at":"2024-01-01T00:00:00Z","name":"ab","score":0}`, []string{"x.score: must be greater than 0"}},
		{`{"created_at":"2024-01-01T00:00:00Z","name":"ab","score":null}`, nil},
		{`{"created_at":"2024-01-01T00:00:00Z","name":"ab","meta":{"x":128}}`, []string{"x.meta.x: expected an integer that fits in 8 bits"}},
		{`{"created_at":"2024-01-01T00:00:00Z","name":"ab","children":[{},{},{}]}`, []string{"x.children: must have at most 2 items, got 3"}}, // items past maxItems are not walked
		{`{"created_at":"2024-01-01T00:00:00Z","name":"ab","tags":["a","c"]}`, []string{"x.tags[1]: must be one of: a, b"}},
		{`{"created_at":"2024-01-01T00:00:00Z","name":"ab","Ignored":"x"}`, []string{"x.Ignored: is not an allowed field"}},
		{`{"created_at":"2024-01-01T00:00:00Z","name":"ab","lookup":{"k":{"name":"Q"}}}`, []string{"x.lookup.k.created_at: is required", "x.lookup.k.name: must match"}},
		{`[]`, []string{"x: expected an object, got an array"}},
		{`{"created_at":"2024-01-01T00:00:00Z","name":1.5}`, []string{"x.name: expected a string, got a number"}},
	}
	for _, r := range rows {
		var errs Errors
		n.CheckJSON(decode(t, r.doc), "x", &errs)
		got := make([]string, len(errs))
		for i, e := range errs {
			got[i] = e.Field + ": " + e.Message
		}
		if len(r.want) == 0 && len(got) > 0 {
			t.Errorf("%s: unexpected %v", r.doc, got)
		}
		for _, w := range r.want {
			found := false
			for _, g := range got {
				found = found || strings.Contains(g, w)
			}
			if !found {
				t.Errorf("%s: no violation like %q in %v", r.doc, w, got)
			}
		}
	}
}

func TestDefaultsAndRecursiveDefinitions(t *testing.T) {
	reg := NewRegistry()
	n, err := reg.Type(reflect.TypeFor[node]())
	if err != nil {
		t.Fatal(err)
	}
	doc := `{"created_at":"2024-01-01T00:00:00Z","name":"ab","children":[{"created_at":"2024-01-01T00:00:00Z","name":"c","role":"admin"},{"created_at":"2024-01-01T00:00:00Z","name":"d"}]}`
	var v node
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatal(err)
	}
	n.ApplyDefaults(decode(t, doc), reflect.ValueOf(&v).Elem())
	if v.Role != "user" || v.Children[0].Role != "admin" || v.Children[1].Role != "user" {
		t.Fatalf("defaults: %q %q %q", v.Role, v.Children[0].Role, v.Children[1].Role)
	}
	def := reg.Definitions()["node"]
	if def == nil {
		t.Fatalf("no definition for node: %v", reg.SortedDefinitionNames())
	}
	if got := def.Properties["children"].Items.Ref; got != "#/components/schemas/node" {
		t.Errorf("recursive items ref = %q", got)
	}
	if _, ok := def.Properties["created_at"]; !ok {
		t.Error("embedded struct fields are not flattened")
	}
	if _, ok := def.Properties["Ignored"]; ok {
		t.Error(`json:"-" field documented`)
	}
	b, err := json.Marshal(def.Properties["score"])
	if err != nil || !bytes.Contains(b, []byte(`"type":["number","null"]`)) {
		t.Errorf("pointer field schema = %s", b)
	}
	req := strings.Join(def.Required, ",")
	if req != "created_at,name" {
		t.Errorf("required = %s", req)
	}
}

func TestCheckValueOnResults(t *testing.T) {
	reg := NewRegistry()
	n, err := reg.Type(reflect.TypeFor[[]node]())
	if err != nil {
		t.Fatal(err)
	}
	bad := -1.0
	vals := []node{{Name: "ok", Role: "user"}, {Name: "BAD", Role: "root", Score: &bad}}
	var errs Errors
	n.CheckValue(reflect.ValueOf(vals), "response", &errs)
	want := map[string]bool{"response[1].name": true, "response[1].role": true, "response[1].score": true}
	for _, e := range errs {
		delete(want, e.Field)
	}
	if len(want) > 0 {
		t.Errorf("missing violations %v in %v", want, errs)
	}
}

func TestBadTagsAreRefused(t *testing.T) {
	type s1 struct {
		A int `json:"a" minimum:"one"`
	}
	type s2 struct {
		A string `json:"a" pattern:"("`
	}
	type s3 struct {
		A int `json:"a" enum:"x"`
	}
	type s4 struct {
		A map[int]string `json:"a"`
	}
	// Two fields with one JSON name, built at run time (vet rightly
	// refuses such a struct in source).
	s5 := reflect.StructOf([]reflect.StructField{
		{Name: "A", Type: reflect.TypeFor[string](), Tag: `json:"a"`},
		{Name: "B", Type: reflect.TypeFor[string](), Tag: `json:"a"`},
	})
	for _, typ := range []reflect.Type{reflect.TypeFor[s1](), reflect.TypeFor[s2](), reflect.TypeFor[s3](), reflect.TypeFor[s4](), s5} {
		if _, err := NewRegistry().Type(typ); err == nil {
			t.Errorf("%v: accepted", typ)
		}
	}
}

func FuzzParseText(f *testing.F) {
	reg := NewRegistry()
	type params struct {
		I  int8      `query:"i"`
		U  uint16    `query:"u"`
		F  float32   `query:"f"`
		B  bool      `query:"b"`
		T  time.Time `query:"t"`
		Ls []int     `query:"ls"`
	}
	typ := reflect.TypeFor[params]()
	var nodes []*Node
	for i := 0; i < typ.NumField(); i++ {
		n, err := reg.FieldNode(typ.Field(i).Type, typ.Field(i).Tag)
		if err != nil {
			f.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	for _, seed := range []string{"1", "-129", "65536", "1e40", "NaN", "true", "2024-01-01T00:00:00Z", "", " 1", "0x10"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i, n := range nodes {
			v := reflect.New(typ.Field(i).Type).Elem()
			if err := n.SetText(v, s); err != nil {
				if !strings.Contains(err.Error(), "expected") {
					t.Fatalf("error without an explanation: %v", err)
				}
				continue
			}
			var errs Errors
			n.CheckValue(v, "q", &errs)
		}
	})
}

// TestExamplesAreValuesOfTheirType: an array example written as JSON is an
// array in the document, a bare word on a list is a one-item list, and an
// example that is not a value of the type is refused at registration.
func TestExamplesAreValuesOfTheirType(t *testing.T) {
	type ok struct {
		List  []string       `json:"list" example:"[\"8.8.8.8\",\"1.1.1.1\"]"`
		One   []int          `json:"one" example:"3"`
		Map   map[string]int `json:"map" example:"{\"a\":1}"`
		Count int            `json:"count" example:"4"`
	}
	n, err := NewRegistry().Type(reflect.TypeFor[ok]())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range n.Fields() {
		b, _ := json.Marshal(f.Node.Schema.Examples)
		got[f.Name] = string(b)
	}
	want := map[string]string{"list": `[["8.8.8.8","1.1.1.1"]]`, "one": `[[3]]`, "map": `[{"a":1}]`, "count": `[4]`}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s examples = %s, want %s", k, got[k], w)
		}
	}
	type badList struct {
		A []int `json:"a" example:"[\"x\"]"`
	}
	type badInt struct {
		A int `json:"a" example:"four"`
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[badList](), reflect.TypeFor[badInt]()} {
		if _, err := NewRegistry().Type(typ); err == nil || !strings.Contains(err.Error(), "example") {
			t.Errorf("%v: err = %v, want the example refused", typ, err)
		}
	}
}
