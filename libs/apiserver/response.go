package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/gin-gonic/gin"

	"github.com/apistack/platform/libs/apiserver/internal/fieldmem"
	"github.com/apistack/platform/libs/apiserver/internal/schema"
)

// Response is the output of a handler whose answer carries response headers, a status of
// its own or a body it has already encoded. The library writes it, checks it against the
// operation and documents it:
//
//   - Header is a struct whose string or integer fields carry `header:"ETag"` tags, with
//     the input's doc tags, `status:"200,304"` for the answers that carry the header
//     (default: the success status) and `required:"true"` when it is always sent. Empty
//     (zero) values are not sent. When it declares ETag, a GET or HEAD whose If-None-Match
//     names the ETag (weak comparison, or *) is answered 304 with the headers and no body,
//     and If-None-Match and the 304 are documented.
//   - Status is 0 for the operation's Status, or a status < 400 it documents in Responses.
//   - Body is encoded and validated as any output type is; B is the documented schema
//     (NoBody for none).
//   - Raw, when not nil, is the body already encoded, sent as is with ContentType (default
//     JSON), which must be a media type the operation documents (JSON, or those of the
//     success status's Content in Responses). Outside production, with result validation
//     on, a JSON Raw body is also decoded and checked against B; in production that
//     decode would cost more than the encoding the handler saved, and the bytes are the
//     handler's own encoder's, which its contract tests check against the document.
//
// A handler that needs none of this returns its body type directly.
type Response[H, B any] struct {
	Status      int
	Header      H
	Body        B
	Raw         []byte
	ContentType string
}

func (Response[H, B]) apiserverResponse() {}

// responseType is what Register recognises Response by.
type responseType interface{ apiserverResponse() }

// respLayout is where a Response's parts lie in memory, so that serving one reads its
// fields without reflection or copying it to the heap.
type respLayout struct {
	statusOff, headerOff, bodyOff, rawOff, ctOff uintptr
	body                                         reflect.Type
	fields                                       []respField
	etag                                         int // index in fields of ETag, -1 without one
	statuses                                     map[int]bool
	mediaTypes                                   []string // documented, without parameters
	jsonDocumented                               bool     // application/json is one: the common answer checked without parsing
	checkJSON                                    bool
	cts                                          atomic.Pointer[[]ctValue]
}

// respField is one header of Response.Header.
type respField struct {
	name     string // canonical
	off      uintptr
	kind     reflect.Kind
	required bool
	statuses []int // nil: the success status
}

type ctValue struct {
	text string
	val  []string
}

// newRespLayout returns nil when t is not a Response.
func newRespLayout(t reflect.Type) (*respLayout, error) {
	if !t.Implements(reflect.TypeFor[responseType]()) || t.Kind() != reflect.Struct {
		return nil, nil
	}
	l := &respLayout{etag: -1}
	off := func(name string) uintptr { f, _ := t.FieldByName(name); return f.Offset }
	l.statusOff, l.headerOff, l.bodyOff, l.rawOff, l.ctOff = off("Status"), off("Header"), off("Body"), off("Raw"), off("ContentType")
	bf, _ := t.FieldByName("Body")
	l.body = bf.Type
	hf, _ := t.FieldByName("Header")
	ht := hf.Type
	if ht.Kind() != reflect.Struct {
		return nil, fmt.Errorf("response headers: %s must be a struct whose fields carry header tags", ht)
	}
	for i := 0; i < ht.NumField(); i++ {
		f := ht.Field(i)
		if !f.IsExported() {
			continue
		}
		if !fieldmem.TextKind(f.Type.Kind()) {
			return nil, fmt.Errorf("response header field %s: %s cannot be sent as a header (use a string or an integer)", f.Name, f.Type)
		}
		name := http.CanonicalHeaderKey(f.Tag.Get("header"))
		if name == "Etag" {
			l.etag = len(l.fields)
		}
		l.fields = append(l.fields, respField{name: name, off: f.Offset, kind: f.Type.Kind(), required: f.Tag.Get("required") == "true"})
	}
	return l, nil
}

// finish records what the operation documents, once the headers are read.
func (l *respLayout) finish(op *Operation, headers []respHeader, checkIO, production bool) {
	l.statuses = map[int]bool{op.Status: true}
	for code := range op.Responses {
		if code < 400 {
			l.statuses[code] = true
		}
	}
	if l.etag >= 0 {
		l.statuses[http.StatusNotModified] = true
	}
	for i := range l.fields {
		l.fields[i].statuses = headers[i].statuses
	}
	l.mediaTypes = op.successMediaTypes()
	l.jsonDocumented = l.documented(jsonContentType[0])
	l.checkJSON = checkIO && !production && op.successJSON()
}

func (f *respField) carriedBy(status, success int) bool {
	if f.statuses == nil {
		return status == success
	}
	for _, s := range f.statuses {
		if s == status {
			return true
		}
	}
	return false
}

func (f *respField) text(p fieldmem.Ptr) string { return p.At(f.off).Text(f.kind) }

