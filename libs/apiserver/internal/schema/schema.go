// Package schema derives JSON Schemas from Go types and struct tags, once,
// and uses the same compiled form to coerce request text, to validate
// decoded JSON and to validate handler results, so what is documented is
// exactly what is enforced.
package schema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Schema is the documented JSON Schema (OpenAPI 3.1 dialect) of one value.
type Schema struct {
	Ref                  string             `json:"$ref,omitempty"`
	Type                 any                `json:"type,omitempty"` // a string, or [type, "null"] for pointers
	Format               string             `json:"format,omitempty"`
	Description          string             `json:"description,omitempty"`
	Properties           map[string]*Schema `json:"properties,omitempty"`
	Required             []string           `json:"required,omitempty"`
	AdditionalProperties any                `json:"additionalProperties,omitempty"` // false, or a *Schema for maps
	Items                *Schema            `json:"items,omitempty"`
	Minimum              *float64           `json:"minimum,omitempty"`
	Maximum              *float64           `json:"maximum,omitempty"`
	ExclusiveMinimum     *float64           `json:"exclusiveMinimum,omitempty"`
	ExclusiveMaximum     *float64           `json:"exclusiveMaximum,omitempty"`
	MinLength            *int               `json:"minLength,omitempty"`
	MaxLength            *int               `json:"maxLength,omitempty"`
	Pattern              string             `json:"pattern,omitempty"`
	MinItems             *int               `json:"minItems,omitempty"`
	MaxItems             *int               `json:"maxItems,omitempty"`
	Enum                 []any              `json:"enum,omitempty"`
	Default              any                `json:"default,omitempty"`
	Examples             []any              `json:"examples,omitempty"`
	Deprecated           bool               `json:"deprecated,omitempty"`
}

type kind uint8

const (
	kindAny kind = iota
	kindString
	kindInt
	kindUint
	kindFloat
	kindBool
	kindTime
	kindStruct
	kindSlice
	kindMap
)

// Node is the compiled form of a type (plus the constraints of the field
// that holds it): what validation and coercion walk at request time.
type Node struct {
	Schema *Schema // as documented for this use (may be a $ref)

	typ      reflect.Type // the type after pointers are removed
	kind     kind
	nullable bool // the Go type is a pointer: JSON null is accepted
	bits     int  // integer width for range checks

	elem *Node // slice items, map values
	// fields are the struct's properties in declaration order, behind a
	// pointer that the copies FieldNode makes share: a recursive type's
	// inner references are copied before its fields are all collected.
	fields *[]*Field
	byName map[string]*Field

	min, max, exclMin, exclMax *float64
	minLen, maxLen             *int
	minItems, maxItems         *int
	pattern                    *regexp.Regexp
	enum                       []any
	format                     string
}

// Field is one property of an object, or one request parameter.
type Field struct {
	Name     string // JSON name or parameter name
	Index    []int  // reflect field index path (embedded structs flattened)
	Node     *Node
	Required bool
	Default  reflect.Value // valid when a default is declared
	Tag      reflect.StructTag
}

// Registry builds nodes and collects named object schemas, which the
// OpenAPI document lists under components/schemas.
type Registry struct {
	nodes map[reflect.Type]*Node
	defs  map[string]*Schema
	names map[reflect.Type]string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{nodes: map[reflect.Type]*Node{}, defs: map[string]*Schema{}, names: map[reflect.Type]string{}}
}

// Definitions returns the named schemas, keyed by component name.
func (r *Registry) Definitions() map[string]*Schema { return r.defs }

var (
	timeType       = reflect.TypeOf(time.Time{})
	rawMessageType = reflect.TypeOf(json.RawMessage{})
)

// Type compiles t with no field tags.
func (r *Registry) Type(t reflect.Type) (*Node, error) { return r.FieldNode(t, "") }

