package schema

import (
	"testing"
	"unicode/utf8"
)

func TestInvalidUTF8NamesTheValue(t *testing.T) {
	for _, tc := range []struct {
		data   string
		offset int
		path   string
		bad    bool
	}{
		{data: `{"a":"ok","b":["x","y"]}`},
		{data: "{\"a\":\"\uFFFD\"}"}, // U+FFFD itself is valid
		{data: "\"\xff\"", offset: 1, path: "body", bad: true},
		{data: "{\"a\":\"x\xff\"}", offset: 7, path: "body.a", bad: true},
		{data: "{\"a\":1,\"b\":[\"ok\",\"\xc3(\"]}", offset: 18, path: "body.b[1]", bad: true},
		{data: "{\"a\":{\"b\":[{},{\"c\":[0,\"\xed\xa0\x80\"]}]}}", offset: 23, path: "body.a.b[1].c[1]", bad: true}, // an encoded surrogate
		{data: "{\"a\":[1,{}],\"k\xffey\":true}", offset: 14, path: "body.k\uFFFDey", bad: true},                     // in a member's name
		{data: "[1, \xff]", offset: 4, path: "body", bad: true},                                                      // outside any string: malformed
		{data: "{\"a\":\"ok\"}\xff", offset: 10, path: "body", bad: true},                                            // after the value
	} {
		offset, path, bad := InvalidUTF8([]byte(tc.data), "body")
		if bad != tc.bad || offset != tc.offset || path != tc.path {
			t.Errorf("InvalidUTF8(%q) = %d, %q, %v; want %d, %q, %v", tc.data, offset, path, bad, tc.offset, tc.path, tc.bad)
		}
	}
}

func FuzzInvalidUTF8(f *testing.F) {
	for _, s := range []string{`{"a":"b"}`, "{\"a\":[\"\xff\"]}", "\xff", `[{"x":1},"y"]`, "{\"\xc3\":1}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		offset, _, bad := InvalidUTF8(data, "body")
		if bad == utf8.Valid(data) {
			t.Fatalf("bad = %v for %q", bad, data)
		}
		if bad && (utf8.Valid(data[offset:]) || !utf8.Valid(data[:offset])) {
			t.Fatalf("offset %d is not the first invalid byte of %q", offset, data)
		}
	})
}
