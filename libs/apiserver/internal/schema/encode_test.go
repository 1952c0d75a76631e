package schema

import (
	"encoding/json"
	"errors"
	"math"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// Types for the differential tests: every shape the encoder compiles, and
// the ones it hands to encoding/json.

type valMarshaler struct{ X int }

func (v valMarshaler) MarshalJSON() ([]byte, error) {
	return []byte(`{ "v" : ` + string(rune('0'+v.X%10)) + ` }`), nil
}

type ptrMarshaler struct{ X int }

func (p *ptrMarshaler) MarshalJSON() ([]byte, error) { return []byte(`"ptr<&>"`), nil }

type textKey string

func (k textKey) MarshalText() ([]byte, error) { return []byte("T:" + string(k)), nil }

type zeroer struct{ N int }

func (z zeroer) IsZero() bool { return z.N < 0 }

type ptrZeroer struct{ N int }

func (z *ptrZeroer) IsZero() bool { return z.N == 7 }

type embedded struct {
	valMarshaler
	Own string `json:"own"`
}

type inner struct {
	Name  string   `json:"name" minLength:"1" maxLength:"8"`
	Score float64  `json:"score" minimum:"0" maximum:"100"`
	Tags  []string `json:"tags,omitempty" maxItems:"2" enum:"a,b,<c>"`
}

type everything struct {
	S         string           `json:"s"`
	Esc       string           `json:"esc,omitempty"`
	B         bool             `json:"b"`
	I         int              `json:"i" minimum:"-5"`
	I8        int8             `json:"i8"`
	U         uint64           `json:"u"`
	F32       float32          `json:"f32"`
	F64       float64          `json:"f64"`
	T         time.Time        `json:"t"`
	TP        *time.Time       `json:"tp"`
	TZ        time.Time        `json:"tz,omitzero"`
	P         *inner           `json:"p"`
	PNil      *inner           `json:"p_nil"`
	PP        **int            `json:"pp"`
	Inner     inner            `json:"inner"`
	List      []inner          `json:"list" maxItems:"3"`
	NilList   []int            `json:"nil_list"`
	Empty     []int            `json:"empty,omitempty"`
	Arr       [3]int           `json:"arr"`
	ByteArr   [2]byte          `json:"byte_arr"`
	Bytes     []byte           `json:"bytes"`
	Map       map[string]inner `json:"map"`
	NilMap    map[string]int   `json:"nil_map"`
	NamedKeys map[textKey]int  `json:"named_keys"`
	Any       any              `json:"any"`
	AnyNil    any              `json:"any_nil"`
	Raw       json.RawMessage  `json:"raw"`
	VM        valMarshaler     `json:"vm"`
	PM        ptrMarshaler     `json:"pm"`
	PMs       []ptrMarshaler   `json:"pms"`
	PMPtr     *ptrMarshaler    `json:"pm_ptr"`
	Text      textKey          `json:"text"`
	Addr      netip.Addr       `json:"addr"`
	Zero      zeroer           `json:"zero,omitzero"`
	PZero     ptrZeroer        `json:"pzero,omitzero"`
	Both      string           `json:"both,omitempty,omitzero"`
	Emb       embedded         `json:"emb"`
	//lint:ignore SA5008 a malformed tag on purpose: the encoder must fall back as encoding/json does
	BadTag int `json:"bad\"tag"`
	//lint:ignore SA5008 "-," names the field "-", as encoding/json documents
	Dash     int                   `json:"-,"`
	Skipped  int                   `json:"-"`
	unexp    int                   //nolint:unused // encoding/json skips it
	Untagged string                //
	Nested   map[string][]*float64 `json:"nested"`
}

type tree struct {
	Label    string  `json:"label" minLength:"2"`
	Children []*tree `json:"children,omitempty"`
}

func sample() everything {
	now := time.Date(2026, 11, 22, 7, 30, 0, 123456789, time.FixedZone("x", 3600))
	one := 1
	pone := &one
	half := 0.5
	return everything{
		S: "plain", Esc: "<a href=\"x\">&</a>\n\t\x01\x7f é \u2028\u2029 \xff end", B: true, I: -3, I8: -128,
		U: math.MaxUint64, F32: 3.14159, F64: 1e21, T: now, TP: &now,
		P:     &inner{Name: "p", Score: 1},
		PP:    &pone,
		Inner: inner{Name: "inner", Score: 99.5, Tags: []string{"a", "<c>"}},
		List:  []inner{{Name: "x", Score: 1e-7}, {Name: "y", Score: 100}},
		Empty: []int{}, Arr: [3]int{1, 2, 3}, ByteArr: [2]byte{1, 2}, Bytes: []byte("bytes"),
		Map:       map[string]inner{"z": {Name: "z"}, "a": {Name: "a", Score: 2}, "<&>": {Name: "h"}},
		NamedKeys: map[textKey]int{"k": 1},
		Any:       map[string]any{"x": []any{1, "two", nil}}, Raw: json.RawMessage(`{ "raw" : [1, 2] }`),
		VM: valMarshaler{X: 3}, PMs: []ptrMarshaler{{1}, {2}}, PMPtr: &ptrMarshaler{},
		Text: "tk", Addr: netip.MustParseAddr("2001:db8::1"), Zero: zeroer{N: -1}, PZero: ptrZeroer{N: 7},
		Emb: embedded{valMarshaler{1}, "own"}, BadTag: 1, Dash: 2, Skipped: 3, unexp: 4,
		Untagged: "u", Nested: map[string][]*float64{"n": {&half, nil}},
	}
}

func encodeWith(t *testing.T, v any, check bool) ([]byte, Errors, error) {
	t.Helper()
	n, err := NewRegistry().Type(reflect.TypeOf(v))
	if err != nil {
		t.Fatal(err)
	}
	var errs Errors
	var p *Errors
	if check {
		p = &errs
	}
	out, err := NewEncoder(reflect.TypeOf(v), n).Append(nil, reflect.ValueOf(v), "response", p)
	return out, errs, err
}

func checkValue(t *testing.T, v any) Errors {
	t.Helper()
	n, err := NewRegistry().Type(reflect.TypeOf(v))
	if err != nil {
		t.Fatal(err)
	}
	var errs Errors
	n.CheckValue(reflect.ValueOf(v), "response", &errs)
	return errs
}

func sortedErrs(e Errors) []string {
	s := make([]string, len(e))
	for i, x := range e {
		s[i] = x.Field + ": " + x.Message
	}
	slices.Sort(s)
	return s
}

// sameAsStdlib asserts the encoder writes json.Marshal's bytes and finds
// what CheckValue finds.
func sameAsStdlib(t *testing.T, name string, v any) {
	t.Helper()
	want, wantErr := json.Marshal(v)
	got, errs, err := encodeWith(t, v, true)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%s: error %v, encoding/json's %v", name, err, wantErr)
	}
	if err == nil && string(got) != string(want) {
		t.Fatalf("%s: bytes differ\n got %s\nwant %s", name, got, want)
	}
	if g, w := sortedErrs(errs), sortedErrs(checkValue(t, v)); !slices.Equal(g, w) {
		t.Fatalf("%s: findings differ\n got %q\nwant %q", name, g, w)
	}
}

