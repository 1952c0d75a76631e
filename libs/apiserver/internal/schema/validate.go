package schema

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/mail"
	"net/netip"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// FieldError is one violation: where (`query.limit`, `body.tags[2]`) and what.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Errors collects violations; every check appends instead of stopping, so a
// client sees its mistakes at once, up to MaxFindings of them.
type Errors []FieldError

// MaxFindings is how many violations one check records. The rest are only
// counted (CheckJSON and CheckValue return how many), so a hostile body
// of a million bad items costs a counter, not a million formatted
// messages in memory and in the answer.
const MaxFindings = 20

func (e *Errors) add(path, format string, args ...any) {
	*e = append(*e, FieldError{Field: path, Message: fmt.Sprintf(format, args...)})
}

// walker carries the current location as segments and renders it only
// when a violation is found: building "body.items[3].name" for every value
// that is fine would dominate the cost of checking a large response.
// Walkers are pooled, and collect findings in their own slice, so that the
// caller's Errors stays on its stack.
type walker struct {
	found   Errors
	room    int // findings still recorded; past it they are only counted
	omitted int
	segs    []seg
}

type seg struct {
	name  string
	index int // used when name == ""
}

var walkers = sync.Pool{New: func() any { return &walker{segs: make([]seg, 0, 8)} }}

// getWalker returns a pooled walker at root that records up to room
// findings; release gives it back.
func getWalker(root string, room int) *walker {
	w := walkers.Get().(*walker)
	w.segs = w.segs[:0]
	w.room = room
	w.omitted = 0
	if root != "" {
		w.segs = append(w.segs, seg{name: root})
	}
	return w
}

// roomIn is what a check appending to errs may still record.
func roomIn(errs *Errors) int {
	if errs == nil {
		return MaxFindings
	}
	return max(0, MaxFindings-len(*errs))
}

// release appends the findings to errs (when not nil), pools w and
// returns how many findings were counted but not recorded.
func (w *walker) release(errs *Errors) int {
	if errs != nil {
		*errs = append(*errs, w.found...)
	}
	omitted := w.omitted
	clear(w.found)
	w.found = w.found[:0]
	walkers.Put(w)
	return omitted
}

// wrongType records "expected <want>, got <what v is>". It is the finding
// a hostile array of wrong items repeats, so past the room it costs a
// counter: no argument is boxed for a message never written.
func (w *walker) wrongType(want string, v any) {
	if len(w.found) >= w.room {
		w.omitted++
		return
	}
	w.found.add(w.path(), "expected %s, got %s", want, jsonKind(v))
}

// failed reports whether the walk found anything, recorded or not.
func (w *walker) failed() bool { return len(w.found) > 0 || w.omitted > 0 }

func (w *walker) push(name string) { w.segs = append(w.segs, seg{name: name}) }
func (w *walker) pushIndex(i int)  { w.segs = append(w.segs, seg{index: i}) }
func (w *walker) pop()             { w.segs = w.segs[:len(w.segs)-1] }

func (w *walker) path() string {
	var b strings.Builder
	for i, s := range w.segs {
		if s.name == "" {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.index))
			b.WriteByte(']')
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.name)
	}
	return b.String()
}

// add records a finding while there is room, and past it only counts it:
// neither the path nor the message is formatted.
func (w *walker) add(format string, args ...any) {
	if len(w.found) >= w.room {
		w.omitted++
		return
	}
	w.found.add(w.path(), format, args...)
}

// ParseText coerces one text value (a query or path parameter, a tag
// default) to the node's Go type. Lists take one element per call.
func (n *Node) ParseText(s string) (reflect.Value, error) {
	target := n
	if n.kind == kindSlice {
		target = n.elem
	}
	v := reflect.New(target.typ).Elem()
	switch target.kind {
	case kindString:
		if target.typ.Kind() != reflect.String {
			return v, fmt.Errorf("expected %s", target.typ)
		}
		v.SetString(s)
	case kindInt:
		i, err := strconv.ParseInt(s, 10, target.bits)
		if err != nil {
			return v, fmt.Errorf("expected an integer, got %q", s)
		}
		v.SetInt(i)
	case kindUint:
		u, err := strconv.ParseUint(s, 10, target.bits)
		if err != nil {
			return v, fmt.Errorf("expected a non-negative integer, got %q", s)
		}
		v.SetUint(u)
	case kindFloat:
		f, err := strconv.ParseFloat(s, target.bits)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return v, fmt.Errorf("expected a number, got %q", s)
		}
		v.SetFloat(f)
	case kindBool:
		switch strings.ToLower(s) {
		case "true", "1":
			v.SetBool(true)
		case "false", "0":
			v.SetBool(false)
		default:
			return v, fmt.Errorf("expected true or false, got %q", s)
		}
	case kindTime:
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return v, fmt.Errorf("expected an RFC 3339 date-time, got %q", s)
		}
		v.Set(reflect.ValueOf(t))
	default:
		return v, fmt.Errorf("%s cannot be read from text", target.typ)
	}
	return v, nil
}

