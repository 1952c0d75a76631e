package schema

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// Issue 13: a hostile body must cost bounded work and a bounded answer.

type batch struct {
	IPs []string `json:"ips" maxItems:"100"`
}

type loose struct {
	Tags []string `json:"tags" enum:"a,b"`
}

func nodeOf[T any](t testing.TB) *Node {
	t.Helper()
	n, err := NewRegistry().Type(reflect.TypeFor[T]())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// zeros is a JSON array of n zeros, each of the wrong type for a string.
func zeros(n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat("0,", n), ",") + "]"
}

func TestArrayPastMaxItemsIsNotWalked(t *testing.T) {
	n := nodeOf[batch](t)
	var errs Errors
	omitted := n.CheckJSON(decode(t, `{"ips":`+zeros(500_000)+`}`), "body", &errs)
	if len(errs) != 1 || omitted != 0 {
		t.Fatalf("want the one maxItems finding and nothing counted beyond it, got %d recorded + %d omitted: %v", len(errs), omitted, errs[:min(len(errs), 3)])
	}
	if want := "must have at most 100 items, got 500000"; errs[0].Field != "body.ips" || errs[0].Message != want {
		t.Fatalf("got %+v, want body.ips %q", errs[0], want)
	}
}

func TestFindingsAreCappedAndCounted(t *testing.T) {
	n := nodeOf[loose](t)
	items := make([]string, 1000)
	for i := range items {
		items[i] = `"c"`
	}
	var errs Errors
	omitted := n.CheckJSON(decode(t, `{"tags":[`+strings.Join(items, ",")+`]}`), "body", &errs)
	if len(errs) != MaxFindings || omitted != 1000-MaxFindings {
		t.Fatalf("want %d recorded + %d omitted, got %d + %d", MaxFindings, 1000-MaxFindings, len(errs), omitted)
	}
	for i, e := range errs {
		if want := fmt.Sprintf("body.tags[%d]", i); e.Field != want {
			t.Fatalf("finding %d is %s, want the first ones in order (%s)", i, e.Field, want)
		}
	}
	// A second check appending to a full list records nothing more.
	omitted = n.CheckJSON(decode(t, `{"tags":["c","c"]}`), "body", &errs)
	if len(errs) != MaxFindings || omitted != 2 {
		t.Fatalf("a full list grew to %d (omitted %d)", len(errs), omitted)
	}
}

// unknownFields is an object with n fields that the type does not have.
func unknownFields(n int) string {
	var b strings.Builder
	b.WriteString(`{"tags":["a"]`)
	for i := range n {
		fmt.Fprintf(&b, `,"f%06d":0`, i)
	}
	b.WriteByte('}')
	return b.String()
}

func TestManyUnknownFieldsAreCappedInNameOrder(t *testing.T) {
	n := nodeOf[loose](t)
	doc := decode(t, unknownFields(90_000))
	for range 2 { // the same findings every time, whatever the map order
		var errs Errors
		omitted := n.CheckJSON(doc, "body", &errs)
		if len(errs) != MaxFindings || omitted != 90_000-MaxFindings {
			t.Fatalf("want %d recorded + %d omitted, got %d + %d", MaxFindings, 90_000-MaxFindings, len(errs), omitted)
		}
		for i, e := range errs {
			if want := fmt.Sprintf("body.f%06d", i); e.Field != want || e.Message != "is not an allowed field" {
				t.Fatalf("finding %d: %+v, want %s in name order", i, e, want)
			}
		}
	}
}

func TestMapFindingsAreInKeyOrder(t *testing.T) {
	type m struct {
		M map[string]int8 `json:"m"`
	}
	n := nodeOf[m](t)
	var b strings.Builder
	b.WriteString(`{"m":{`)
	for i := range 100 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%03d":1000`, i)
	}
	b.WriteString(`}}`)
	var errs Errors
	omitted := n.CheckJSON(decode(t, b.String()), "body", &errs)
	if len(errs) != MaxFindings || omitted != 80 {
		t.Fatalf("got %d + %d", len(errs), omitted)
	}
	for i, e := range errs {
		if want := fmt.Sprintf("body.m.k%03d", i); e.Field != want {
			t.Fatalf("finding %d is %s, want %s", i, e.Field, want)
		}
	}
}

