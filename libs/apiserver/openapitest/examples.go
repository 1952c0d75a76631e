// Package openapitest checks a served OpenAPI document with an independent
// validator (kin-openapi): its examples against their own schemas, and real
// HTTP answers against the operations they answer (status, headers, body).
// Services use it in their integration tests so every test is also a
// contract test.
package openapitest

import (
	"context"
	"fmt"
	"sort"

	"github.com/getkin/kin-openapi/openapi3"
)

// Load parses and validates a document (OpenAPI 3.1).
func Load(docJSON []byte) (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(docJSON)
	if err != nil {
		return nil, fmt.Errorf("load the document: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("the document is not valid OpenAPI: %w", err)
	}
	return doc, nil
}

// ExampleErrors checks every example of every operation against the
// schema it illustrates: parameter, header and media-type examples
// (request bodies and responses, every media type), and the `example` and
// `examples` of every schema reachable from them, at any depth. It returns
// one error per example that does not validate; the count says how many
// examples were checked, so a caller can tell an empty walk from a clean one.
func ExampleErrors(doc *openapi3.T) (checked int, errs []error) {
	w := &walker{seen: map[*openapi3.Schema]bool{}}
	paths := doc.Paths.InMatchingOrder()
	sort.Strings(paths)
	for _, path := range paths {
		item := doc.Paths.Value(path)
		ops := item.Operations()
		methods := make([]string, 0, len(ops))
		for m := range ops {
			methods = append(methods, m)
		}
		sort.Strings(methods)
		for _, method := range methods {
			op := ops[method]
			where := method + " " + path
			for _, p := range append(append(openapi3.Parameters{}, item.Parameters...), op.Parameters...) {
				if p.Value == nil {
					continue
				}
				pw := where + " parameter " + p.Value.Name
				w.value(pw, p.Value.Schema, p.Value.Example, p.Value.Examples)
				w.content(pw, p.Value.Content)
			}
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				w.content(where+" request body", op.RequestBody.Value.Content)
			}
			if op.Responses != nil {
				codes := make([]string, 0, op.Responses.Len())
				for code := range op.Responses.Map() {
					codes = append(codes, code)
				}
				sort.Strings(codes)
				for _, code := range codes {
					w.response(where+" "+code, op.Responses.Value(code))
				}
			}
		}
	}
	if doc.Components != nil {
		names := make([]string, 0, len(doc.Components.Schemas))
		for name := range doc.Components.Schemas {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			w.schema("components.schemas."+name, doc.Components.Schemas[name])
		}
		for name, r := range doc.Components.Responses {
			w.response("components.responses."+name, r)
		}
	}
	return w.checked, w.errs
}

type walker struct {
	seen    map[*openapi3.Schema]bool
	checked int
	errs    []error
}

func (w *walker) response(where string, r *openapi3.ResponseRef) {
	if r == nil || r.Value == nil {
		return
	}
	for name, h := range r.Value.Headers {
		if h.Value != nil {
			w.value(where+" header "+name, h.Value.Schema, h.Value.Example, h.Value.Examples)
		}
	}
	w.content(where, r.Value.Content)
}

func (w *walker) content(where string, c openapi3.Content) {
	types := make([]string, 0, len(c))
	for mt := range c {
		types = append(types, mt)
	}
	sort.Strings(types)
	for _, mt := range types {
		m := c[mt]
		w.value(where+" "+mt, m.Schema, m.Example, m.Examples)
	}
}

// value checks an example and named examples against s, then walks s.
func (w *walker) value(where string, s *openapi3.SchemaRef, example any, examples openapi3.Examples) {
	if s == nil || s.Value == nil {
		return
	}
	if example != nil {
		w.check(where+" example", s.Value, example)
	}
	for name, ex := range examples {
		if ex != nil && ex.Value != nil && ex.Value.Value != nil {
			w.check(where+" examples."+name, s.Value, ex.Value.Value)
		}
	}
	w.schema(where, s)
}

// schema checks the schema's own examples and walks into its subschemas;
// each schema is walked once (types may be recursive).
func (w *walker) schema(where string, ref *openapi3.SchemaRef) {
	if ref == nil || ref.Value == nil || w.seen[ref.Value] {
		return
	}
	s := ref.Value
	w.seen[s] = true
	if s.Example != nil {
		w.check(where+" schema example", s, s.Example)
	}
	for i, ex := range s.Examples {
		w.check(fmt.Sprintf("%s schema examples[%d]", where, i), s, ex)
	}
	props := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		props = append(props, name)
	}
	sort.Strings(props)
	for _, name := range props {
		w.schema(where+"."+name, s.Properties[name])
	}
	w.schema(where+"[]", s.Items)
	w.schema(where+".additionalProperties", s.AdditionalProperties.Schema)
	for i, sub := range s.PrefixItems {
		w.schema(fmt.Sprintf("%s.prefixItems[%d]", where, i), sub)
	}
	for _, group := range []struct {
		name string
		refs openapi3.SchemaRefs
	}{{"allOf", s.AllOf}, {"anyOf", s.AnyOf}, {"oneOf", s.OneOf}} {
		for i, sub := range group.refs {
			w.schema(fmt.Sprintf("%s.%s[%d]", where, group.name, i), sub)
		}
	}
	w.schema(where+".not", s.Not)
}

func (w *walker) check(where string, s *openapi3.Schema, v any) {
	w.checked++
	if err := s.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()); err != nil {
		w.errs = append(w.errs, fmt.Errorf("%s: %v does not match its schema: %w", where, short(v), err))
	}
}

func short(v any) string {
	s := fmt.Sprintf("%#v", v)
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}
