package apiserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/apistack/platform/libs/apiserver/internal/fieldmem"
	"github.com/apistack/platform/libs/apiserver/internal/schema"
)

// Operation declares an endpoint: the seed's createEndpoint fields other
// than the schemas, which come from the handler's input and output types.
type Operation struct {
	Method string // GET, POST, PUT, DELETE or PATCH
	URL    string // gin syntax: /items/:id ({id} is accepted too)

	Summary     string
	Description string
	Tags        []string
	OperationID string // default: method and path, e.g. get-items-id
	Deprecated  bool

	// Authenticated requires a bearer token before validation runs.
	Authenticated bool
	// RateLimit: nil uses the global limit; NoRateLimit disables it;
	// {Max, Window} gives the endpoint a counter of its own.
	RateLimit *RateLimit
	// Status is the success status (default 200, or 204 for NoBody).
	Status int
	// BodyLimit overrides the server's body size limit for this endpoint.
	BodyLimit int64
	// Responses declares the answers by status (see ResponseDoc): the success
	// answer's media types when it is not only JSON, further statuses, e.g.
	// {404: {Description: "No such item"}}, and headers the handler sets itself.
	Responses map[int]ResponseDoc
	// NoTimeouts lifts the server's read and write deadlines for this
	// route once the request has passed the rate limit, auth and input
	// validation, just before the handler runs: for long polls and
	// streams. WebSocket routes do not need it (the accepted upgrade
	// hijacks the connection, which clears the deadlines), and should not
	// set it: their handshake checks then run under the deadlines too.
	NoTimeouts bool
	// Hidden keeps the endpoint out of the OpenAPI document.
	Hidden bool
	// ErrorBodies declares statuses answered with a body of the operation's own shape
	// (a *BodyError from the handler) instead of the standard error body (errorbody.go).
	ErrorBodies []ErrorBody
	// IdentityLimit limits the endpoint per principal (an API key, a JWT subject) after
	// authentication, callers without one per address (identity.go); nil uses the
	// server's (Config.IdentityLimit), if any.
	IdentityLimit *IdentityLimit
	// ErrorMap answers every error of the endpoint, the library's included, with a body
	// of the operation's own shape (errormap.go).
	ErrorMap *ErrorMap
	// PathValues lists, for path parameters, the only values each takes: the route is
	// registered once per value, with the value as a literal segment, and any other
	// value is answered 404 as an unknown route is. OpenAPI documents the parameter as
	// an enum of them. Why: gin matches literal segments directly, while a wildcard
	// beside literal siblings (/:ip/:field/ beside /:ip/json/) makes every request to a
	// sibling record a way back, two allocations and a copy of gin's node. The handler
	// reads the value from its input as for any parameter (c.Param does not have it),
	// and metrics and logs label the requests with the template route.
	PathValues map[string][]string
}

// RateLimit is a per-endpoint limit: Max requests per Window for each
// client (Window 0 means the global window).
type RateLimit struct {
	Max      int
	Window   time.Duration
	Disabled bool
}

// NoRateLimit disables rate limiting on an endpoint (the seed's `false`).
var NoRateLimit = &RateLimit{Disabled: true}

// NoBody is the output type of endpoints that answer without a body
// (204 by default).
type NoBody struct{}

// Context is what a handler receives: the gin context of the request and,
// on authenticated endpoints, the typed auth context.
type Context[A any] struct {
	*gin.Context
	Auth A
	// Authenticated is true when a token was checked for this request.
	Authenticated bool
}

// Handler handles a validated request and returns the response value, or
// an error (an *Error chooses the status; anything else is a 500).
type Handler[A, In, Out any] func(c *Context[A], in *In) (Out, error)