func TestCheckValueStopsAtMaxItems(t *testing.T) {
	type out struct {
		Names []string `json:"names" maxItems:"2" minLength:"1"`
	}
	n := nodeOf[out](t)
	var errs Errors
	omitted := n.CheckValue(reflect.ValueOf(out{Names: make([]string, 1000)}), "response", &errs)
	if len(errs) != 1 || omitted != 0 || !strings.Contains(errs[0].Message, "at most 2 items") {
		t.Fatalf("got %v + %d", errs, omitted)
	}
}

// BenchmarkCheckJSONHostile is the validation walk of the two hostile
// bodies of issue 13 (decoding excluded; the HTTP benchmark in the parent
// package covers the whole path).
func BenchmarkCheckJSONHostile(b *testing.B) {
	b.Run("zeros-1MB-maxItems", func(b *testing.B) {
		n := nodeOf[batch](b)
		doc := decodeB(b, `{"ips":`+zeros(524_000)+`}`)
		b.ResetTimer()
		for b.Loop() {
			var errs Errors
			n.CheckJSON(doc, "body", &errs)
		}
	})
	b.Run("zeros-1MB-nolimit", func(b *testing.B) {
		n := nodeOf[loose](b)
		doc := decodeB(b, `{"tags":`+zeros(524_000)+`}`)
		b.ResetTimer()
		for b.Loop() {
			var errs Errors
			n.CheckJSON(doc, "body", &errs)
		}
	})
	b.Run("unknown-90k", func(b *testing.B) {
		n := nodeOf[loose](b)
		doc := decodeB(b, unknownFields(90_000))
		b.ResetTimer()
		for b.Loop() {
			var errs Errors
			n.CheckJSON(doc, "body", &errs)
		}
	})
}

type shaped struct {
	IPs  []string         `json:"ips" maxItems:"3"`
	Deep []batch          `json:"deep" maxItems:"2"`
	Map  map[string]batch `json:"map"`
	Any  any              `json:"any"`
	Ptr  *[]int           `json:"ptr" maxItems:"1"`
}

func TestCheckShape(t *testing.T) {
	n := nodeOf[shaped](t)
	rows := []struct {
		doc     string
		want    []string // every finding, in order
		omitted int
	}{
		{`{"ips":["a","b","c"],"deep":[{"ips":[]}],"map":{"k":{"ips":[]}},"ptr":null}`, nil, 0},
		{`{"ips":[1,2,3,4]}`, []string{"body.ips: must have at most 3 items, got 4"}, 0},
		{` { "ptr" : [ 1 , 2 ] } `, []string{"body.ptr: must have at most 1 items, got 2"}, 0},
		// Nested arrays inside an array within its maxItems are looked at.
		{`{"deep":[{"ips":[` + strings.Repeat(`"x",`, 100) + `"x"]},{"ips":[` + strings.Repeat(`"x",`, 200) + `"x"]}]}`,
			[]string{"body.deep[0].ips: must have at most 100 items, got 101", "body.deep[1].ips: must have at most 100 items, got 201"}, 0},
		// An array past its maxItems gets that one finding, as in CheckJSON:
		// what was found in its first items is dropped, the rest is skipped.
		{`{"deep":[{"ips":[` + strings.Repeat(`"x",`, 100) + `"x"]},{},{"ips":[1]}]}`,
			[]string{"body.deep: must have at most 2 items, got 3"}, 0},
		// Values of the wrong JSON type, with CheckJSON's messages.
		{`{"ips":["a",2,null],"deep":{},"map":[],"ptr":[true]}`, []string{
			"body.ips[1]: expected a string, got a number", "body.ips[2]: must not be null",
			"body.deep: expected an array, got an object", "body.map: expected an object, got an array",
			"body.ptr[0]: expected an integer, got a boolean"}, 0},
		{`{"ips":"x","ptr":null}`, []string{"body.ips: expected an array, got a string"}, 0},
		{`{"map":{"b":{"ips":` + zeros(101) + `},"a":{"ips":[]}}}`, []string{"body.map.b.ips: must have at most 100 items, got 101"}, 0},
		// An escaped key names the field the decoder will see.
		{`{"ip\u0073":[1,2,3,4]}`, []string{"body.ips: must have at most 3 items, got 4"}, 0},
		// Strings hiding brackets and quotes do not confuse the scan.
		{`{"any":["]]]\"[[{",{"ips":[1,2,3,4,5]}],"ips":["\\\"",",",":"]}`, nil, 0},
		{`{"zz":1,"ips":[],"aa":[[[]]],"any":{"x":[1,2,3,4]}}`, []string{"body.aa: is not an allowed field", "body.zz: is not an allowed field"}, 0},
		{`{"deep":[{"nope":1}]}`, []string{"body.deep[0].nope: is not an allowed field"}, 0},
		// Malformed documents are left to the decoder.
		{`{"ips":[1,2,3,4}`, nil, 0},
		{`{"ips":[1,2,3,4] x`, nil, 0},
		{`{"ips":[1 2 3 4 5]}`, nil, 0},
		{`{"ips":[1,2,3,4],"x}`, nil, 0},
	}
	for _, r := range rows {
		var errs Errors
		found, omitted := n.CheckShape([]byte(r.doc), "body", &errs)
		var got []string
		for _, e := range errs {
			got = append(got, e.Field+": "+e.Message)
		}
		if found != (len(r.want) > 0) || omitted != r.omitted || strings.Join(got, "|") != strings.Join(r.want, "|") {
			t.Errorf("%.80s: found %v omitted %d %q, want %q", r.doc, found, omitted, got, r.want)
		}
	}
}

