package answer

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unsafe"

	"github.com/apistack/platform/libs/apiserver/jsontext"
)

// field is one key of the answer, in ipapi.co's order; every format walks this list, so
// they all carry the same keys in the same order.
type field struct {
	name string
	kind byte    // 's' string, 'n' number, 'i' integer, 'b' bool
	off  uintptr // of the Location field
	// optional fields (ipapi.co's flags) are written only when set, like omitempty.
	optional bool
	// coord marks latitude and longitude, written as the shortest text of their float32
	// (formatNum): both formats store 32-bit coordinates (a BIN always, an MMDB's writer
	// often), and their float64 widening printed whole reads 37.422000885009766.
	coord bool
}

// fields are read from Location itself (its JSON names, types and omitempty), so the
// formats cannot drift from the JSON answer. A field is read at its offset rather than
// through a func value: a call through a func value would make every Location passed to
// an encoder escape to the heap, one allocation per uncached answer.
var fields = func() []field {
	t := reflect.TypeFor[Location]()
	out := make([]field, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue // facts: not a key
		}
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		f := field{name: name, off: sf.Offset, optional: opts == "omitempty"}
		switch sf.Type.Kind() {
		case reflect.String:
			f.kind = 's'
		case reflect.Float64:
			f.kind = 'n'
			f.coord = name == "latitude" || name == "longitude"
		case reflect.Int64:
			f.kind = 'i'
		case reflect.Bool:
			f.kind = 'b'
		default:
			panic("answer: Location." + sf.Name + " has a type the encoders do not write")
		}
		out = append(out, f)
	}
	return out
}()

func (f *field) ptr(l *Location) unsafe.Pointer { return unsafe.Add(unsafe.Pointer(l), f.off) }
func (f *field) str(l *Location) string         { return *(*string)(f.ptr(l)) }
func (f *field) num(l *Location) float64        { return *(*float64)(f.ptr(l)) }
func (f *field) int(l *Location) int64          { return *(*int64)(f.ptr(l)) }
func (f *field) bool(l *Location) bool          { return *(*bool)(f.ptr(l)) }

// present reports whether f is written for l.
func (f *field) present(l *Location) bool {
	if !f.optional {
		return true
	}
	switch f.kind {
	case 'b':
		return f.bool(l)
	case 's':
		return f.str(l) != ""
	}
	return true
}

// text is the value as the plain-text field endpoints and CSV write it.
func (f *field) text(l *Location) string {
	switch f.kind {
	case 'b':
		return strconv.FormatBool(f.bool(l))
	case 'n':
		return string(f.appendNum(nil, l))
	case 'i':
		return strconv.FormatInt(f.int(l), 10)
	}
	return f.str(l)
}

// appendNum writes a number field: a coordinate as the shortest decimal that reads back as
// the same float32 (37.422 for the file's 37.422000885009766; a coordinate needs no more
// than float32's 7 digits, about a metre), any other number as its float64.
func (f *field) appendNum(b []byte, l *Location) []byte {
	if f.coord {
		return appendCoord(b, f.num(l))
	}
	return strconv.AppendFloat(b, f.num(l), 'f', -1, 64)
}

func appendCoord(b []byte, v float64) []byte { return strconv.AppendFloat(b, v, 'f', -1, 32) }

func formatCoord(v float64) string { return string(appendCoord(nil, v)) }

// appendJSONValue writes the value as JSON (and as YAML, which reads JSON scalars).
func (f *field) appendJSONValue(b []byte, l *Location) []byte {
	switch f.kind {
	case 's':
		return jsontext.AppendString(b, f.str(l), false)
	case 'n':
		return f.appendNum(b, l)
	case 'i':
		return strconv.AppendInt(b, f.int(l), 10)
	case 'b':
		return strconv.AppendBool(b, f.bool(l))
	}
	return b
}

