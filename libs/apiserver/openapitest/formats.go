package openapitest

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
)

// kin-openapi decodes JSON, YAML, CSV and plain text bodies itself; these
// add the XML and JSONP answers the services send, so they too are checked
// against the schema their media type declares.
func init() {
	openapi3filter.RegisterBodyDecoder("application/xml", xmlBodyDecoder)
	openapi3filter.RegisterBodyDecoder("application/javascript", jsonpBodyDecoder)
}

// jsonpCall is a JSONP answer: an optional /**/, a callback (an identifier
// path) and one JSON argument.
var jsonpCall = regexp.MustCompile(`(?s)^(?:/\*\*/)?[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*\((.*)\);?\s*$`)

func jsonpBodyDecoder(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	m := jsonpCall.FindSubmatch(data)
	if m == nil {
		return nil, errors.New("not a JSONP call: callback(json);")
	}
	var v any
	if err := json.Unmarshal(m[1], &v); err != nil {
		return nil, fmt.Errorf("the JSONP argument is not JSON: %w", err)
	}
	return v, nil
}

// element is one parsed XML element.
type element struct {
	name     string
	text     strings.Builder
	children []*element
}

// xmlBodyDecoder reads the XML an object schema describes: a root element
// (named by the schema's xml.name when it has one) holding one element
// per property, named as the property (or by its xml.name). Leaf text is
// read as the property's type, so a number written as text is checked as
// a number; text that is not one stays a string and fails the schema.
func xmlBodyDecoder(body io.Reader, _ http.Header, sch *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	dec := xml.NewDecoder(body)
	var stack []*element
	var root *element
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("malformed XML: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			e := &element{name: t.Name.Local}
			if len(stack) > 0 {
				parent := stack[len(stack)-1]
				parent.children = append(parent.children, e)
			} else if root != nil {
				return nil, errors.New("more than one root element")
			} else {
				root = e
			}
			stack = append(stack, e)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text.Write(t)
			}
		}
	}
	if root == nil {
		return nil, errors.New("no root element")
	}
	if sch != nil && sch.Value != nil && sch.Value.XML != nil && sch.Value.XML.Name != "" && sch.Value.XML.Name != root.name {
		return nil, fmt.Errorf("root element <%s>, the schema names <%s>", root.name, sch.Value.XML.Name)
	}
	return xmlValue(root, sch), nil
}

func xmlValue(e *element, sch *openapi3.SchemaRef) any {
	var s *openapi3.Schema
	if sch != nil {
		s = sch.Value
	}
	if s == nil || !s.Type.Is("object") {
		return scalar(e.text.String(), s)
	}
	obj := map[string]any{}
	for _, c := range e.children {
		name := c.name
		var prop *openapi3.SchemaRef
		for pname, p := range s.Properties {
			if p.Value != nil && p.Value.XML != nil && p.Value.XML.Name == c.name || pname == c.name {
				name, prop = pname, p
				break
			}
		}
		obj[name] = xmlValue(c, prop)
	}
	return obj
}

func scalar(text string, s *openapi3.Schema) any {
	if s == nil {
		return text
	}
	switch {
	case s.Type.Is("integer"):
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return n
		}
	case s.Type.Is("number"):
		if n, err := strconv.ParseFloat(text, 64); err == nil {
			return n
		}
	case s.Type.Is("boolean"):
		if b, err := strconv.ParseBool(text); err == nil {
			return b
		}
	}
	return text
}