func TestCheckShapeBoundsDepthAndFindings(t *testing.T) {
	n := nodeOf[shaped](t)
	// A million nested arrays: the scan gives up at encoding/json's depth
	// limit instead of growing the stack.
	deep := `{"any":` + strings.Repeat("[", 1_000_000) + strings.Repeat("]", 1_000_000) + `}`
	var errs Errors
	if found, _ := n.CheckShape([]byte(deep), "body", &errs); found || len(errs) > 0 {
		t.Fatalf("a too deep document gave findings: %v", errs)
	}
	doc := []byte(unknownFields(90_000))
	found, omitted := nodeOf[loose](t).CheckShape(doc, "body", &errs)
	if !found || len(errs) != MaxFindings || omitted != 90_000-MaxFindings {
		t.Fatalf("got %v, %d recorded + %d omitted", found, len(errs), omitted)
	}
	for i, e := range errs {
		if want := fmt.Sprintf("body.f%06d", i); e.Field != want {
			t.Fatalf("finding %d is %s, want %s", i, e.Field, want)
		}
	}
}

// TestShapeFindingsAreCheckJSONFindings: what the raw scan reports is what
// the walk of the decoded document reports, so a client cannot tell which
// step refused its body.
func TestShapeFindingsAreCheckJSONFindings(t *testing.T) {
	n := nodeOf[node](t)
	docs := []string{
		`[]`, `"x"`, `null`, `{"name":1.5}`, `{"name":null,"role":true}`, `{"children":[{},{},{}]}`,
		`{"children":[{"name":3}],"tags":[1,"a",null],"meta":{"a":"x","b":1}}`,
		`{"lookup":{"k":{"children":"no"}},"zz":1,"Ignored":2}`, `{"score":"1","raw":[1,{}],"any":{"x":[]}}`,
		`{"created_at":5,"children":[{"children":[{"bad":1}]}]}`,
	}
	for _, doc := range docs {
		var shape, walk Errors
		found, omitted := n.CheckShape([]byte(doc), "x", &shape)
		n.CheckJSON(decode(t, doc), "x", &walk)
		all := map[FieldError]bool{}
		for _, e := range walk {
			all[e] = true
		}
		if !found && len(shape)+omitted > 0 {
			t.Errorf("%s: findings without found", doc)
		}
		for _, e := range shape {
			if !all[e] {
				t.Errorf("%s: the scan found %+v, the walk did not (%v)", doc, e, walk)
			}
		}
	}
}

// TestRecursiveTypesAreCheckedAtDepth: a recursive type's inner
// references were copies taken before its fields were all collected, so
// from depth 2 on the fields after the recursive one went unchecked.
func TestRecursiveTypesAreCheckedAtDepth(t *testing.T) {
	n := nodeOf[node](t)
	var errs Errors
	n.CheckJSON(decode(t, `{"children":[{"children":[{"bad":1,"tags":["z"]}]}]}`), "x", &errs)
	want := map[string]bool{"x.children[0].children[0].bad": false, "x.children[0].children[0].tags[0]": false}
	for _, e := range errs {
		if _, ok := want[e.Field]; ok {
			want[e.Field] = true
		}
	}
	for f, ok := range want {
		if !ok {
			t.Errorf("no finding at %s: %v", f, errs)
		}
	}
}