func TestEncoderMatchesEncodingJSON(t *testing.T) {
	full := sample()
	var zero everything
	violating := sample()
	violating.Inner.Name = ""               // minLength
	violating.I = -6                        // minimum
	violating.List = make([]inner, 4)       // maxItems, and four empty names
	violating.Map["bad"] = inner{Score: -1} // name and score
	violating.Inner.Tags = []string{"z"}    // enum, in an omitempty field
	violating.P = &inner{Name: "123456789"} // maxLength through a pointer
	omitted := sample()
	omitted.Inner.Tags = nil

	rows := []struct {
		name string
		v    any
	}{
		{"everything", full},
		{"zero value", zero},
		{"violations", violating},
		{"omitted field", omitted},
		{"pointer to struct", &full},
		{"nil pointer", (*everything)(nil)},
		{"slice of structs", []inner{{Name: "a"}, {Name: ""}}},
		{"nil slice", []inner(nil)},
		{"map", map[string]*inner{"b": nil, "a": {Name: "x"}}},
		{"tree", tree{Label: "root", Children: []*tree{{Label: "a"}, {Label: "bb", Children: []*tree{{Label: "c"}}}}}},
		{"string", "<script>"},
		{"floats", []float64{0, math.Copysign(0, -1), 1, -1.5, 1e-6, 1e-7, 123456789, 1e20, 1e21, math.MaxFloat64, math.SmallestNonzeroFloat64}},
		{"float32s", []float32{0, 1e-7, 1e20, 1e21, 3.4e38, 1.0000001}},
		{"time", time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"any", []any{1, "x", nil, map[string]any{"b": 1, "a": []int{2}}}},
		{"string option", struct {
			Q int `json:"q,string"`
		}{42}},
		{"addressable string option", &struct {
			Q  int          `json:"q,string"`
			PM ptrMarshaler `json:"pm"`
		}{Q: 1}},
	}
	for _, r := range rows {
		sameAsStdlib(t, r.name, r.v)
	}
	// The rows above must exercise the compiled path, not only delegation.
	n, err := NewRegistry().Type(reflect.TypeFor[everything]())
	if err != nil {
		t.Fatal(err)
	}
	root := NewEncoder(reflect.TypeFor[everything](), n).root
	if root.op != opStruct {
		t.Fatalf("everything is not compiled (op %d)", root.op)
	}
	delegated := map[string]bool{}
	for _, f := range root.field {
		if f.enc.op == opDelegate {
			delegated[f.name] = true
		}
	}
	want := map[string]bool{"bytes": true, "byte_arr": true, "named_keys": false, "any": true, "any_nil": true, "raw": true,
		"vm": true, "pm": true, "pms": false, "text": true, "addr": true, "zero": false, "pzero": false, "emb": true}
	for name, d := range want {
		if delegated[name] != d {
			t.Errorf("field %s: delegated %v, want %v", name, delegated[name], d)
		}
	}
	if len(delegated) != 10 {
		t.Errorf("delegated fields %v, want 10", delegated)
	}
	if got := sortedErrs(checkValue(t, violating)); len(got) < 6 {
		t.Fatalf("the violating sample should break several constraints, CheckValue found %q", got)
	}
}