// appendJSON encodes l as encoding/json would (same keys, order and escaping, minus HTML
// escaping, as an Encoder with SetEscapeHTML(false)), without reflection: this runs on
// every uncached request. The country's fields come encoded once per country (l.facts)
// when newLocation set them from its table.
func appendJSON(b []byte, l *Location) []byte {
	b = append(b, '{')
	for i := 0; i < len(fields); i++ {
		for r := range factRuns {
			if i != factRuns[r].start {
				continue
			}
			if l.facts != nil {
				b = append(b, l.facts.runs[r]...)
				i = factRuns[r].end
			} else {
				for ; i < factRuns[r].end; i++ { // none of them optional: each is written
					b = append(b, ',')
					b = appendJSONField(b, &fields[i], l)
				}
			}
		}
		if i == len(fields) {
			break
		}
		f := &fields[i]
		if !f.present(l) {
			continue
		}
		if i > 0 { // ip, the first key, is always present
			b = append(b, ',')
		}
		b = appendJSONField(b, f, l)
	}
	return append(b, '}')
}

// appendJSONField writes "name":value.
func appendJSONField(b []byte, f *field, l *Location) []byte {
	b = append(b, '"')
	b = append(b, f.name...)
	b = append(b, '"', ':')
	return f.appendJSONValue(b, l)
}

// countryJSON holds a country's fields as appendJSON writes them, each run of consecutive
// keys that depend on the country alone (factRuns) with its leading commas: copying two
// runs replaces encoding twelve values (a float among them) on every uncached answer.
type countryJSON struct {
	runs  [2][]byte
	index int // in countryTable
}

// factRuns are the runs of keys newLocation fills from the country's code and facts:
// country_name to in_eu, and country_calling_code to country_population. Checked at
// start-up to be consecutive keys of Location, none of them optional.
var factRuns = func() (runs [2]struct{ start, end int }) {
	names := [2][2]string{{"country_name", "in_eu"}, {"country_calling_code", "country_population"}}
	for r, n := range names {
		runs[r].start, runs[r].end = fieldIndex(n[0]), fieldIndex(n[1])+1
		for i := runs[r].start; i < runs[r].end; i++ {
			if fields[i].optional {
				panic("answer: " + fields[i].name + " is optional; it cannot be pre-encoded")
			}
		}
	}
	if runs[0].start < 1 || runs[0].end > runs[1].start {
		panic("answer: the country's keys moved; see factRuns")
	}
	return runs
}()

func fieldIndex(name string) int {
	for i := range fields {
		if fields[i].name == name {
			return i
		}
	}
	panic("answer: Location has no key " + name)
}

// countryTable holds every country's encoded runs, made once, indexed by its two letters.
var countryTable = func() (t [26 * 26]*countryJSON) {
	for a := byte('A'); a <= 'Z'; a++ {
		for b := byte('A'); b <= 'Z'; b++ {
			var loc Location
			if !setCountryFacts(&loc, string([]byte{a, b})) {
				continue
			}
			i := int(a-'A')*26 + int(b-'A')
			t[i] = encodeRuns(&loc, i)
		}
	}
	return t
}()

// noCountry is the runs of an answer with no country's fields (an unknown address): the
// same for every such answer, so cut out of location fragments as a country's are.
var noCountry = encodeRuns(&Location{}, len(countryTable))

// encodeRuns encodes loc's country runs (factRuns) as appendJSON writes them.
func encodeRuns(loc *Location, index int) *countryJSON {
	c := &countryJSON{index: index}
	for r, run := range factRuns {
		for i := run.start; i < run.end; i++ {
			c.runs[r] = append(c.runs[r], ',')
			c.runs[r] = appendJSONField(c.runs[r], &fields[i], loc)
		}
	}
	return c
}

// countryByIndex is the inverse of countryJSON.index.
func countryByIndex(i int) *countryJSON {
	if i == noCountry.index {
		return noCountry
	}
	return countryTable[i]
}