// contentType returns a shared header value for ct: handlers send a few constant types, so
// each endpoint keeps the values it has seen (at most 8) instead of allocating one per
// answer.
func (l *respLayout) contentType(ct string) []string {
	cur := l.cts.Load()
	if cur != nil {
		for _, e := range *cur {
			if e.text == ct {
				return e.val
			}
		}
	}
	v := []string{ct}
	if cur == nil || len(*cur) < 8 {
		var next []ctValue
		if cur != nil {
			next = append(next, *cur...)
		}
		next = append(next, ctValue{ct, v})
		l.cts.CompareAndSwap(cur, &next)
	}
	return v
}

// documented reports whether ct's media type is one the operation documents.
func (l *respLayout) documented(ct string) bool {
	mt := ct
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	mt = strings.TrimSpace(mt)
	for _, d := range l.mediaTypes {
		if strings.EqualFold(d, mt) {
			return true
		}
	}
	return false
}

// respondWith writes a Response found at p (the handler's result, which it does not keep).
// It reports false when the body must be encoded from Body: the caller copies the result
// for that, so the common case (Raw, no body) never moves it to the heap. The header values
// go in vals (empty, with room the caller allocated) while they fit.
func (ep *endpoint[A, In, Out]) respondWith(c *gin.Context, p fieldmem.Ptr, vals []string) bool {
	l := ep.resp
	status := fieldmem.Get[int](p.At(l.statusOff))
	if status == 0 {
		status = ep.op.Status
	}
	if !l.statuses[status] {
		ep.abort(c, &Error{Status: http.StatusInternalServerError, Message: "Response validation failed",
			Cause: fmt.Errorf("handler answered status %d, which %s %s does not document", status, ep.op.Method, ep.op.URL)})
		return true
	}
	hp := p.At(l.headerOff)
	h := c.Writer.Header()
	if l.etag >= 0 && status == ep.op.Status {
		if tag := l.fields[l.etag].text(hp); tag != "" && ifNoneMatch(c.Request, tag) {
			status = http.StatusNotModified
		}
	}
	for i := range l.fields {
		f := &l.fields[i]
		if !f.carriedBy(status, ep.op.Status) {
			continue
		}
		v := f.text(hp)
		if v == "" {
			if f.required && ep.checkIO {
				ep.abort(c, &Error{Status: http.StatusInternalServerError, Message: "Response validation failed",
					Cause: fmt.Errorf("handler left the required header %s empty on a %d answer", f.name, status)})
				return true
			}
			continue
		}
		if len(vals) == cap(vals) {
			vals = make([]string, 0, len(l.fields)) // one allocation for the values left
		}
		vals = append(vals, v)
		h[f.name] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	if ep.noBody || status == http.StatusNotModified || status == http.StatusNoContent {
		c.Status(status)
		c.Writer.WriteHeaderNow()
		return true
	}
	raw := fieldmem.Get[[]byte](p.At(l.rawOff))
	if raw == nil {
		c.Status(status)
		return false
	}
	ct := fieldmem.Get[string](p.At(l.ctOff))
	if ct == "" {
		ct = jsonContentType[0]
	}
	if !(ct == jsonContentType[0] && l.jsonDocumented) && !l.documented(ct) {
		ep.abort(c, &Error{Status: http.StatusInternalServerError, Message: "Response validation failed",
			Cause: fmt.Errorf("handler answered %s, which %s %s does not document", ct, ep.op.Method, ep.op.URL)})
		return true
	}
	if l.checkJSON && isJSONMediaType(ct) {
		if err := ep.checkRawJSON(raw); err != nil {
			ep.abort(c, err)
			return true
		}
	}
	if ct == jsonContentType[0] {
		h["Content-Type"] = jsonContentType
	} else {
		h["Content-Type"] = l.contentType(ct)
	}
	if len(raw) >= unbufferedBody {
		h["Content-Length"] = []string{strconv.Itoa(len(raw))}
	}
	c.Status(status)
	_, _ = c.Writer.Write(raw)
	return true
}

func isJSONMediaType(ct string) bool {
	if ct == jsonContentType[0] {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// checkRawJSON validates an encoded JSON body against the output schema.
func (ep *endpoint[A, In, Out]) checkRawJSON(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return &Error{Status: http.StatusInternalServerError, Message: "Response validation failed", Cause: fmt.Errorf("handler's JSON body does not parse: %w", err)}
	}
	var errs schema.Errors
	ep.out.CheckJSON(doc, "response", &errs)
	if len(errs) == 0 {
		return nil
	}
	e := &Error{Status: http.StatusInternalServerError, Message: "Response validation failed", Cause: fmt.Errorf("handler result does not match %s: %v", ep.out.Type(), errs)}
	if !ep.s.set.production {
		e.Details = errs
	}
	return e
}

// ifNoneMatch reports whether the request's If-None-Match names tag (weak comparison, RFC
// 9110 13.1.2), for GET and HEAD.
func ifNoneMatch(r *http.Request, tag string) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	inm := r.Header["If-None-Match"]
	if len(inm) == 0 {
		return false
	}
	tag = strings.TrimPrefix(tag, "W/")
	for _, line := range inm {
		for part := range strings.SplitSeq(line, ",") {
			part = strings.TrimSpace(part)
			if part == "*" || strings.TrimPrefix(part, "W/") == tag {
				return true
			}
		}
	}
	return false
}