// SetText parses s and stores it in dst (appending for lists) without an
// intermediate allocation for the common scalar kinds: this is the per
// request path of query and path parameters.
func (n *Node) SetText(dst reflect.Value, s string) error {
	if n.kind == kindSlice || dst.Kind() == reflect.Pointer {
		v, err := n.ParseText(s)
		if err != nil {
			return err
		}
		setValue(dst, v)
		return nil
	}
	switch n.kind {
	case kindString:
		if dst.Kind() == reflect.String {
			dst.SetString(s)
			return nil
		}
	case kindInt:
		i, err := strconv.ParseInt(s, 10, n.bits)
		if err != nil {
			return fmt.Errorf("expected an integer, got %q", s)
		}
		dst.SetInt(i)
		return nil
	case kindUint:
		u, err := strconv.ParseUint(s, 10, n.bits)
		if err != nil {
			return fmt.Errorf("expected a non-negative integer, got %q", s)
		}
		dst.SetUint(u)
		return nil
	}
	v, err := n.ParseText(s)
	if err != nil {
		return err
	}
	setValue(dst, v)
	return nil
}

// CheckValue validates a Go value (a coerced parameter or a handler's
// result) against the node, appending violations under path until errs
// holds MaxFindings; it returns how many more it found.
func (n *Node) CheckValue(v reflect.Value, path string, errs *Errors) (omitted int) {
	if n.trivial() {
		return 0
	}
	w := getWalker(path, roomIn(errs))
	n.checkValue(v, w)
	return w.release(errs)
}

func (n *Node) checkValue(v reflect.Value, w *walker) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			if !n.nullable && v.Kind() == reflect.Pointer && n.kind != kindAny {
				w.add("must not be null")
			}
			return
		}
		v = v.Elem()
	}
	switch n.kind {
	case kindString:
		if v.Kind() == reflect.String {
			n.checkString(v.String(), w)
		}
	case kindInt:
		n.checkNumber(float64(v.Int()), w)
	case kindUint:
		n.checkNumber(float64(v.Uint()), w)
	case kindFloat:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			w.add("must be a finite number")
			return
		}
		n.checkNumber(f, w)
	case kindSlice:
		if v.Kind() == reflect.Slice && v.IsNil() {
			if n.minItems != nil && *n.minItems > 0 {
				w.add("must have at least %d items", *n.minItems)
			}
			return
		}
		if !n.checkItems(v.Len(), w) || n.elem.trivial() {
			return
		}
		for i := 0; i < v.Len(); i++ {
			w.pushIndex(i)
			n.elem.checkValue(v.Index(i), w)
			w.pop()
		}
	case kindMap:
		if n.elem.trivial() {
			return
		}
		iter := v.MapRange()
		for iter.Next() {
			w.push(iter.Key().String())
			n.elem.checkValue(iter.Value(), w)
			w.pop()
		}
	case kindStruct:
		for _, f := range n.Fields() {
			if f.Node.trivial() {
				continue
			}
			fv, ok := fieldByIndex(v, f.Index)
			if !ok {
				continue
			}
			w.push(f.Name)
			f.Node.checkValue(fv, w)
			w.pop()
		}
	}
}

// trivial reports a scalar node that no Go value can violate, so walks
// skip it.
func (n *Node) trivial() bool {
	switch n.kind {
	case kindString, kindInt, kindUint, kindBool, kindTime, kindAny:
		return n.min == nil && n.max == nil && n.exclMin == nil && n.exclMax == nil &&
			n.minLen == nil && n.maxLen == nil && n.pattern == nil && len(n.enum) == 0 &&
			(n.format == "" || n.kind == kindTime)
	}
	return false
}

