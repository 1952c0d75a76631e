package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/apistack/platform/libs/apiserver/internal/schema"
)

// openAPI builds the OpenAPI 3.1 document from the declared endpoints. It
// is encoded once per distinct server prefix and re-encoded only when an
// endpoint is added.
type openAPI struct {
	set     settings
	schemas *schema.Registry

	// methodNotAllowed: the server answers 405 with Allow (it owns its
	// gin engine and set HandleMethodNotAllowed).
	methodNotAllowed bool

	mu  sync.Mutex
	ops []opDoc
	// webhooks are the requests the service sends (DocumentWebhook), by name.
	webhooks map[string]any
	encoded  map[string][]byte // by servers URL
}

type opDoc struct {
	method, path  string // path in OpenAPI form: /items/{id}
	op            map[string]any
	authenticated bool
	schemes       map[string]any // security schemes of an identity limit, by name
}

func newOpenAPI(set settings, reg *schema.Registry) *openAPI {
	return &openAPI{set: set, schemas: reg, encoded: map[string][]byte{}}
}

func (d *openAPI) add(o opDoc) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ops = append(d.ops, o)
	d.encoded = map[string][]byte{}
}

// endpoints lists the documented operations as "GET /items/{id}", in the order added.
func (d *openAPI) endpoints() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, len(d.ops))
	for i, o := range d.ops {
		out[i] = o.method + " " + o.path
	}
	return out
}

func (d *openAPI) hasAuthenticated() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, o := range d.ops {
		if o.authenticated {
			return true
		}
	}
	return false
}

// json returns the document with servers[0].url = serverURL.
func (d *openAPI) json(serverURL string) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if b, ok := d.encoded[serverURL]; ok {
		return b, nil
	}
	b, err := json.Marshal(d.build(serverURL))
	if err != nil {
		return nil, err
	}
	if len(d.encoded) > 16 { // prefixes come from trusted proxies only; bound anyway
		d.encoded = map[string][]byte{}
	}
	d.encoded[serverURL] = b
	return b, nil
}

func (d *openAPI) build(serverURL string) map[string]any {
	info := map[string]any{"title": d.set.title, "version": d.set.version}
	if d.set.desc != "" {
		info["description"] = d.set.desc
	}
	paths := map[string]map[string]any{}
	for _, o := range d.ops {
		if paths[o.path] == nil {
			paths[o.path] = map[string]any{}
		}
		paths[o.path][strings.ToLower(o.method)] = o.op
	}
	schemas := map[string]any{
		"ErrorResponse": errorSchema(),
		"FieldError": map[string]any{
			"type": "object", "required": []string{"field", "message"},
			"properties": map[string]any{
				"field":   map[string]any{"type": "string", "description": "Where: query.limit, params.id, body.name", "examples": []any{"query.limit"}},
				"message": map[string]any{"type": "string", "description": "What is wrong", "examples": []any{"must be at least 1"}},
			},
		},
	}
	for name, s := range d.schemas.Definitions() {
		schemas[name] = s
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info":    info,
		"servers": []any{map[string]any{"url": serverURL}},
		"paths":   paths,
	}
	if len(d.webhooks) > 0 {
		doc["webhooks"] = d.webhooks
	}
	components := map[string]any{"schemas": schemas}
	for _, o := range d.ops {
		// Declared only when an operation uses it: Swagger UI shows an
		// Authorize button for every scheme.
		if o.authenticated {
			schemes := map[string]any{
				"bearerAuth": map[string]any{"type": "http", "scheme": "bearer", "description": "Authorization: Bearer <token>"},
			}
			if d.set.jwt {
				schemes["platformJWT"] = map[string]any{"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
					"description": "Authorization: Bearer <JWT>: a token of the identity platform (HS256 with the shared secret, or RS256/ES256/EdDSA against its JWKS)"}
			}
			components["securitySchemes"] = schemes
			break
		}
	}
	for _, o := range d.ops {
		for name, sc := range o.schemes {
			schemes, _ := components["securitySchemes"].(map[string]any)
			if schemes == nil {
				schemes = map[string]any{}
				components["securitySchemes"] = schemes
			}
			schemes[name] = sc
		}
	}
	if d.methodNotAllowed {
		// A method a path does not serve has no operation to hang this
		// on: it is the answer of every path to every other method.
		components["responses"] = map[string]any{
			"MethodNotAllowed": map[string]any{
				"description": "405: the path exists but not for this method; Allow lists the methods it serves. Answered by every path.",
				"headers":     map[string]any{"Allow": allowHeader, "X-Request-Id": requestIDHeader},
				"content":     map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/ErrorResponse"}}},
			},
		}
	}
	doc["components"] = components
	if len(d.set.tags) > 0 {
		doc["tags"] = d.set.tags
	}
	return doc
}

