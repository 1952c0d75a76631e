package apiserver

import (
	"fmt"
	"maps"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strings"
)

// ResponseDoc declares one answer of an operation, in huma's shape: the status maps to a
// description, the media types of the body with their schemas, and headers.
//
// On the success status (Operation.Status), a nil Content is the response type as JSON;
// a Content lists every media type the success answer may have, "application/json"
// included only when JSON is one of them (errors stay JSON either way). Other 2xx
// statuses share the success answer's media types, so only the success status takes a
// Content. Any other status documents an answer by its Description (an error answers
// with the standard error body, or an ErrorBody's).
type ResponseDoc struct {
	Description string // default: the status text
	// Content maps a media type without parameters (application/yaml, text/csv) to what
	// its body is. The handler writes those other than JSON itself, through Context or
	// as a Response's Raw body with ContentType.
	Content map[string]Body
	// Headers documents the headers the handler sends itself on this answer, by name.
	// Headers of a Response's header struct are documented from their tags instead, and
	// the library documents its own (X-Request-Id, RateLimit-*, Retry-After, ...).
	Headers map[string]HeaderDoc
}

// Body says what the body of one media type is.
type Body struct {
	Kind        BodyKind
	XMLName     string // BodyXML: the root element's name
	Description string // its layout, for a text body (CSV's columns)
}

// BodyKind says what schema a media type's body has.
type BodyKind int

const (
	// BodySameSchema: the response type's schema, as in JSON (YAML, the argument of a
	// JSONP call).
	BodySameSchema BodyKind = iota
	// BodyText: a string (plain text, CSV); Body.Description says its layout.
	BodyText
	// BodyXML: the response type's schema, one element per property named as in JSON,
	// inside a root element named XMLName.
	BodyXML
)

// HeaderDoc documents a response header the handler sets itself.
type HeaderDoc struct {
	Description string
	Required    bool // sent on every answer of its status
	// Example is a value of the header's type, a string or an integer: it gives the
	// schema's type and its example. Nil documents a string without an example.
	Example any
}

// libraryHeaders are the response headers the library documents itself (headers.go,
// openapi.go): a declaration would be overwritten or contradict it. Content-Type is
// what Content says.
var libraryHeaders = map[string]bool{
	"X-Request-Id": true, "Ratelimit-Limit": true, "Ratelimit-Remaining": true, "Ratelimit-Reset": true,
	"Retry-After": true, "Www-Authenticate": true, "Allow": true, "Content-Type": true,
}

// checkResponses refuses declarations that cannot mean what they say; Register panics
// with the error. op.Status is resolved (200 or 204 by default); declared are the headers
// of the handler's Response (nil when it returns its body type).
func checkResponses(op *Operation, noBody bool, declared []respHeader) error {
	for _, code := range slices.Sorted(maps.Keys(op.Responses)) {
		r := op.Responses[code]
		if code < 100 || code > 599 {
			return fmt.Errorf("response %d: not an HTTP status", code)
		}
		if r.Content != nil {
			if code != op.Status {
				return fmt.Errorf("response %d: Content is declared on the success status (%d) only: other 2xx answers share its media types and errors are JSON", code, op.Status)
			}
			if noBody {
				return fmt.Errorf("response %d: Content on an operation that answers NoBody", code)
			}
			if len(r.Content) == 0 {
				return fmt.Errorf("response %d: Content is empty: leave it nil for the response type's JSON, or list every media type the answer may have", code)
			}
		}
		for mt, b := range r.Content {
			if err := checkBody(mt, b); err != nil {
				return fmt.Errorf("response %d: %w", code, err)
			}
		}
		seen := map[string]string{}
		for name, h := range r.Headers {
			key := http.CanonicalHeaderKey(name)
			if name == "" || strings.ContainsAny(name, " \t\r\n:") {
				return fmt.Errorf("response %d: header %q is not a header name", code, name)
			}
			if other, dup := seen[key]; dup {
				return fmt.Errorf("response %d: headers %s and %s are one header", code, other, name)
			}
			seen[key] = name
			if libraryHeaders[key] {
				return fmt.Errorf("response %d: header %s is documented by the library", code, name)
			}
			if h.Example != nil {
				if _, ok := headerType(reflect.TypeOf(h.Example)); !ok {
					return fmt.Errorf("response %d: header %s: Example is a %T: use a string or an integer", code, name, h.Example)
				}
			}
			for _, d := range declared {
				on := slices.Contains(d.statuses, code) || len(d.statuses) == 0 && code == op.Status
				if on && http.CanonicalHeaderKey(d.name) == key {
					return fmt.Errorf("response %d: header %s is declared twice: in Headers and in the Response's header struct", code, name)
				}
			}
		}
	}
	return nil
}

