package fieldmem

import (
	"math"
	"reflect"
	"strconv"
	"testing"
)

// headers has every kind Text formats, at offsets that differ between
// 32-bit and 64-bit targets: `GOARCH=386 go test` runs this too.
type headers struct {
	S   string
	I   int
	I64 int64
	I32 int32
	I16 int16
	I8  int8
	U   uint
	U64 uint64
	U32 uint32
	U16 uint16
	U8  uint8
}

func TestTextReadsEachKindAtItsOwnSize(t *testing.T) {
	h := headers{S: "etag", I: math.MaxInt, I64: math.MinInt64, I32: -7, I16: 300, I8: -1,
		U: math.MaxUint, U64: math.MaxUint64, U32: math.MaxUint32, U16: 65535, U8: 9}
	rt := reflect.TypeOf(h)
	p := Of(&h)
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		if !TextKind(f.Type.Kind()) {
			t.Fatalf("%s: TextKind(%s) = false", f.Name, f.Type.Kind())
		}
		want := ""
		switch v := reflect.ValueOf(h).Field(i); v.Kind() {
		case reflect.String:
			want = v.String()
		case reflect.Int, reflect.Int64, reflect.Int32, reflect.Int16, reflect.Int8:
			want = strconv.FormatInt(v.Int(), 10)
		default:
			want = strconv.FormatUint(v.Uint(), 10)
		}
		if got := p.At(f.Offset).Text(f.Type.Kind()); got != want {
			t.Errorf("%s (%s at %d): %q, want %q", f.Name, f.Type.Kind(), f.Offset, got, want)
		}
	}
	var zero headers
	zp := Of(&zero)
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		if got := zp.At(f.Offset).Text(f.Type.Kind()); got != "" {
			t.Errorf("zero %s: %q, want empty", f.Name, got)
		}
	}
	if TextKind(reflect.Float64) || TextKind(reflect.Struct) {
		t.Error("TextKind accepts a kind Text cannot format")
	}
}

func TestGetAndValueSeeTheFieldsInPlace(t *testing.T) {
	type resp struct {
		Status int
		Raw    []byte
		CT     string
		Body   struct{ N int }
	}
	r := resp{Status: 304, Raw: []byte("x"), CT: "text/plain"}
	r.Body.N = 5
	rt := reflect.TypeOf(r)
	off := func(name string) uintptr { f, _ := rt.FieldByName(name); return f.Offset }
	p := Of(&r)
	if got := Get[int](p.At(off("Status"))); got != 304 {
		t.Errorf("Status %d", got)
	}
	if got := Get[[]byte](p.At(off("Raw"))); string(got) != "x" {
		t.Errorf("Raw %q", got)
	}
	if got := Get[string](p.At(off("CT"))); got != "text/plain" {
		t.Errorf("CT %q", got)
	}
	bt, _ := rt.FieldByName("Body")
	v := p.At(bt.Offset).Value(bt.Type)
	if v.Field(0).Int() != 5 {
		t.Errorf("Body %v", v.Interface())
	}
	v.Field(0).SetInt(6) // addressable: the value itself, not a copy
	if r.Body.N != 6 {
		t.Error("Value is a copy")
	}
}

func TestSameDataComparesAddressesNotText(t *testing.T) {
	a := "/items/:id"
	b := string([]byte(a)) // equal text, other bytes
	if !SameData(a, a) || !SameData(a[:3], a[:3]) {
		t.Error("a string is not the same as itself")
	}
	if SameData(a, b) {
		t.Error("equal text in other bytes counted as the same")
	}
	if SameData(a, a[:3]) {
		t.Error("a prefix counted as the same")
	}
	if !SameData("", b[:0]) || DataAddr("") != 0 || DataAddr(a) == 0 {
		t.Error("empty strings")
	}
	if DataAddr(a) != DataAddr(a[:2]) || DataAddr(a) == DataAddr(b) {
		t.Error("DataAddr")
	}
}

func TestStringSharesTheBytes(t *testing.T) {
	b := []byte("req-1")
	s := String(b)
	if s != "req-1" || DataAddr(s) != DataAddr(string(b[:0:0])+s) {
		t.Errorf("%q", s)
	}
	if String(nil) != "" {
		t.Error("nil")
	}
}

type benchResp struct {
	Status int
	Header struct {
		ETag string
		Age  int
	}
	Raw []byte
}

var sink string

// BenchmarkRead reads a Response-like value's status, two headers and raw
// body through offsets; BenchmarkReadReflect does the same by reflection,
// what the library would do without this package.
func BenchmarkRead(b *testing.B) {
	rt := reflect.TypeOf(benchResp{})
	hf, _ := rt.FieldByName("Header")
	rf, _ := rt.FieldByName("Raw")
	e, a := hf.Type.Field(0), hf.Type.Field(1)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r := benchResp{Status: 200 + i&1, Raw: []byte("{}")}
		r.Header.ETag = "\"v1\""
		p := Of(&r)
		hp := p.At(hf.Offset)
		sink = hp.At(e.Offset).Text(e.Type.Kind()) + hp.At(a.Offset).Text(a.Type.Kind())
		if Get[int](p) == 0 || len(Get[[]byte](p.At(rf.Offset))) == 0 {
			b.Fatal("empty")
		}
	}
}

func BenchmarkReadReflect(b *testing.B) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r := benchResp{Status: 200 + i&1, Raw: []byte("{}")}
		r.Header.ETag = "\"v1\""
		v := reflect.ValueOf(&r).Elem()
		h := v.Field(1)
		sink = h.Field(0).String() + strconv.FormatInt(h.Field(1).Int(), 10)
		if v.Field(0).Int() == 0 || v.Field(2).Len() == 0 {
			b.Fatal("empty")
		}
	}
}

// BenchmarkSameData is the metrics cache's hit test; BenchmarkSameText
// compares the text, what it would do without addresses.
func BenchmarkSameData(b *testing.B) {
	a, c := "/api/v1/channels/:channel/messages", "/api/v1/channels/:channel/messages"
	n := 0
	for b.Loop() {
		if SameData(a, c) {
			n++
		}
	}
	_ = n
}

func BenchmarkSameText(b *testing.B) {
	a, c := "/api/v1/channels/:channel/messages", string([]byte("/api/v1/channels/:channel/messages"))
	n := 0
	for b.Loop() {
		if a == c {
			n++
		}
	}
	_ = n
}
