package apiserver

import (
	"net/url"
	"strings"
)

// textValues is the text a parameter was given: none, one, or several.
// One value is held without a slice, so binding allocates nothing for it.
type textValues struct {
	n    int
	one  string   // the value when n == 1
	many []string // the values when n > 1
}

func (t textValues) at(k int) string {
	if t.many != nil {
		return t.many[k]
	}
	return t.one
}

func textOf(vs []string) textValues {
	switch len(vs) {
	case 0:
		return textValues{}
	case 1:
		return textValues{n: 1, one: vs[0]}
	}
	return textValues{n: len(vs), many: vs}
}

// maxInlineParams is how many parameters queryValues holds without
// allocating.
const maxInlineParams = 8

// queryValues holds the values of an endpoint's declared query parameters,
// read from the raw query in one pass: url.ParseQuery would build a map of
// every key the client sent, on every request. Keys and values are decoded
// exactly as url.ParseQuery decodes them, and pairs it rejects (a bad
// escape, a semicolon) are skipped as URL.Query skips them. (ParseQuery also
// gives up on more than 10,000 pairs, against the memory a map of them
// would take; this keeps nothing it was not asked for, so it reads them.)
type queryValues struct {
	inline [maxInlineParams]textValues
	more   []textValues // instead of inline, when more parameters are declared
}

func (q *queryValues) slot(i int) *textValues {
	if q.more != nil {
		return &q.more[i]
	}
	return &q.inline[i]
}

func (q *queryValues) scan(b *binder, raw string) {
	if len(b.params) > maxInlineParams {
		q.more = make([]textValues, len(b.params))
	}
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" || strings.Contains(pair, ";") {
			continue
		}
		key, value, _ := strings.Cut(pair, "=")
		key, ok := unescapeQuery(key)
		if !ok {
			continue
		}
		i := b.queryIndex(key)
		if i < 0 {
			continue
		}
		if value, ok = unescapeQuery(value); !ok {
			continue
		}
		t := q.slot(i)
		switch t.n {
		case 0:
			t.one = value
		case 1:
			t.many = []string{t.one, value}
		default:
			t.many = append(t.many, value)
		}
		t.n++
	}
}

// unescapeQuery is url.QueryUnescape without its work (and allocation)
// for the common text that has nothing to decode.
func unescapeQuery(s string) (string, bool) {
	if !strings.ContainsAny(s, "%+") {
		return s, true
	}
	u, err := url.QueryUnescape(s)
	return u, err == nil
}

// queryIndex is the index in b.params of the query parameter named key, or -1.
func (b *binder) queryIndex(key string) int {
	for i := range b.params {
		if b.params[i].in == "query" && b.params[i].name == key {
			return i
		}
	}
	return -1
}