func checkBody(mt string, b Body) error {
	parsed, params, err := mime.ParseMediaType(mt)
	if err != nil || parsed != mt || len(params) > 0 {
		return fmt.Errorf("media type %q: give a lower-case media type without parameters (application/yaml, not application/yaml; charset=utf-8)", mt)
	}
	if b.Kind < BodySameSchema || b.Kind > BodyXML {
		return fmt.Errorf("media type %s: unknown Kind %d", mt, b.Kind)
	}
	if mt == "application/json" && b.Kind != BodySameSchema {
		return fmt.Errorf("media type %s is the response type's JSON: its Kind is BodySameSchema", mt)
	}
	if b.XMLName != "" && b.Kind != BodyXML {
		return fmt.Errorf("media type %s: XMLName is for a BodyXML body", mt)
	}
	return nil
}

// headerType is the schema type of a header's Go type.
func headerType(t reflect.Type) (string, bool) {
	switch t.Kind() {
	case reflect.String:
		return "string", true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer", true
	}
	return "", false
}

// successMediaTypes lists the media types of the success answer: JSON, or what its
// Content declares, sorted.
func (op *Operation) successMediaTypes() []string {
	content := op.Responses[op.Status].Content
	if content == nil {
		return []string{"application/json"}
	}
	return slices.Sorted(maps.Keys(content))
}

// successJSON reports whether the success answer may be JSON.
func (op *Operation) successJSON() bool {
	content := op.Responses[op.Status].Content
	_, ok := content["application/json"]
	return content == nil || ok
}

// doc is the OpenAPI header object.
func (h HeaderDoc) doc() map[string]any {
	sch := map[string]any{"type": "string"}
	if h.Example != nil {
		typ, _ := headerType(reflect.TypeOf(h.Example))
		sch = map[string]any{"type": typ, "examples": []any{h.Example}}
	}
	d := map[string]any{"schema": sch}
	if h.Description != "" {
		d["description"] = h.Description
	}
	if h.Required {
		d["required"] = true
	}
	return d
}

// successContent is the OpenAPI content of the success answer.
func (ep *endpoint[A, In, Out]) successContent() map[string]any {
	declared := ep.op.Responses[ep.op.Status].Content
	if declared == nil {
		return map[string]any{"application/json": map[string]any{"schema": ep.out.Schema}}
	}
	content := make(map[string]any, len(declared))
	for mt, b := range declared {
		if mt == "application/json" && b.Description == "" {
			content[mt] = map[string]any{"schema": ep.out.Schema}
			continue
		}
		var sch map[string]any
		switch b.Kind {
		case BodyText:
			sch = map[string]any{"type": "string"}
		default:
			sch = schemaMap(ep.out.Schema)
			if b.Kind == BodyXML && b.XMLName != "" {
				sch["xml"] = map[string]any{"name": b.XMLName}
			}
		}
		if b.Description != "" {
			// A media type has no description: the schema carries it (beside a $ref,
			// which OpenAPI 3.1 allows).
			sch["description"] = b.Description
		}
		content[mt] = map[string]any{"schema": sch}
	}
	return content
}

// responseDescription is a documented status's description, its status text by default.
func responseDescription(op *Operation, code int) string {
	if d := op.Responses[code].Description; d != "" {
		return d
	}
	return statusText(code)
}