// fieldByIndex is v.FieldByIndex without panicking on nil embedded pointers.
func fieldByIndex(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}

// CheckJSON validates a value decoded by encoding/json with UseNumber
// (maps, slices, json.Number, string, bool, nil) against the node,
// appending violations under path until errs holds MaxFindings; it
// returns how many more it found. An array longer than its maxItems is
// not walked: its items are not looked at, so a huge array costs one
// finding. Otherwise the walk is linear in the document, which the
// caller's body limit bounds.
func (n *Node) CheckJSON(v any, path string, errs *Errors) (omitted int) {
	w := getWalker(path, roomIn(errs))
	n.checkJSON(v, w)
	return w.release(errs)
}

func (n *Node) checkJSON(v any, w *walker) {
	if v == nil {
		if !n.nullable && n.kind != kindAny {
			w.add("must not be null")
		}
		return
	}
	switch n.kind {
	case kindAny:
		return
	case kindString, kindTime:
		s, ok := v.(string)
		if !ok {
			w.wrongType("a string", v)
			return
		}
		n.checkString(s, w)
	case kindBool:
		if _, ok := v.(bool); !ok {
			w.wrongType("a boolean", v)
		}
	case kindInt, kindUint:
		num, ok := v.(json.Number)
		if !ok {
			w.wrongType("an integer", v)
			return
		}
		if n.kind == kindInt {
			i, err := strconv.ParseInt(num.String(), 10, n.bits)
			if err != nil {
				w.add("expected an integer that fits in %d bits, got %s", n.bits, num)
				return
			}
			n.checkNumber(float64(i), w)
		} else {
			u, err := strconv.ParseUint(num.String(), 10, n.bits)
			if err != nil {
				w.add("expected a non-negative integer that fits in %d bits, got %s", n.bits, num)
				return
			}
			n.checkNumber(float64(u), w)
		}
	case kindFloat:
		num, ok := v.(json.Number)
		if !ok {
			w.wrongType("a number", v)
			return
		}
		f, err := num.Float64()
		if err != nil {
			w.add("expected a number, got %s", num)
			return
		}
		n.checkNumber(f, w)
	case kindSlice:
		list, ok := v.([]any)
		if !ok {
			w.wrongType("an array", v)
			return
		}
		if !n.checkItems(len(list), w) {
			return
		}
		for i, item := range list {
			w.pushIndex(i)
			n.elem.checkJSON(item, w)
			w.pop()
		}
	case kindMap:
		obj, ok := v.(map[string]any)
		if !ok {
			w.wrongType("an object", v)
			return
		}
		if n.elem.kind == kindAny {
			return
		}
		// Sorted, so that which findings fit under the cap does not
		// depend on map order.
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			w.push(k)
			n.elem.checkJSON(obj[k], w)
			w.pop()
		}
	case kindStruct:
		obj, ok := v.(map[string]any)
		if !ok {
			w.wrongType("an object", v)
			return
		}
		for _, f := range n.Fields() {
			item, present := obj[f.Name]
			w.push(f.Name)
			if !present {
				if f.Required {
					w.add("is required")
				}
			} else {
				f.Node.checkJSON(item, w)
			}
			w.pop()
		}
		first, count := unknownKeys(obj, n.byName, max(0, w.room-len(w.found)))
		for _, k := range first {
			w.push(k)
			w.add("is not an allowed field")
			w.pop()
		}
		w.omitted += count - len(first)
	}
}

// unknownKeys returns the keys of obj that are not fields: the first
// limit of them by name, in order (so a request gets the same findings
// whatever the map order), and how many there are.
func unknownKeys(obj map[string]any, known map[string]*Field, limit int) (first []string, count int) {
	for k := range obj {
		if _, ok := known[k]; !ok {
			count++
			first = keepFirst(first, k, limit)
		}
	}
	return first, count
}

// ApplyDefaults sets declared defaults on fields that the decoded JSON
// object did not contain. v is the addressable value decoded from the same
// document.
func (n *Node) ApplyDefaults(doc any, v reflect.Value) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	switch n.kind {
	case kindStruct:
		obj, _ := doc.(map[string]any)
		for _, f := range n.Fields() {
			fv, ok := fieldByIndex(v, f.Index)
			if !ok {
				continue
			}
			item, present := obj[f.Name]
			if !present {
				if f.Default.IsValid() {
					setValue(fv, f.Default)
				}
				continue
			}
			f.Node.ApplyDefaults(item, fv)
		}
	case kindSlice:
		list, _ := doc.([]any)
		for i := 0; i < len(list) && i < v.Len(); i++ {
			n.elem.ApplyDefaults(list[i], v.Index(i))
		}
	}
}

