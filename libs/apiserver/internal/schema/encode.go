package schema

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/apistack/platform/libs/apiserver/jsontext"
)

// Encoder writes a value as JSON, byte for byte what encoding/json.Marshal
// writes, and checks it against the node it was built from in the same walk,
// with the same findings as Node.CheckValue. A handler's result is thus
// validated and encoded in one pass over precomputed field offsets and keys,
// instead of one reflective walk for the checks and another inside
// encoding/json, which also looks its type up in a cache on every call.
//
// The common shapes are compiled: structs without embedded fields, slices,
// arrays, maps with string keys, pointers, strings, numbers, booleans and
// time.Time. Anything else (a json.Marshaler or encoding.TextMarshaler,
// interfaces, []byte, embedded fields, the ",string" option) is checked with
// CheckValue and handed to encoding/json for that value, so the output never
// differs from json.Marshal's.
type Encoder struct {
	root *encNode
	node *Node // for CheckValue when the walk finds something
}

type encOp uint8

const (
	opDelegate encOp = iota // encoding/json for this value
	opString
	opBool
	opInt
	opUint
	opFloat
	opTime
	opPtr
	opSlice
	opArray
	opMap
	opStruct
)

// encNode is the compiled form of one (Go type, constraint node) pair.
type encNode struct {
	op    encOp
	bits  int        // float width
	node  *Node      // constraints; nil when there are none to check
	elem  *encNode   // pointer target, slice, array and map values
	field []encField // struct fields in declaration order
}

type encField struct {
	index int
	key   []byte // `"name":`, escaped as encoding/json escapes it
	name  string // the JSON name
	enc   *encNode
	omit  func(reflect.Value) bool // omitempty / omitzero; nil: never omitted
	check *Node                    // non-nil when the field has constraints
}

// maxDepth bounds nesting through pointers, slices and maps, so a cyclic
// value fails instead of growing the stack without end (encoding/json
// tracks the pointers it has seen instead; no real response nests this deep).
const maxDepth = 10000

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	isZeroerType      = reflect.TypeFor[interface{ IsZero() bool }]()
)

// NewEncoder compiles the encoder of values of type t, checked against n,
// the node Registry.Type built for t.
func NewEncoder(t reflect.Type, n *Node) *Encoder {
	c := compiler{seen: map[encKey]*encNode{}}
	return &Encoder{root: c.compile(t, n), node: n}
}

type encKey struct {
	t reflect.Type
	n *Node
}

type compiler struct {
	seen map[encKey]*encNode
}

func (c *compiler) compile(t reflect.Type, n *Node) *encNode {
	k := encKey{t, n}
	if e, ok := c.seen[k]; ok {
		return e // recursive type: the node is being (or was) compiled
	}
	e := &encNode{}
	if n != nil && !n.trivial() {
		e.node = n
	}
	c.seen[k] = e
	if t == timeType {
		e.op = opTime
		return e
	}
	if t.Kind() != reflect.Pointer &&
		(t.Implements(marshalerType) || t.Implements(textMarshalerType) ||
			reflect.PointerTo(t).Implements(marshalerType) || reflect.PointerTo(t).Implements(textMarshalerType)) {
		return e // opDelegate
	}
	switch t.Kind() {
	case reflect.Pointer:
		// Never delegated: encoding/json writes null for nil and otherwise
		// encodes the (addressable) target, whose methods the target's own
		// node finds.
		e.op, e.elem = opPtr, c.compile(t.Elem(), n)
	case reflect.String:
		e.op = opString
	case reflect.Bool:
		e.op = opBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.op = opInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		e.op = opUint
	case reflect.Float32, reflect.Float64:
		e.op, e.bits = opFloat, t.Bits()
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 || n != nil && n.kind != kindSlice {
			return e // []byte is base64 text; a node of another shape is not ours to read
		}
		e.op, e.elem = opArray, c.compile(t.Elem(), elemOf(n))
		if t.Kind() == reflect.Slice {
			e.op = opSlice
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String || n != nil && n.kind != kindMap {
			return e
		}
		e.op, e.elem = opMap, c.compile(t.Elem(), elemOf(n))
	case reflect.Struct:
		if fields, ok := c.structFields(t, n); ok {
			e.op, e.field = opStruct, fields
		}
	}
	return e
}

// elemOf is the node of n's items or values; nil (nothing to check) when
// n is nil, as below a recursive reference, whose node has no children.
func elemOf(n *Node) *Node {
	if n == nil {
		return nil
	}
	return n.elem
}

// structFields lists what encoding/json writes for t, in its order, or
// reports false for the shapes left to encoding/json (embedded fields, the
// ",string" option, two fields with one name).
func (c *compiler) structFields(t reflect.Type, n *Node) ([]encField, bool) {
	byIndex := map[int]*Field{}
	if n != nil && n.kind == kindStruct {
		for _, f := range n.Fields() {
			if len(f.Index) == 1 {
				byIndex[f.Index[0]] = f
			}
		}
	}
	var fields []encField
	names := map[string]bool{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			return nil, false
		}
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if !validTagName(name) {
			name = sf.Name
		}
		if hasOption(opts, "string") || names[name] {
			return nil, false
		}
		names[name] = true
		key, _ := json.Marshal(name)
		f := encField{index: i, key: append(key, ':'), name: name}
		var fn *Node
		if nf := byIndex[i]; nf != nil {
			fn = nf.Node
			if !fn.trivial() {
				f.check = fn
			}
		}
		f.enc = c.compile(sf.Type, fn)
		switch {
		case hasOption(opts, "omitzero") && hasOption(opts, "omitempty"):
			zero := isZeroFunc(sf.Type)
			f.omit = func(v reflect.Value) bool { return zero(v) || isEmptyValue(v) }
		case hasOption(opts, "omitzero"):
			f.omit = isZeroFunc(sf.Type)
		case hasOption(opts, "omitempty"):
			f.omit = isEmptyValue
		}
		fields = append(fields, f)
	}
	return fields, true
}