// Register declares an endpoint: the seed's createEndpoint. The input type
// In is a struct whose fields carry `path:"id"`, `query:"limit"` or
// `header:"X-Name"` tags, plus an optional Body field (the JSON body);
// constraints and docs come from tags (doc, minimum, maximum, minLength,
// maxLength, pattern, enum, default, format, example, required). Out is
// the response schema. Register panics on a declaration that cannot work
// (a bad tag, a path parameter without a field): that is a programming
// error, found at start-up.
func Register[A, In, Out any](s *Server[A], op Operation, h Handler[A, In, Out]) {
	ep, err := newEndpoint(s, op, h)
	if err != nil {
		panic(fmt.Sprintf("apiserver: register %s %s: %v", op.Method, op.URL, err))
	}
	middleware := s.routeMiddleware(&ep.op, ep.route)
	for _, r := range ep.literalRoutes() {
		handlers := append(middleware[:len(middleware):len(middleware)], ep.serveWith(r.values))
		s.routes.Handle(ep.op.Method, r.path, handlers...)
		if ep.op.Method == http.MethodGet {
			// HEAD answers what GET would, without the body (net/http drops it).
			s.routes.Handle(http.MethodHead, r.path, handlers...)
		}
		if r.path != ep.route {
			s.routeLabels[r.path] = ep.route
		}
		if m := ep.op.ErrorMap; m != nil {
			s.errorMaps.add(ep.op.Method, r.path, m)
			if ep.op.Method == http.MethodGet {
				s.errorMaps.add(http.MethodHead, r.path, m)
			}
		}
	}
	if !op.Hidden {
		s.docs.add(ep.doc())
	}
}

type endpoint[A, In, Out any] struct {
	s       *Server[A]
	op      Operation
	route   string // gin path
	h       Handler[A, In, Out]
	in      *binder
	out     *schema.Node
	enc     *schema.Encoder // validates and encodes results in one pass
	noBody  bool
	limit   int64
	checkIO bool
	headers []respHeader
	resp    *respLayout // the output is a Response: its headers, status and raw body

	errBodies  errorBodies
	errMapNode *schema.Node // the schema of ErrorMap's body, when the operation has one
}

type param struct {
	name     string
	in       string // path, query, header
	prefix   string // for error fields: params., query., headers.
	fullName string // prefix + name
	index    []int
	node     *schema.Node
	required bool
	list     bool
	def      reflect.Value
}

type binder struct {
	typ       reflect.Type
	params    []param
	body      *schema.Node
	bodyIndex []int
	bodyReq   bool
	bodyType  reflect.Type
	queries   bool // some parameter is in the query
}

var (
	braceParam = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)
	colonParam = regexp.MustCompile(`[:*]([A-Za-z_][A-Za-z0-9_]*)`)
)