// FieldNode compiles t as held by a field with the given tags (description,
// bounds, pattern, enum, default, format ...).
func (r *Registry) FieldNode(t reflect.Type, tag reflect.StructTag) (*Node, error) {
	nullable := false
	for t.Kind() == reflect.Pointer {
		nullable = true
		t = t.Elem()
	}
	base, err := r.typeNode(t)
	if err != nil {
		return nil, err
	}
	n := *base
	n.nullable = nullable
	if base.Schema.Ref != "" {
		// Named struct: refer to the shared definition, with field-level text.
		n.Schema = &Schema{Ref: base.Schema.Ref, Description: tagDoc(tag)}
		if nullable {
			// OpenAPI 3.1 has no "nullable": the JSON Schema way is a oneOf,
			// but a plain $ref reads better in docs, and null is accepted.
			n.Schema.Description = joinDoc(n.Schema.Description, "May be null.")
		}
		return &n, nil
	}
	s := *base.Schema
	n.Schema = &s
	if err := applyTags(&n, tag); err != nil {
		return nil, err
	}
	if nullable && s.Type != nil {
		n.Schema.Type = []any{s.Type, "null"}
	}
	return &n, nil
}

func (r *Registry) typeNode(t reflect.Type) (*Node, error) {
	if n, ok := r.nodes[t]; ok {
		return n, nil
	}
	n := &Node{typ: t}
	switch {
	case t == timeType:
		n.kind, n.Schema = kindTime, &Schema{Type: "string", Format: "date-time"}
		n.format = "date-time"
	case t == rawMessageType:
		n.kind, n.Schema = kindAny, &Schema{}
	default:
		switch t.Kind() {
		case reflect.String:
			n.kind, n.Schema = kindString, &Schema{Type: "string"}
		case reflect.Bool:
			n.kind, n.Schema = kindBool, &Schema{Type: "boolean"}
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			n.kind, n.bits = kindInt, t.Bits()
			n.Schema = &Schema{Type: "integer", Format: intFormat(t.Bits())}
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			n.kind, n.bits = kindUint, t.Bits()
			zero := 0.0
			n.Schema = &Schema{Type: "integer", Format: intFormat(t.Bits()), Minimum: &zero}
			n.min = &zero
		case reflect.Float32, reflect.Float64:
			n.kind, n.bits = kindFloat, t.Bits()
			f := "double"
			if t.Bits() == 32 {
				f = "float"
			}
			n.Schema = &Schema{Type: "number", Format: f}
		case reflect.Slice, reflect.Array:
			if t.Elem().Kind() == reflect.Uint8 {
				n.kind, n.Schema = kindString, &Schema{Type: "string", Format: "byte"}
				break
			}
			elem, err := r.FieldNode(t.Elem(), "")
			if err != nil {
				return nil, err
			}
			n.kind, n.elem = kindSlice, elem
			n.Schema = &Schema{Type: "array", Items: elem.Schema}
		case reflect.Map:
			if t.Key().Kind() != reflect.String {
				return nil, fmt.Errorf("map key type %s: only string keys can be described in JSON", t.Key())
			}
			elem, err := r.FieldNode(t.Elem(), "")
			if err != nil {
				return nil, err
			}
			n.kind, n.elem = kindMap, elem
			n.Schema = &Schema{Type: "object", AdditionalProperties: elem.Schema}
		case reflect.Interface:
			n.kind, n.Schema = kindAny, &Schema{}
		case reflect.Struct:
			return r.structNode(t)
		default:
			return nil, fmt.Errorf("type %s cannot be described as JSON", t)
		}
	}
	r.nodes[t] = n
	return n, nil
}

func intFormat(bits int) string {
	if bits <= 32 {
		return "int32"
	}
	return "int64"
}

func (r *Registry) structNode(t reflect.Type) (*Node, error) {
	n := &Node{typ: t, kind: kindStruct, byName: map[string]*Field{}, fields: new([]*Field)}
	full := &Schema{Type: "object", Properties: map[string]*Schema{}, AdditionalProperties: false}
	if t.Name() != "" {
		name := r.defName(t)
		n.Schema = &Schema{Ref: "#/components/schemas/" + name}
		r.defs[name] = full
	} else {
		n.Schema = full
	}
	r.nodes[t] = n // before the fields: recursive types refer to it
	if err := r.collectFields(n, t, nil); err != nil {
		delete(r.nodes, t)
		return nil, err
	}
	for _, f := range n.Fields() {
		full.Properties[f.Name] = f.Node.Schema
		if f.Required {
			full.Required = append(full.Required, f.Name)
		}
	}
	return n, nil
}