func hasOption(opts, name string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == name {
			return true
		}
	}
	return false
}

// validTagName is encoding/json's rule for a usable name in a json tag.
func validTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// isEmptyValue is encoding/json's omitempty test.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// isZeroFunc is encoding/json's omitzero test: the type's IsZero method
// when it has one, the zero value otherwise.
func isZeroFunc(t reflect.Type) func(reflect.Value) bool {
	type isZeroer interface{ IsZero() bool }
	switch {
	case t.Kind() == reflect.Interface && t.Implements(isZeroerType):
		return func(v reflect.Value) bool {
			return v.IsNil() || (v.Elem().Kind() == reflect.Pointer && v.Elem().IsNil()) ||
				v.Interface().(isZeroer).IsZero()
		}
	case t.Kind() == reflect.Pointer && t.Implements(isZeroerType):
		return func(v reflect.Value) bool { return v.IsNil() || v.Interface().(isZeroer).IsZero() }
	case t.Implements(isZeroerType):
		return func(v reflect.Value) bool { return v.Interface().(isZeroer).IsZero() }
	case reflect.PointerTo(t).Implements(isZeroerType):
		return func(v reflect.Value) bool {
			if !v.CanAddr() {
				v2 := reflect.New(v.Type()).Elem()
				v2.Set(v)
				v = v2
			}
			return v.Addr().Interface().(isZeroer).IsZero()
		}
	}
	return reflect.Value.IsZero
}

// Append appends the JSON encoding of v, which must be of the type the
// encoder was built for and, like json.Marshal's argument, not addressable
// (addressability decides which MarshalJSON methods encoding/json calls).
// With errs non-nil, v is also checked, and what CheckValue(v, path) finds
// is appended to errs. The error is encoding/json's kind of failure (a NaN,
// a cycle, a MarshalJSON error); dst is then unusable.
func (e *Encoder) Append(dst []byte, v reflect.Value, path string, errs *Errors) ([]byte, error) {
	st := encState{}
	if errs == nil {
		dst = st.encode(dst, e.root, v)
		return dst, st.err
	}
	// The walk only learns whether something is wrong: tracking where it
	// is would cost every valid value. A finding is rare (a bug in the
	// handler), and CheckValue then walks again to say where.
	st.w = getWalker("", 1)
	dst = st.encode(dst, e.root, v)
	found := st.w.failed()
	st.w.release(nil)
	if found {
		e.node.CheckValue(v, path, errs)
	}
	return dst, st.err
}

type encState struct {
	w     *walker // nil: no checks
	err   error
	depth int
}

func (s *encState) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

func (s *encState) encode(b []byte, e *encNode, v reflect.Value) []byte {
	check := s.w != nil && e.node != nil
	switch e.op {
	case opString:
		if check {
			e.node.checkString(v.String(), s.w)
		}
		return jsontext.AppendString(b, v.String(), true)
	case opBool:
		return strconv.AppendBool(b, v.Bool())
	case opInt:
		if check {
			e.node.checkNumber(float64(v.Int()), s.w)
		}
		return strconv.AppendInt(b, v.Int(), 10)
	case opUint:
		if check {
			e.node.checkNumber(float64(v.Uint()), s.w)
		}
		return strconv.AppendUint(b, v.Uint(), 10)
	case opFloat:
		return s.float(b, e, v.Float())
	case opTime:
		return s.time(b, v)
	case opPtr:
		if v.IsNil() {
			if check && !e.node.nullable && e.node.kind != kindAny {
				s.w.add("must not be null")
			}
			return append(b, "null"...)
		}
		if !s.enter() {
			return b
		}
		b = s.encode(b, e.elem, v.Elem())
		s.depth--
		return b
	case opSlice:
		if v.IsNil() {
			if check {
				e.node.checkItems(0, s.w)
			}
			return append(b, "null"...)
		}
		if !s.enter() {
			return b
		}
		b = s.array(b, e, v)
		s.depth--
		return b
	case opArray:
		return s.array(b, e, v)
	case opMap:
		if v.IsNil() {
			return append(b, "null"...)
		}
		if !s.enter() {
			return b
		}
		b = s.mapping(b, e, v)
		s.depth--
		return b
	case opStruct:
		return s.object(b, e, v)
	}
	return s.delegate(b, e, v)
}