func newEndpoint[A, In, Out any](s *Server[A], op Operation, h Handler[A, In, Out]) (*endpoint[A, In, Out], error) {
	if h == nil {
		return nil, errors.New("handler is nil")
	}
	op.Method = strings.ToUpper(op.Method)
	switch op.Method {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch:
	default:
		return nil, fmt.Errorf("method %q: must be GET, POST, PUT, DELETE or PATCH", op.Method)
	}
	if !strings.HasPrefix(op.URL, "/") {
		return nil, fmt.Errorf("url %q must start with /", op.URL)
	}
	if op.RateLimit != nil && !op.RateLimit.Disabled && op.RateLimit.Max < 1 {
		return nil, fmt.Errorf("rate limit max %d: must be at least 1 (use NoRateLimit to disable)", op.RateLimit.Max)
	}
	ep := &endpoint[A, In, Out]{s: s, op: op, h: h, checkIO: s.set.validateResults}
	ep.route = braceParam.ReplaceAllString(op.URL, ":$1")
	var err error
	if ep.in, err = newBinder(s.schemas, reflect.TypeFor[In](), op.Method, ep.route); err != nil {
		return nil, err
	}
	outType := reflect.TypeFor[Out]()
	if ep.resp, err = newRespLayout(outType); err != nil {
		return nil, err
	}
	if ep.resp != nil {
		hf, _ := outType.FieldByName("Header")
		if ep.headers, err = newRespHeaders(s.schemas, hf.Type); err != nil {
			return nil, err
		}
		outType = ep.resp.body
	}
	ep.noBody = outType == reflect.TypeFor[NoBody]()
	if !ep.noBody {
		if ep.out, err = s.schemas.Type(outType); err != nil {
			return nil, fmt.Errorf("response type %s: %w", outType, err)
		}
		ep.enc = schema.NewEncoder(outType, ep.out)
	}
	if ep.op.Status == 0 {
		ep.op.Status = http.StatusOK
		if ep.noBody {
			ep.op.Status = http.StatusNoContent
		}
	}
	if err := checkResponses(&ep.op, ep.noBody, ep.headers); err != nil {
		return nil, err
	}
	if ep.errBodies, err = compileErrorBodies(s.schemas, op.ErrorBodies); err != nil {
		return nil, err
	}
	if op.ErrorMap != nil {
		if ep.errMapNode, err = op.ErrorMap.compile(s.schemas); err != nil {
			return nil, err
		}
	}
	if ep.resp != nil {
		ep.resp.finish(&ep.op, ep.headers, ep.checkIO, s.set.production)
	}
	if err := ep.checkPathValues(); err != nil {
		return nil, err
	}
	ep.limit = s.set.bodyLimit
	if op.BodyLimit > 0 {
		ep.limit = op.BodyLimit
	}
	return ep, nil
}

func newBinder(reg *schema.Registry, t reflect.Type, method, route string) (*binder, error) {
	b := &binder{typ: t}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("input type %s must be a struct", t)
	}
	pathNames := map[string]bool{}
	for _, m := range colonParam.FindAllStringSubmatch(route, -1) {
		pathNames[m[1]] = false
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Name == "Body" || hasTag(f.Tag, "body") {
			if method == http.MethodGet {
				return nil, errors.New("a GET endpoint cannot take a body")
			}
			node, err := reg.FieldNode(f.Type, f.Tag)
			if err != nil {
				return nil, fmt.Errorf("body: %w", err)
			}
			b.body, b.bodyIndex, b.bodyType = node, f.Index, f.Type
			b.bodyReq = f.Type.Kind() != reflect.Pointer && f.Tag.Get("required") != "false"
			continue
		}
		var p param
		switch {
		case hasTag(f.Tag, "path"):
			p.in, p.name, p.prefix = "path", f.Tag.Get("path"), "params."
			if _, ok := pathNames[p.name]; !ok {
				return nil, fmt.Errorf("field %s: the URL has no :%s parameter", f.Name, p.name)
			}
			pathNames[p.name] = true
			p.required = true
		case hasTag(f.Tag, "query"):
			p.in, p.name, p.prefix = "query", f.Tag.Get("query"), "query."
			b.queries = true
		case hasTag(f.Tag, "header"):
			p.in, p.name, p.prefix = "header", http.CanonicalHeaderKey(f.Tag.Get("header")), "headers."
		default:
			return nil, fmt.Errorf("field %s needs a path, query or header tag, or must be named Body", f.Name)
		}
		node, err := reg.FieldNode(f.Type, f.Tag)
		if err != nil {
			return nil, fmt.Errorf("%s parameter %s: %w", p.in, p.name, err)
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft != reflect.TypeFor[time.Time]() || ft.Kind() == reflect.Map {
			return nil, fmt.Errorf("%s parameter %s: objects cannot be read from text", p.in, p.name)
		}
		p.list = ft.Kind() == reflect.Slice
		p.fullName = p.prefix + p.name
		p.node, p.index = node, f.Index
		if req, ok := f.Tag.Lookup("required"); ok && p.in != "path" {
			p.required = req == "true"
		}
		if def, ok := f.Tag.Lookup("default"); ok {
			v, err := node.ParseText(def)
			if err != nil {
				return nil, fmt.Errorf("%s parameter %s: default %q: %w", p.in, p.name, def, err)
			}
			p.def = v
		}
		b.params = append(b.params, p)
	}
	for name, bound := range pathNames {
		if !bound {
			return nil, fmt.Errorf("URL parameter :%s has no field tagged path:%q in %s", name, name, t)
		}
	}
	return b, nil
}