func (r *Registry) defName(t reflect.Type) string {
	if name, ok := r.names[t]; ok {
		return name
	}
	base := t.Name()
	if i := strings.IndexByte(base, '['); i >= 0 { // generic instantiation
		base = base[:i] + "_" + sanitize(base[i:])
	}
	name := base
	for i := 2; ; i++ {
		if _, taken := r.defs[name]; !taken {
			break
		}
		name = fmt.Sprintf("%s%d", base, i)
	}
	r.names[t] = name
	return name
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}

func (r *Registry) collectFields(n *Node, t reflect.Type, index []int) error {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		idx := append(append([]int(nil), index...), i)
		jsonTag := sf.Tag.Get("json")
		if jsonTag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(jsonTag, ",")
		if sf.Anonymous && name == "" {
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if err := r.collectFields(n, ft, idx); err != nil {
					return err
				}
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		fn, err := r.FieldNode(sf.Type, sf.Tag)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", t.Name(), sf.Name, err)
		}
		f := &Field{Name: name, Index: idx, Node: fn, Tag: sf.Tag}
		f.Required = !fn.nullable && !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero")
		if def, ok := sf.Tag.Lookup("default"); ok {
			v, err := fn.ParseText(def)
			if err != nil {
				return fmt.Errorf("%s.%s: default %q: %w", t.Name(), sf.Name, def, err)
			}
			f.Default = v
			f.Required = false
		}
		if req, ok := sf.Tag.Lookup("required"); ok {
			f.Required = req == "true"
		}
		if _, dup := n.byName[name]; dup {
			return fmt.Errorf("%s: two fields are named %q in JSON", t.Name(), name)
		}
		*n.fields = append(*n.fields, f)
		n.byName[name] = f
	}
	return nil
}

func tagDoc(tag reflect.StructTag) string {
	if d, ok := tag.Lookup("doc"); ok {
		return d
	}
	return tag.Get("description")
}

func joinDoc(a, b string) string {
	if a == "" {
		return b
	}
	return a + " " + b
}

