package httpapi

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"fmt"
	"strconv"

	"github.com/apistack/platform/libs/apiserver/jsontext"
)

// field is one key of the answer, in ipapi.co's order; every format walks this list, so
// they all carry the same keys in the same order.
type field struct {
	name string
	kind byte // 's' string, 'n' number, 'b' bool
	str  func(*Location) string
	num  func(*Location) float64
	bool func(*Location) bool
	// optional fields (ipapi.co's flags) are written only when set, like omitempty.
	optional bool
}

var fields = []field{
	{name: "ip", kind: 's', str: func(l *Location) string { return l.IP }},
	{name: "version", kind: 's', str: func(l *Location) string { return l.Version }},
	{name: "city", kind: 's', str: func(l *Location) string { return l.City }},
	{name: "region", kind: 's', str: func(l *Location) string { return l.Region }},
	{name: "country", kind: 's', str: func(l *Location) string { return l.Country }},
	{name: "country_name", kind: 's', str: func(l *Location) string { return l.CountryName }},
	{name: "continent_code", kind: 's', str: func(l *Location) string { return l.ContinentCode }},
	{name: "in_eu", kind: 'b', bool: func(l *Location) bool { return l.InEU }},
	{name: "postal", kind: 's', str: func(l *Location) string { return l.Postal }},
	{name: "latitude", kind: 'n', num: func(l *Location) float64 { return l.Latitude }},
	{name: "longitude", kind: 'n', num: func(l *Location) float64 { return l.Longitude }},
	{name: "timezone", kind: 's', str: func(l *Location) string { return l.Timezone }},
	{name: "utc_offset", kind: 's', str: func(l *Location) string { return l.UTCOffset }},
	{name: "reserved", kind: 'b', bool: func(l *Location) bool { return l.Reserved }, optional: true},
	{name: "error", kind: 'b', bool: func(l *Location) bool { return l.Error }, optional: true},
	{name: "reason", kind: 's', str: func(l *Location) string { return l.Reason }, optional: true},
}

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
		return formatCoord(f.num(l))
	}
	return f.str(l)
}

func formatCoord(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// appendJSONValue writes the value as JSON (and as YAML, which reads JSON scalars).
func (f *field) appendJSONValue(b []byte, l *Location) []byte {
	switch f.kind {
	case 's':
		return jsontext.AppendString(b, f.str(l), false)
	case 'n':
		return strconv.AppendFloat(b, f.num(l), 'f', -1, 64)
	case 'b':
		return strconv.AppendBool(b, f.bool(l))
	}
	return b
}

// appendJSON encodes l as encoding/json would (same keys, order and escaping, minus HTML
// escaping, as an Encoder with SetEscapeHTML(false)), without reflection: this runs on
// every uncached request.
func appendJSON(b []byte, l *Location) []byte {
	b = append(b, '{')
	first := true
	for i := range fields {
		f := &fields[i]
		if !f.present(l) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, f.name...)
		b = append(b, '"', ':')
		b = f.appendJSONValue(b, l)
	}
	return append(b, '}')
}

// appendJSONP wraps the JSON body in a call to callback, already checked to be an
// identifier path. The leading comment keeps a response from ever starting with bytes an
// attacker chose (the Rosetta Flash class of attacks).
func appendJSONP(b []byte, callback string, jsonBody []byte) []byte {
	b = append(b, "/**/"...)
	b = append(b, callback...)
	b = append(b, '(')
	b = append(b, jsonBody...)
	return append(b, ')', ';')
}

// appendXML writes ipapi.co's XML form: <root> with one element per key.
func appendXML(b []byte, l *Location) []byte {
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

// appendCSV writes a header line and one value line (RFC 4180, CRLF line ends).
func appendCSV(b []byte, l *Location) ([]byte, error) {
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

// appendYAML writes a YAML mapping; strings are double-quoted JSON strings, which YAML
// reads unchanged, so no value can turn into another type (a postal code of 01234, a
// city called "No").
func appendYAML(b []byte, l *Location) []byte {
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