// hasHeader reports whether the input declares the request header name.
func (b *binder) hasHeader(name string) bool {
	for i := range b.params {
		if b.params[i].in == "header" && b.params[i].name == http.CanonicalHeaderKey(name) {
			return true
		}
	}
	return false
}

func hasTag(tag reflect.StructTag, key string) bool {
	_, ok := tag.Lookup(key)
	return ok
}

// call is what serving one request allocates, in one allocation rather than three: the
// handler's context and input (both escape through the handler, a func value) and the
// values of the response headers a Response carries (see respondWith), which live until
// the answer is written.
type call[A, In any] struct {
	ctx  Context[A]
	in   In
	vals [4]string
}

// serveWith is the route's last handler: serve, with the values of the path parameters
// that its route has as literal segments (Operation.PathValues; nil for the others).
func (ep *endpoint[A, In, Out]) serveWith(literal gin.Params) gin.HandlerFunc {
	return func(c *gin.Context) { ep.serve(c, literal) }
}

// serve runs after the route middleware (rate limit, auth) has passed.
func (ep *endpoint[A, In, Out]) serve(c *gin.Context, literal gin.Params) {
	cl := new(call[A, In])
	ctx := &cl.ctx
	ctx.Context = c
	if ep.op.Authenticated {
		if a, ok := c.Get(authContextKey); ok {
			ctx.Auth, _ = a.(A)
			ctx.Authenticated = true
		}
	}
	if ep.in.body == nil {
		// A body nobody will read: see closeUnreadBody.
		closeUnreadBody(c)
	}
	in := &cl.in
	if err := ep.in.bind(c, literal, reflect.ValueOf(in).Elem(), ep.limit); err != nil {
		ep.abort(c, err)
		return
	}
	if ep.op.NoTimeouts {
		LiftTimeouts(c)
	}
	out, err := ep.h(ctx, in)
	if err != nil {
		ep.fail(c, err)
		return
	}
	if c.Writer.Written() || c.IsAborted() {
		return // the handler answered by itself (another format, a redirect)
	}
	if ep.resp != nil {
		// Read in place: the result stays on the stack unless its Body is to be encoded.
		if ep.respondWith(c, fieldmem.Of(&out), cl.vals[:0]) {
			return
		}
		typed := out
		body := fieldmem.Of(&typed).At(ep.resp.bodyOff).Value(ep.resp.body)
		// A copy that is not addressable: what json.Marshal(body) would see.
		ep.writeBody(c, c.Writer.Status(), reflect.ValueOf(body.Interface()))
		return
	}
	if ep.noBody {
		c.Status(ep.op.Status)
		c.Writer.WriteHeaderNow()
		return
	}
	// The value itself, not a pointer to it: what json.Marshal(out) would
	// see, so the same MarshalJSON methods run.
	ep.writeBody(c, ep.op.Status, reflect.ValueOf(out))
}

// writeBody validates and encodes v as the JSON body.
func (ep *endpoint[A, In, Out]) writeBody(c *gin.Context, status int, v reflect.Value) {
	var errs schema.Errors
	check := &errs
	if !ep.checkIO {
		check = nil
	}
	buf := schema.GetBuffer()
	defer schema.PutBuffer(buf)
	body, err := ep.enc.Append(*buf, v, "response", check)
	*buf = body[:0] // keep what the buffer grew to
	if len(errs) > 0 {
		e := &Error{Status: http.StatusInternalServerError, Message: "Response validation failed", Cause: fmt.Errorf("handler result does not match %s: %v", ep.out.Type(), errs)}
		if !ep.s.set.production {
			e.Details = errs
		}
		ep.abort(c, e)
		return
	}
	if err != nil {
		ep.abort(c, fmt.Errorf("encode response: %w", err))
		return
	}
	respondJSON(c, status, body)
}

