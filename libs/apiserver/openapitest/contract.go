package openapitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// Validator checks answers against one document.
type Validator struct {
	doc    *openapi3.T
	router routers.Router

	mu      sync.Mutex
	checked int
}

// New loads docJSON (as the server serves it at /openapi.json).
func New(docJSON []byte) (*Validator, error) {
	doc, err := Load(docJSON)
	if err != nil {
		return nil, err
	}
	// The served servers entry is relative ("/"); routing on paths alone
	// lets the same document check any test server's address.
	doc.Servers = nil
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route the document: %w", err)
	}
	return &Validator{doc: doc, router: router}, nil
}

// FromHandler fetches /openapi.json from h and loads it.
func FromHandler(h http.Handler) (*Validator, error) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("GET /openapi.json: %d %s", rec.Code, rec.Body)
	}
	return New(rec.Body.Bytes())
}

// Checked is how many answers were checked against an operation.
func (v *Validator) Checked() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.checked
}

// Doc is the loaded document.
func (v *Validator) Doc() *openapi3.T { return v.doc }

// Check validates one answer to req: that its status is documented for the
// operation, that its headers match the documented ones (required ones
// present, every value of its schema) and that its body matches the
// schema of its Content-Type. A 405 is checked against
// components.responses.MethodNotAllowed. Requests to paths the document
// does not describe (built-in routes, unknown paths) are checked only for
// a Location on a redirect; CORS preflights are not checked.
func (v *Validator) Check(req *http.Request, status int, header http.Header, body []byte) error {
	method := req.Method
	if method == http.MethodOptions && req.Header.Get("Access-Control-Request-Method") != "" {
		// A CORS preflight is answered by the library for every path; it
		// is no operation of the document.
		return nil
	}
	if method == http.MethodHead {
		method = http.MethodGet // HEAD answers what GET does, without a body
	}
	r := req.Clone(context.Background())
	r.Method = method
	r.Body = http.NoBody
	route, params, err := v.router.FindRoute(r)
	switch {
	case errors.Is(err, routers.ErrMethodNotAllowed):
		return v.checkMethodNotAllowed(req, status, header, body)
	case err != nil:
		// Not an operation of the document (a built-in route such as /docs, a
		// trailing-slash redirect): a redirect must still say where to.
		if status/100 == 3 && status != http.StatusNotModified && header.Get("Location") == "" {
			return fmt.Errorf("%s %s → %d: a redirect without a Location header", req.Method, req.URL.RequestURI(), status)
		}
		return nil
	}
	v.count()
	where := fmt.Sprintf("%s %s → %d", req.Method, req.URL.RequestURI(), status)
	resp := route.Operation.Responses.Status(status)
	if resp == nil {
		return fmt.Errorf("%s: status %d is not documented for %s %s", where, status, method, route.Path)
	}
	if req.Method == http.MethodHead || status == http.StatusNotModified || status/100 == 3 {
		// kin-openapi skips these; check their headers here.
		return checkHeaders(where, resp.Value, header)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("%s: %w\nbody: %s", where, err, clip(body))
	}
	if len(body) > 0 && len(resp.Value.Content) == 0 {
		return fmt.Errorf("%s: a body was sent (%s) where the document declares none", where, header.Get("Content-Type"))
	}
	return nil
}

// checkMethodNotAllowed checks a 405 against
// components.responses.MethodNotAllowed.
func (v *Validator) checkMethodNotAllowed(req *http.Request, status int, header http.Header, body []byte) error {
	where := fmt.Sprintf("%s %s → %d", req.Method, req.URL.RequestURI(), status)
	if status != http.StatusMethodNotAllowed {
		return fmt.Errorf("%s: the document has no %s operation on this path", where, req.Method)
	}
	var ref *openapi3.ResponseRef
	if v.doc.Components != nil {
		ref = v.doc.Components.Responses["MethodNotAllowed"]
	}
	if ref == nil {
		return fmt.Errorf("%s: 405 is answered but components.responses.MethodNotAllowed is not documented", where)
	}
	v.count()
	op := openapi3.NewOperation()
	op.Responses = openapi3.NewResponses(openapi3.WithStatus(http.StatusMethodNotAllowed, ref))
	r := req.Clone(context.Background())
	r.Body = http.NoBody
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, Route: &routers.Route{Spec: v.doc, Path: req.URL.Path, Method: req.Method, Operation: op}},
		Status:                 status,
		Header:                 header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}

// checkHeaders checks what kin-openapi does not for 3xx and HEAD answers:
// required headers are present.
func checkHeaders(where string, resp *openapi3.Response, header http.Header) error {
	var missing []string
	for name, h := range resp.Headers {
		if h.Value != nil && h.Value.Required && header.Get(name) == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: required headers missing: %s", where, strings.Join(missing, ", "))
	}
	return nil
}

func (v *Validator) count() {
	v.mu.Lock()
	v.checked++
	v.mu.Unlock()
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…(" + strconv.Itoa(len(b)) + " bytes)"
	}
	return string(b)
}

// Transport returns a RoundTripper that sends through base (nil:
// http.DefaultTransport) and checks every answer, failing t on a mismatch.
// WebSocket upgrades and streams (text/event-stream) pass unchecked.
func (v *Validator) Transport(t testing.TB, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripper{v: v, t: t, base: base}
}

type roundTripper struct {
	v    *Validator
	t    testing.TB
	base http.RoundTripper
}

func (rt roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := rt.base.RoundTrip(req)
	if err != nil || req.Header.Get("Upgrade") != "" || strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		return res, err
	}
	body, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	if err := rt.v.Check(req, res.StatusCode, res.Header, body); err != nil {
		rt.t.Errorf("contract: %v", err)
	}
	return res, nil
}

// CheckRecorded checks an answer recorded by httptest, failing t on a
// mismatch.
func (v *Validator) CheckRecorded(t testing.TB, req *http.Request, rec *httptest.ResponseRecorder) {
	t.Helper()
	res := rec.Result()
	if err := v.Check(req, res.StatusCode, res.Header, rec.Body.Bytes()); err != nil {
		t.Errorf("contract: %v", err)
	}
}
