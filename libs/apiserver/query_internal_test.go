package apiserver

import (
	"net/url"
	"slices"
	"testing"
)

// FuzzQueryValues checks the one-pass query reader against url.ParseQuery
// for the declared names, whatever the client sends.
func FuzzQueryValues(f *testing.F) {
	for _, s := range []string{"", "limit=10&offset=0", "limit=1&limit=2&limit=3", "a+b=c%20d&tag=x;y",
		"limit=%zz&offset=1", "=&&limit&offset=", "tag=%E2%82%AC&tag=+&x=1", "limit=1;offset=2"} {
		f.Add(s)
	}
	b := &binder{params: []param{{in: "query", name: "limit"}, {in: "path", name: "offset"}, {in: "query", name: "offset"},
		{in: "query", name: "tag"}, {in: "query", name: "a b"}}}
	f.Fuzz(func(t *testing.T, raw string) {
		want, _ := url.ParseQuery(raw)
		var q queryValues
		q.scan(b, raw)
		for i, p := range b.params {
			tv := *q.slot(i)
			if p.in != "query" {
				if tv.n != 0 {
					t.Fatalf("%q: path parameter %s got query values %+v", raw, p.name, tv)
				}
				continue
			}
			var got []string
			for k := range tv.n {
				got = append(got, tv.at(k))
			}
			if !slices.Equal(got, want[p.name]) {
				t.Fatalf("%q: %s = %q, url.ParseQuery says %q", raw, p.name, got, want[p.name])
			}
		}
	})
}
