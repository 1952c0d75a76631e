package apiserver

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/apistack/platform/libs/apiserver/internal/schema"
)

// respHeader is one response header an operation declares, documented on
// the responses whose status it lists (none: the success status).
type respHeader struct {
	name     string
	statuses []int
	required bool
	schema   *schema.Schema
}

// newRespHeaders reads the header struct of a Response: fields that carry
// `header:"ETag"` tags, as the input's request headers do, with the same
// doc tags (doc, example, enum, format, pattern, ...), plus
// `status:"200,304"` to name the answers that carry the header (default:
// the success status) and `required:"true"` when it is always sent.
func newRespHeaders(reg *schema.Registry, t reflect.Type) ([]respHeader, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("headers: %s must be a struct whose fields carry header tags", t)
	}
	var out []respHeader
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, ok := f.Tag.Lookup("header")
		if !ok || name == "" {
			return nil, fmt.Errorf("headers: field %s needs a header tag", f.Name)
		}
		node, err := reg.FieldNode(f.Type, f.Tag)
		if err != nil {
			return nil, fmt.Errorf("response header %s: %w", name, err)
		}
		h := respHeader{name: name, required: f.Tag.Get("required") == "true", schema: node.Schema}
		if st := f.Tag.Get("status"); st != "" {
			for _, part := range strings.Split(st, ",") {
				code, err := strconv.Atoi(strings.TrimSpace(part))
				if err != nil || code < 100 || code > 599 {
					return nil, fmt.Errorf("response header %s: status %q is not an HTTP status", name, part)
				}
				h.statuses = append(h.statuses, code)
			}
		}
		out = append(out, h)
	}
	return out, nil
}

// Headers the library itself sends, documented on the answers that carry
// them.
var (
	requestIDHeader = map[string]any{
		"description": "The request's id: the client's X-Request-Id when it is sane, else a new one. Also in the access log.",
		"required":    true,
		"schema":      map[string]any{"type": "string", "examples": []any{"5f2b1c9e4a7d4f0e9b3c2a1d"}},
	}
	rateLimitHeaders = map[string]any{
		"RateLimit-Limit": map[string]any{
			"description": "Requests allowed per window (absent for addresses in RATE_LIMIT_ALLOW).",
			"schema":      map[string]any{"type": "integer", "minimum": 1},
		},
		"RateLimit-Remaining": map[string]any{
			"description": "Requests left in the current window.",
			"schema":      map[string]any{"type": "integer", "minimum": 0},
		},
		"RateLimit-Reset": map[string]any{
			"description": "Seconds until the window resets.",
			"schema":      map[string]any{"type": "integer", "minimum": 0},
		},
	}
	retryAfterHeader = map[string]any{
		"description": "Seconds to wait before retrying.",
		"required":    true,
		"schema":      map[string]any{"type": "integer", "minimum": 0},
	}
	wwwAuthenticateHeader = map[string]any{
		"description": "The scheme to authenticate with.",
		"required":    true,
		"schema":      map[string]any{"type": "string", "const": "Bearer"},
	}
	allowHeader = map[string]any{
		"description": "The methods the path answers, e.g. GET, HEAD.",
		"required":    true,
		"schema":      map[string]any{"type": "string", "examples": []any{"GET, HEAD"}},
	}
)

// addHeader documents a header on one response object.
func addHeader(resp map[string]any, name string, h any) {
	hs, _ := resp["headers"].(map[string]any)
	if hs == nil {
		hs = map[string]any{}
		resp["headers"] = hs
	}
	hs[name] = h
}