func (s *encState) enter() bool {
	s.depth++
	if s.depth > maxDepth {
		s.fail(errors.New("json: value nested more than 10000 levels (a cycle?)"))
		return false
	}
	return true
}

func (s *encState) float(b []byte, e *encNode, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		if s.w != nil && e.node != nil {
			s.w.add("must be a finite number")
		}
		s.fail(fmt.Errorf("json: unsupported value: %s", strconv.FormatFloat(f, 'g', -1, e.bits)))
		return b
	}
	if s.w != nil && e.node != nil {
		e.node.checkNumber(f, s.w)
	}
	// encoding/json's floatEncoder: ES6 number formatting.
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if e.bits == 64 && (abs < 1e-6 || abs >= 1e21) || e.bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, e.bits)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

func (s *encState) time(b []byte, v reflect.Value) []byte {
	var t time.Time
	if v.CanAddr() {
		t = *v.Addr().Interface().(*time.Time) // no copy to the heap
	} else {
		t = v.Interface().(time.Time)
	}
	start := len(b)
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		s.fail(fmt.Errorf("json: error calling MarshalJSON for type time.Time: Time.MarshalJSON: %w", err))
		return b[:start]
	}
	return append(b, '"')
}

func (s *encState) array(b []byte, e *encNode, v reflect.Value) []byte {
	n := v.Len()
	if s.w != nil && e.node != nil {
		e.node.checkItems(n, s.w)
	}
	b = append(b, '[')
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = s.encode(b, e.elem, v.Index(i))
	}
	return append(b, ']')
}

func (s *encState) mapping(b []byte, e *encNode, v reflect.Value) []byte {
	keys := make([]string, 0, v.Len())
	for it := v.MapRange(); it.Next(); {
		keys = append(keys, it.Key().String())
	}
	slices.Sort(keys)
	b = append(b, '{')
	kv := reflect.New(v.Type().Key()).Elem()
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsontext.AppendString(b, k, true)
		b = append(b, ':')
		kv.SetString(k)
		b = s.encode(b, e.elem, v.MapIndex(kv))
	}
	return append(b, '}')
}

func (s *encState) object(b []byte, e *encNode, v reflect.Value) []byte {
	b = append(b, '{')
	first := true
	for i := range e.field {
		f := &e.field[i]
		fv := v.Field(f.index)
		if f.omit != nil && f.omit(fv) {
			if s.w != nil && f.check != nil {
				f.check.checkValue(fv, s.w) // CheckValue looks at omitted fields too
			}
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, f.key...)
		b = s.encode(b, f.enc, fv)
	}
	return append(b, '}')
}

// delegate checks v as CheckValue does and has encoding/json write it. An
// addressable value is passed by pointer, so that encoding/json sees it (and
// everything inside it) as addressable, as when it walks the parent, and
// runs the same MarshalJSON and MarshalText methods.
func (s *encState) delegate(b []byte, e *encNode, v reflect.Value) []byte {
	if s.w != nil && e.node != nil {
		e.node.checkValue(v, s.w)
	}
	var x any
	if v.Kind() == reflect.Interface {
		if v.IsNil() {
			return append(b, "null"...)
		}
		x = v.Elem().Interface()
	} else if v.CanAddr() {
		x = v.Addr().Interface()
	} else {
		x = v.Interface()
	}
	out, err := json.Marshal(x)
	if err != nil {
		s.fail(err)
		return b
	}
	return append(b, out...)
}

// bufs recycles encoding buffers; one larger than maxPooled is dropped so a
// rare huge response does not pin its memory.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

const maxPooled = 64 << 10

// GetBuffer returns an empty buffer for Append; PutBuffer gives it back once
// its bytes have been written.
func GetBuffer() *[]byte { return bufs.Get().(*[]byte) }

// PutBuffer recycles b (see GetBuffer).
func PutBuffer(b *[]byte) {
	if cap(*b) > maxPooled {
		return
	}
	*b = (*b)[:0]
	bufs.Put(b)
}