// jsonContentType is shared by every response, as gin's renderers share
// theirs: Header.Set and Add replace or copy it, never write into it.
var jsonContentType = []string{"application/json; charset=utf-8"}

// unbufferedBody is the size from which net/http no longer holds a whole
// body before sending headers (its 2 KiB chunking buffer), so it would
// answer with chunked encoding unless Content-Length is set. Below it,
// net/http sets Content-Length itself, for less than the header costs here.
const unbufferedBody = 2048

// respondJSON answers with an encoded body; gin's c.Data would allocate the
// Content-Type value and format a Content-Length on every call.
func respondJSON(c *gin.Context, status int, body []byte) {
	h := c.Writer.Header()
	h["Content-Type"] = jsonContentType
	if len(body) >= unbufferedBody {
		h["Content-Length"] = []string{strconv.Itoa(len(body))}
	}
	c.Status(status)
	_, _ = c.Writer.Write(body)
}

// bind fills the input struct from the request, collecting every problem. literal holds
// the path parameters the route has as literal segments (Operation.PathValues).
func (b *binder) bind(c *gin.Context, literal gin.Params, v reflect.Value, limit int64) error {
	if !b.queries {
		// queryValues is some 400 bytes: not even zeroed where no query is read.
		return b.bindWith(c, literal, nil, v, limit)
	}
	var query queryValues
	query.scan(b, c.Request.URL.RawQuery)
	return b.bindWith(c, literal, &query, v, limit)
}

// bindWith is bind with the query's values read (nil when the input declares none).
func (b *binder) bindWith(c *gin.Context, literal gin.Params, query *queryValues, v reflect.Value, limit int64) error {
	var errs schema.Errors
	omitted := 0 // findings past schema.MaxFindings, counted only
	for i := range b.params {
		p := &b.params[i]
		var raw textValues
		switch p.in {
		case "path":
			val, ok := literal.Get(p.name)
			if !ok {
				val = c.Param(p.name)
			}
			if val != "" {
				raw = textValues{n: 1, one: val}
			}
		case "query":
			raw = *query.slot(i)
		case "header":
			raw = textOf(c.Request.Header.Values(p.name))
		}
		field := v.FieldByIndex(p.index)
		name := p.fullName
		if raw.n == 0 {
			switch {
			case p.required:
				errs = append(errs, FieldError{Field: name, Message: "is required"})
			case p.def.IsValid():
				schema.SetValue(field, p.def)
			}
			continue
		}
		if !p.list && raw.n > 1 {
			errs = append(errs, FieldError{Field: name, Message: "must be given once"})
			continue
		}
		ok := true
		for k := range raw.n {
			if err := p.node.SetText(field, raw.at(k)); err != nil {
				errs = append(errs, FieldError{Field: name, Message: err.Error()})
				ok = false
				break
			}
		}
		if ok {
			omitted += p.node.CheckValue(field, name, &errs)
		}
	}
	if b.body != nil {
		if err := b.bindBody(c, v.FieldByIndex(b.bodyIndex), limit, &errs, &omitted); err != nil {
			return err
		}
	}
	if len(errs) > 0 {
		return requestValidationError(errs, omitted)
	}
	return nil
}

// detailsOmittedKey is the error body's count of findings left out of
// "details", which holds at most schema.MaxFindings.
const detailsOmittedKey = "detailsOmitted"