func TestEncoderFailsWhereEncodingJSONFails(t *testing.T) {
	type f struct {
		X float64 `json:"x"`
	}
	for _, v := range []any{f{X: math.NaN()}, f{X: math.Inf(-1)}, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if _, err := json.Marshal(v); err == nil {
			t.Fatalf("encoding/json accepts %v", v)
		}
		if _, _, err := encodeWith(t, v, false); err == nil {
			t.Fatalf("encoder accepts %v", v)
		}
	}
	_, errs, err := encodeWith(t, f{X: math.NaN()}, true)
	if err == nil || len(errs) != 1 || errs[0].Field != "response.x" || errs[0].Message != "must be a finite number" {
		t.Fatalf("NaN: err %v, findings %v", err, errs)
	}

	type cycle struct {
		Next *cycle `json:"next"`
	}
	c := &cycle{}
	c.Next = c
	if _, _, err := encodeWith(t, c, false); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("cycle: %v", err)
	}
}

type failing struct{}

func (failing) MarshalJSON() ([]byte, error) { return nil, errors.New("boom") }

func TestEncoderPassesMarshalerErrors(t *testing.T) {
	type wrap struct {
		F failing `json:"f"`
	}
	_, _, err := encodeWith(t, wrap{}, false)
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v", err)
	}
}

func TestEncoderAppendsToDst(t *testing.T) {
	n, err := NewRegistry().Type(reflect.TypeFor[inner]())
	if err != nil {
		t.Fatal(err)
	}
	out, err := NewEncoder(reflect.TypeFor[inner](), n).Append([]byte("prefix:"), reflect.ValueOf(inner{Name: "n"}), "", nil)
	if err != nil || string(out) != `prefix:{"name":"n","score":0}` {
		t.Fatalf("%s, %v", out, err)
	}
}

func FuzzEncoderFloat(f *testing.F) {
	for _, x := range []float64{0, 1, -1, 1e-6, 1e-7, 1e20, 1e21, 0.1, math.MaxFloat64} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x float64) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return
		}
		for _, v := range []any{x, float32(x)} {
			want, wantErr := json.Marshal(v)
			got, _, err := encodeWith(t, v, false)
			if (err != nil) != (wantErr != nil) || err == nil && string(got) != string(want) {
				t.Fatalf("%v (%T): got %s (%v), want %s", v, v, got, err, want)
			}
		}
	})
}
