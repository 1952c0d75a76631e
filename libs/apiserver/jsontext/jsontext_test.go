package jsontext

import (
	"bytes"
	"encoding/json"
	"testing"
)

func stdlib(s string, escapeHTML bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(s); err != nil {
		panic(err)
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

func TestAppendString(t *testing.T) {
	rows := []struct{ in, html, noHTML string }{
		{"", `""`, `""`},
		{"plain text", `"plain text"`, `"plain text"`},
		{`<a href="x">&</a>`, `"\u003ca href=\"x\"\u003e\u0026\u003c/a\u003e"`, `"<a href=\"x\">&</a>"`},
		{"\b\f\n\r\t\x00\x1f\x7f\\", `"\b\f\n\r\t\u0000\u001f` + "\x7f" + `\\"`, `"\b\f\n\r\t\u0000\u001f` + "\x7f" + `\\"`},
		{"é\u2028\u2029", `"é\u2028\u2029"`, `"é\u2028\u2029"`},
		{"a\xffb\xed\xa0\x80", `"a\ufffdb\ufffd\ufffd\ufffd"`, `"a\ufffdb\ufffd\ufffd\ufffd"`},
	}
	for _, r := range rows {
		if got := string(AppendString([]byte("x"), r.in, true)); got != "x"+r.html {
			t.Errorf("%q with HTML escaping: %s, want %s", r.in, got, r.html)
		}
		if got := string(AppendString(nil, r.in, false)); got != r.noHTML {
			t.Errorf("%q without HTML escaping: %s, want %s", r.in, got, r.noHTML)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "<&>", "\"\\", "\x00\x1f\x7f\b\f", "é\u2028\u2029", "\xff\xfe", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, html := range []bool{true, false} {
			if got, want := string(AppendString(nil, s, html)), stdlib(s, html); got != want {
				t.Fatalf("%q (escapeHTML %v): got %s, want %s", s, html, got, want)
			}
		}
	})
}