// applyTags reads the constraint tags of a field into the node and its schema.
func applyTags(n *Node, tag reflect.StructTag) error {
	s := n.Schema
	s.Description = tagDoc(tag)
	target := n // numeric and string constraints apply to items of a list
	if n.kind == kindSlice {
		elem := *n.elem
		es := *elem.Schema
		elem.Schema = &es
		target = &elem
		n.elem = target
		s.Items = target.Schema
	}
	ts := target.Schema
	num := func(key string, dst **float64, sdst **float64) error {
		v, ok := tag.Lookup(key)
		if !ok {
			return nil
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("tag %s:%q is not a number", key, v)
		}
		*dst, *sdst = &f, &f
		return nil
	}
	integer := func(key string, dst **int, sdst **int) error {
		v, ok := tag.Lookup(key)
		if !ok {
			return nil
		}
		i, err := strconv.Atoi(v)
		if err != nil || i < 0 {
			return fmt.Errorf("tag %s:%q is not a non-negative integer", key, v)
		}
		*dst, *sdst = &i, &i
		return nil
	}
	for _, step := range []func() error{
		func() error { return num("minimum", &target.min, &ts.Minimum) },
		func() error { return num("maximum", &target.max, &ts.Maximum) },
		func() error { return num("exclusiveMinimum", &target.exclMin, &ts.ExclusiveMinimum) },
		func() error { return num("exclusiveMaximum", &target.exclMax, &ts.ExclusiveMaximum) },
		func() error { return integer("minLength", &target.minLen, &ts.MinLength) },
		func() error { return integer("maxLength", &target.maxLen, &ts.MaxLength) },
		func() error { return integer("minItems", &n.minItems, &s.MinItems) },
		func() error { return integer("maxItems", &n.maxItems, &s.MaxItems) },
	} {
		if err := step(); err != nil {
			return err
		}
	}
	if (target.min != nil || target.max != nil || target.exclMin != nil || target.exclMax != nil) &&
		target.kind != kindInt && target.kind != kindUint && target.kind != kindFloat {
		return fmt.Errorf("minimum/maximum apply to numbers, not %s", target.typ)
	}
	if (target.minLen != nil || target.maxLen != nil) && target.kind != kindString {
		return fmt.Errorf("minLength/maxLength apply to strings, not %s", target.typ)
	}
	if (n.minItems != nil || n.maxItems != nil) && n.kind != kindSlice {
		return fmt.Errorf("minItems/maxItems apply to lists, not %s", n.typ)
	}
	if p, ok := tag.Lookup("pattern"); ok {
		if target.kind != kindString {
			return fmt.Errorf("pattern applies to strings, not %s", target.typ)
		}
		re, err := regexp.Compile(p)
		if err != nil {
			return fmt.Errorf("tag pattern:%q: %w", p, err)
		}
		target.pattern, ts.Pattern = re, p
	}
	if f, ok := tag.Lookup("format"); ok {
		target.format, ts.Format = f, f
	}
	if e, ok := tag.Lookup("enum"); ok {
		target.enum, ts.Enum = nil, nil
		for _, part := range strings.Split(e, ",") {
			v, err := target.ParseText(strings.TrimSpace(part))
			if err != nil {
				return fmt.Errorf("tag enum:%q: %w", e, err)
			}
			x := v.Interface()
			if target.kind == kindString {
				x = v.String() // named string types compare as plain text
			}
			target.enum = append(target.enum, x)
			ts.Enum = append(ts.Enum, x)
		}
	}
	if d, ok := tag.Lookup("default"); ok {
		v, err := n.ParseText(d)
		if err != nil {
			return fmt.Errorf("tag default:%q: %w", d, err)
		}
		s.Default = v.Interface()
	}
	if ex, ok := tag.Lookup("example"); ok {
		v, err := exampleValue(n, ex)
		if err != nil {
			return fmt.Errorf("example %q: %w", ex, err)
		}
		s.Examples = []any{v}
	}
	if tag.Get("deprecated") == "true" {
		s.Deprecated = true
	}
	return nil
}

// Fields returns the properties of a struct node.
func (n *Node) Fields() []*Field {
	if n.fields == nil {
		return nil
	}
	return *n.fields
}

// Type is the Go type of the node (without pointers).
func (n *Node) Type() reflect.Type { return n.typ }

// IsStruct reports whether the node is an object with declared fields.
func (n *Node) IsStruct() bool { return n.kind == kindStruct }

// Inline returns the schema with a top-level $ref resolved, for places
// that need the properties themselves (query parameters).
func (r *Registry) Inline(n *Node) *Schema {
	if n.Schema.Ref == "" {
		return n.Schema
	}
	return r.defs[strings.TrimPrefix(n.Schema.Ref, "#/components/schemas/")]
}

// SortedDefinitionNames lists component names in a stable order.
func (r *Registry) SortedDefinitionNames() []string {
	names := make([]string, 0, len(r.defs))
	for k := range r.defs {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// exampleValue is the example tag's value as the document shows it: JSON
// for arrays, maps and structs (`example:"[\"a\",\"b\"]"`), else the text
// read as a query value would be. An example that is not a value of the
// type is a declaration error: the document would show, and Swagger UI
// send, something the endpoint refuses.
func exampleValue(n *Node, text string) (any, error) {
	switch n.typ.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map, reflect.Struct:
		if t := strings.TrimSpace(text); strings.HasPrefix(t, "[") || strings.HasPrefix(t, "{") {
			if err := json.Unmarshal([]byte(t), reflect.New(n.typ).Interface()); err != nil {
				return nil, fmt.Errorf("not a JSON %s: %v", n.typ, err)
			}
			var v any
			if err := json.Unmarshal([]byte(t), &v); err != nil {
				return nil, err
			}
			return v, nil
		}
	}
	v, err := n.ParseText(text)
	if err != nil {
		return nil, err
	}
	if n.kind == kindSlice {
		return []any{v.Interface()}, nil // ParseText reads one item of a list
	}
	return v.Interface(), nil
}