// countryFragments returns the encoded runs of an upper-case two-letter code that
// setCountryFacts knows, else nil.
func countryFragments(code string) *countryJSON {
	if len(code) != 2 || code[0] < 'A' || code[0] > 'Z' || code[1] < 'A' || code[1] > 'Z' {
		return nil
	}
	return countryTable[int(code[0]-'A')*26+int(code[1]-'A')]
}

// AppendJSONP wraps the JSON body in a call to callback, already checked to be an
// identifier path. The leading comment keeps a response from ever starting with bytes an
// attacker chose (the Rosetta Flash class of attacks).
func AppendJSONP(b []byte, callback string, jsonBody []byte) []byte {
	b = append(b, "/**/"...)
	b = append(b, callback...)
	b = append(b, '(')
	b = append(b, jsonBody...)
	return append(b, ')', ';')
}

// AppendXML writes ipapi.co's XML form: <root> with one element per key.
func AppendXML(b []byte, l *Location) []byte {
	b = append(b, xml.Header...)
	b = append(b, "<root>"...)
	var buf bytes.Buffer
	for i := range fields {
		f := &fields[i]
		if !f.present(l) {
			continue
		}
		b = append(b, '<')
		b = append(b, f.name...)
		b = append(b, '>')
		buf.Reset()
		_ = xml.EscapeText(&buf, []byte(f.text(l))) // writes to a bytes.Buffer cannot fail
		b = append(b, buf.Bytes()...)
		b = append(b, '<', '/')
		b = append(b, f.name...)
		b = append(b, '>')
	}
	return append(b, "</root>\n"...)
}

// AppendCSV writes a header line and one value line (RFC 4180, CRLF line ends).
func AppendCSV(b []byte, l *Location) ([]byte, error) {
	var names, values []string
	for i := range fields {
		f := &fields[i]
		if f.present(l) {
			names = append(names, f.name)
			values = append(values, f.text(l))
		}
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.UseCRLF = true
	if err := w.WriteAll([][]string{names, values}); err != nil {
		return nil, fmt.Errorf("encode csv: %w", err)
	}
	return append(b, buf.Bytes()...), nil
}

// AppendYAML writes a YAML mapping; strings are double-quoted JSON strings, which YAML
// reads unchanged, so no value can turn into another type (a postal code of 01234, a
// city called "No").
func AppendYAML(b []byte, l *Location) []byte {
	for i := range fields {
		f := &fields[i]
		if !f.present(l) {
			continue
		}
		b = append(b, f.name...)
		b = append(b, ':', ' ')
		b = f.appendJSONValue(b, l)
		b = append(b, '\n')
	}
	return b
}

// Key is one key of the answer, in ipapi.co's order: every format carries the same keys
// in the same order.
type Key struct {
	Name string
	// Optional keys (ipapi.co's flags) are written only when set.
	Optional bool
}

// Keys lists the answer's keys.
func Keys() []Key {
	out := make([]Key, len(fields))
	for i, f := range fields {
		out[i] = Key{f.name, f.optional}
	}
	return out
}

// TextField returns how the plain-text endpoint of name (any key that is always present,
// or ipapi.co's latlong) writes it; false for any other name.
func TextField(name string) (func(*Location) string, bool) {
	get, ok := textFields[name]
	return get, ok
}

// TextFieldNames lists the plain-text fields in documentation order.
func TextFieldNames() []string { return append([]string(nil), textFieldNames...) }

var textFields = func() map[string]func(*Location) string {
	m := map[string]func(*Location) string{
		"latlong": func(l *Location) string { return formatCoord(l.Latitude) + "," + formatCoord(l.Longitude) },
	}
	for i := range fields {
		f := &fields[i]
		if !f.optional {
			m[f.name] = f.text
		}
	}
	return m
}()

var textFieldNames = func() []string {
	var names []string
	for _, f := range fields {
		if f.optional {
			continue
		}
		names = append(names, f.name)
		if f.name == "longitude" {
			names = append(names, "latlong")
		}
	}
	return names
}()