func errorSchema() map[string]any {
	return map[string]any{
		"type":        "object",
		"description": "The error body of every endpoint.",
		"required":    []string{"statusCode", "error", "message"},
		"properties": map[string]any{
			"statusCode": map[string]any{"type": "integer", "examples": []any{400}},
			"error":      map[string]any{"type": "string", "description": "HTTP status text", "examples": []any{"Bad Request"}},
			"message":    map[string]any{"type": "string", "examples": []any{"Validation failed: query.limit must be at least 1"}},
			"details": map[string]any{
				"type": "array", "description": "The validation problems (at most 20), present on validation errors.",
				"items": map[string]any{"$ref": "#/components/schemas/FieldError"},
			},
			"detailsOmitted": map[string]any{
				"type": "integer", "minimum": 1,
				"description": "How many further problems were found beyond those in details (which holds at most " + strconv.Itoa(schema.MaxFindings) + ").",
			},
		},
	}
}

var nonWord = regexp.MustCompile(`[^A-Za-z0-9]+`)

func (ep *endpoint[A, In, Out]) doc() opDoc {
	op := ep.op
	path := colonParam.ReplaceAllString(ep.route, "{$1}")
	id := op.OperationID
	if id == "" {
		id = strings.Trim(strings.ToLower(op.Method)+"-"+nonWord.ReplaceAllString(strings.ToLower(path), "-"), "-")
	}
	o := map[string]any{"operationId": id}
	if op.Summary != "" {
		o["summary"] = op.Summary
	}
	if op.Description != "" {
		o["description"] = op.Description
	}
	if len(op.Tags) > 0 {
		o["tags"] = op.Tags
	}
	if op.Deprecated {
		o["deprecated"] = true
	}
	var params []any
	for _, p := range ep.in.params {
		s := p.node.Schema
		if vals, ok := op.PathValues[p.name]; ok && p.in == "path" {
			// The only values routed (the others answer 404): the parameter's enum.
			listed := *s
			listed.Enum = nil
			for _, v := range vals {
				listed.Enum = append(listed.Enum, v)
			}
			s = &listed
		}
		pd := map[string]any{"name": p.name, "in": p.in, "schema": s}
		if p.required {
			pd["required"] = true
		}
		if s.Description != "" {
			pd["description"] = s.Description
		}
		if p.list && p.in == "query" {
			pd["explode"] = true // repeated keys: ?tag=a&tag=b
		}
		params = append(params, pd)
	}
	conditional := ep.resp != nil && ep.resp.etag >= 0
	if conditional && !ep.in.hasHeader("If-None-Match") {
		params = append(params, map[string]any{"name": "If-None-Match", "in": "header", "schema": map[string]any{"type": "string"},
			"description": "ETags of earlier answers: 304 without a body when one names the current ETag"})
	}
	if len(params) > 0 {
		o["parameters"] = params
	}
	if ep.in.body != nil {
		o["requestBody"] = map[string]any{
			"required": ep.in.bodyReq,
			"content":  map[string]any{"application/json": map[string]any{"schema": ep.in.body.Schema}},
		}
	}
	errRef := ep.errorContent()
	responses := map[string]any{}
	success := map[string]any{"description": http.StatusText(op.Status)}
	if d := op.Responses[op.Status].Description; d != "" {
		success["description"] = d
	}
	if !ep.noBody {
		success["content"] = ep.successContent()
	}
	responses[strconv.Itoa(op.Status)] = success
	addErr := func(status int, desc string) {
		responses[strconv.Itoa(status)] = map[string]any{"description": desc, "content": errRef}
	}
	if len(ep.in.params) > 0 || ep.in.body != nil {
		addErr(http.StatusBadRequest, "Validation failed: details lists the problems (detailsOmitted counts those past 20)")
	}
	if ep.in.body != nil {
		addErr(http.StatusRequestEntityTooLarge, "Body larger than the limit")
		addErr(http.StatusUnsupportedMediaType, "Body is not application/json")
	}
	if op.Authenticated {
		o["security"] = []any{map[string]any{"bearerAuth": []string{}}}
		if ep.s.set.jwt {
			// Either scheme: a list of requirements is alternatives.
			o["security"] = []any{map[string]any{"bearerAuth": []string{}}, map[string]any{"platformJWT": []string{}}}
		}
		// What authenticate answers, as the original library does (403
		// for a wrong token); a service whose validator answers otherwise
		// (chat: 401 for an unknown token) says so in Operation.Responses.
		addErr(http.StatusUnauthorized, docUnauthorized)
		addErr(http.StatusForbidden, docForbidden)
	}
	il := ep.s.identityLimitOf(&op)
	schemes := map[string]any{}
	if il != nil {
		var alts []any
		for _, sc := range il.Security {
			schemes[sc.Name] = sc.doc()
			alts = append(alts, map[string]any{sc.Name: []string{}})
		}
		if len(alts) > 0 && !op.Authenticated {
			// Optional: an empty requirement is the anonymous caller.
			o["security"] = append(alts, map[string]any{})
		}
		for code, desc := range il.Errors {
			addErr(code, desc)
		}
		addErr(http.StatusTooManyRequests, "Rate limit exceeded: the principal's limit (its plan's), or without credentials the client address's; see Retry-After")
	} else if op.RateLimit == nil || !op.RateLimit.Disabled {
		addErr(http.StatusTooManyRequests, "Rate limit exceeded; see Retry-After")
	}
	codes := make([]int, 0, len(op.Responses))
	for code := range op.Responses {
		codes = append(codes, code)
	}
	sort.Ints(codes)
	for _, code := range codes {
		if code == op.Status {
			continue
		}
		if code < 400 {
			r := map[string]any{"description": responseDescription(&op, code)}
			// Another success (202 beside 201) answers with the success
			// body's shape: a Response's Status picks it.
			if c, ok := success["content"]; ok && code >= 200 && code < 300 && code != http.StatusNoContent {
				r["content"] = c
			}
			responses[strconv.Itoa(code)] = r
			continue
		}
		addErr(code, responseDescription(&op, code))
	}
	if _, ok := op.Responses[http.StatusNotModified]; conditional && !ok {
		responses["304"] = map[string]any{"description": "Not Modified: If-None-Match names the current ETag"}
	}
	ep.docErrorBodies(responses)
	addErr(http.StatusInternalServerError, "Internal server error")
	limited := op.RateLimit == nil || !op.RateLimit.Disabled
	if limited {
		addErr(http.StatusServiceUnavailable, "Rate limiter unavailable (its Redis is down and RATE_LIMIT_FAIL_CLOSED is set); see Retry-After")
	}
	for code, r := range responses {
		resp := r.(map[string]any)
		addHeader(resp, "X-Request-Id", requestIDHeader)
		if limited {
			for name, h := range rateLimitHeaders {
				addHeader(resp, name, h)
			}
		}
		switch code {
		case "429", "503":
			if limited {
				addHeader(resp, "Retry-After", retryAfterHeader)
			}
		case "401":
			addHeader(resp, "WWW-Authenticate", wwwAuthenticateHeader)
		}
	}
	for _, h := range ep.headers {
		statuses := h.statuses
		if len(statuses) == 0 {
			statuses = []int{op.Status}
		}
		for _, code := range statuses {
			resp, ok := responses[strconv.Itoa(code)].(map[string]any)
			if !ok {
				panic(fmt.Sprintf("apiserver: %s %s: header %s is declared on status %d, which the operation does not answer (add it to Responses)", op.Method, op.URL, h.name, code))
			}
			hd := map[string]any{"schema": h.schema}
			if h.schema.Description != "" {
				hd["description"] = h.schema.Description
			}
			if h.required {
				hd["required"] = true
			}
			addHeader(resp, h.name, hd)
		}
	}
	for code, r := range op.Responses {
		resp := responses[strconv.Itoa(code)].(map[string]any)
		for name, h := range r.Headers {
			addHeader(resp, name, h.doc())
		}
	}
	o["responses"] = responses
	return opDoc{method: op.Method, path: path, op: o, authenticated: op.Authenticated, schemes: schemes}
}

// schemaMap is a copy of s as a map, to add keywords beside a $ref.
func schemaMap(s *schema.Schema) map[string]any {
	m := map[string]any{}
	b, _ := json.Marshal(s)
	_ = json.Unmarshal(b, &m)
	return m
}