// requestValidationError is the 400 for errs plus omitted findings that
// were counted but not recorded: details lists at most schema.MaxFindings,
// and detailsOmitted says how many more there were.
func requestValidationError(errs schema.Errors, omitted int) *Error {
	if len(errs) > schema.MaxFindings {
		omitted += len(errs) - schema.MaxFindings
		errs = errs[:schema.MaxFindings]
	}
	const shown = 5
	total := len(errs) + omitted
	parts := make([]string, 0, shown+1)
	for i, e := range errs {
		if i == shown {
			break
		}
		parts = append(parts, e.Field+" "+e.Message)
	}
	if total > len(parts) {
		parts = append(parts, fmt.Sprintf("and %d more", total-len(parts)))
	}
	e := &Error{Status: http.StatusBadRequest, Message: "Validation failed: " + strings.Join(parts, "; "), Details: errs}
	if omitted > 0 {
		e.Extra = map[string]any{detailsOmittedKey: omitted}
	}
	return e
}

func (b *binder) bindBody(c *gin.Context, field reflect.Value, limit int64, errs *schema.Errors, omitted *int) error {
	r := c.Request
	if r.Body == nil || r.ContentLength == 0 {
		if b.bodyReq {
			*errs = append(*errs, FieldError{Field: "body", Message: "is required"})
		}
		return nil
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, params, err := mime.ParseMediaType(ct)
		if err != nil || !(mt == "application/json" || strings.HasSuffix(mt, "+json")) {
			return NewError(http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q is not supported: send application/json", ct))
		}
		// JSON is UTF-8 (RFC 8259 §8.1): a body declared in another
		// charset would be read as UTF-8 and its text changed.
		if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
			return NewError(http.StatusUnsupportedMediaType, fmt.Sprintf("charset %q is not supported: JSON is UTF-8, send charset=utf-8 or no charset", cs))
		}
	} else {
		return NewError(http.StatusUnsupportedMediaType, "Content-Type is missing: send application/json")
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return NewError(http.StatusRequestEntityTooLarge, fmt.Sprintf("Request body is larger than %d bytes", limit))
		}
		return BadRequestError("could not read the request body")
	}
	if int64(len(data)) > limit {
		return NewError(http.StatusRequestEntityTooLarge, fmt.Sprintf("Request body is larger than %d bytes", limit))
	}
	c.Set(bodyReadKey, true)
	// encoding/json would read a byte that is not UTF-8 as U+FFFD: the
	// handler would then see text the client never sent.
	if at, field, bad := schema.InvalidUTF8(data, "body"); bad {
		return &Error{Status: http.StatusBadRequest,
			Message: fmt.Sprintf("Request body is not valid UTF-8 (byte %d): JSON must be UTF-8", at),
			Details: []FieldError{{Field: field, Message: fmt.Sprintf("is not valid UTF-8 (byte %d of the body)", at)}}}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		if b.bodyReq {
			*errs = append(*errs, FieldError{Field: "body", Message: "is required"})
		}
		return nil
	}
	// The shape (arrays past their maxItems, unknown fields, values of the
	// wrong JSON type) is checked on the raw bytes: a hostile body then
	// costs a scan, not a decode into a million Go values.
	if found, n := b.body.CheckShape(data, "body", errs); found {
		*omitted += n
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return BadRequestError("Malformed JSON in request body: " + jsonErrorText(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return BadRequestError("Malformed JSON in request body: unexpected data after the JSON value")
	}
	before := len(*errs)
	*omitted += b.body.CheckJSON(doc, "body", errs)
	if len(*errs) > before || *omitted > 0 {
		return nil
	}
	target := field
	if field.Kind() == reflect.Pointer {
		field.Set(reflect.New(field.Type().Elem()))
		target = field.Elem()
	}
	if err := json.Unmarshal(data, target.Addr().Interface()); err != nil {
		*errs = append(*errs, FieldError{Field: "body", Message: jsonErrorText(err)})
		return nil
	}
	b.body.ApplyDefaults(doc, target)
	return nil
}

// jsonErrorText describes a decoding error without Go type names.
func jsonErrorText(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %s has the wrong type", te.Field)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of input"
	}
	return err.Error()
}