// SetValue stores x (of the node's base type, or a list element) in dst,
// allocating pointers as needed.
func setValue(dst, x reflect.Value) {
	for dst.Kind() == reflect.Pointer {
		if dst.IsNil() {
			dst.Set(reflect.New(dst.Type().Elem()))
		}
		dst = dst.Elem()
	}
	if dst.Kind() == reflect.Slice && x.Type() != dst.Type() {
		dst.Set(reflect.Append(dst, x))
		return
	}
	dst.Set(x)
}

// SetValue is setValue for the binder in the parent package.
func SetValue(dst, x reflect.Value) { setValue(dst, x) }

func (n *Node) checkString(s string, w *walker) {
	if n.minLen != nil || n.maxLen != nil {
		l := utf8.RuneCountInString(s)
		if n.minLen != nil && l < *n.minLen {
			if *n.minLen == 1 {
				w.add("must not be empty")
			} else {
				w.add("must be at least %d characters long", *n.minLen)
			}
		}
		if n.maxLen != nil && l > *n.maxLen {
			w.add("must be at most %d characters long", *n.maxLen)
		}
	}
	if n.pattern != nil && !n.pattern.MatchString(s) {
		w.add("must match the pattern %s", n.pattern)
	}
	if len(n.enum) > 0 {
		found := false
		for _, e := range n.enum {
			if es, ok := e.(string); ok && es == s {
				found = true
				break
			}
		}
		if !found {
			w.add("must be one of: %s", enumList(n.enum))
		}
	}
	if n.format != "" {
		if msg := checkFormat(n.format, s); msg != "" {
			w.add("%s", msg)
		}
	}
}

func (n *Node) checkNumber(f float64, w *walker) {
	if n.min != nil && f < *n.min {
		w.add("must be at least %s", fmtNum(*n.min))
	}
	if n.max != nil && f > *n.max {
		w.add("must be at most %s", fmtNum(*n.max))
	}
	if n.exclMin != nil && f <= *n.exclMin {
		w.add("must be greater than %s", fmtNum(*n.exclMin))
	}
	if n.exclMax != nil && f >= *n.exclMax {
		w.add("must be less than %s", fmtNum(*n.exclMax))
	}
	if len(n.enum) > 0 {
		found := false
		for _, e := range n.enum {
			if toFloat(e) == f {
				found = true
				break
			}
		}
		if !found {
			w.add("must be one of: %s", enumList(n.enum))
		}
	}
}

// checkItems checks a list's length, and reports false when it is over
// maxItems: the caller then does not walk the items.
func (n *Node) checkItems(l int, w *walker) bool {
	if n.minItems != nil && l < *n.minItems {
		w.add("must have at least %d items", *n.minItems)
	}
	if n.maxItems != nil && l > *n.maxItems {
		w.add("must have at most %d items, got %d", *n.maxItems, l)
		return false
	}
	return true
}

func checkFormat(format, s string) string {
	switch format {
	case "date-time":
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return "must be an RFC 3339 date-time"
		}
	case "date":
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return "must be a date (YYYY-MM-DD)"
		}
	case "email":
		if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
			return "must be an email address"
		}
	case "uri", "url":
		if u, err := url.Parse(s); err != nil || u.Scheme == "" {
			return "must be an absolute URI"
		}
	case "uuid":
		if !isUUID(s) {
			return "must be a UUID"
		}
	case "ipv4":
		if a, err := netip.ParseAddr(s); err != nil || !a.Is4() {
			return "must be an IPv4 address"
		}
	case "ipv6":
		if a, err := netip.ParseAddr(s); err != nil || !a.Is6() {
			return "must be an IPv6 address"
		}
	case "ip":
		if _, err := netip.ParseAddr(s); err != nil {
			return "must be an IP address"
		}
	}
	return ""
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "null"
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	case float64:
		return x
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(rv.Uint())
	case reflect.Float32, reflect.Float64:
		return rv.Float()
	}
	return math.NaN()
}

func enumList(values []any) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ", ")
}
