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
	kind byte // 's' string, 'n' number, 'i' integer, 'b' bool
	str  func(*Location) string
	num  func(*Location) float64
	int  func(*Location) int64
	bool func(*Location) bool
	// optional fields (ipapi.co's flags) are written only when set, like omitempty.
	optional bool
}

func str(name string, get func(*Location) string) field {
	return field{name: name, kind: 's', str: get}
}
func num(name string, get func(*Location) float64) field {
	return field{name: name, kind: 'n', num: get}
}

// fields are ipapi.co's, in the order its answers have them.
var fields = []field{
	str("ip", func(l *Location) string { return l.IP }),
	str("network", func(l *Location) string { return l.Network }),
	str("version", func(l *Location) string { return l.Version }),
	str("city", func(l *Location) string { return l.City }),
	str("region", func(l *Location) string { return l.Region }),
	str("region_code", func(l *Location) string { return l.RegionCode }),
	str("country", func(l *Location) string { return l.Country }),
	str("country_name", func(l *Location) string { return l.CountryName }),
	str("country_code", func(l *Location) string { return l.CountryCode }),
	str("country_code_iso3", func(l *Location) string { return l.CountryCodeISO3 }),
	str("country_capital", func(l *Location) string { return l.CountryCapital }),
	str("country_tld", func(l *Location) string { return l.CountryTLD }),
	str("continent_code", func(l *Location) string { return l.ContinentCode }),
	{name: "in_eu", kind: 'b', bool: func(l *Location) bool { return l.InEU }},
	str("postal", func(l *Location) string { return l.Postal }),
	num("latitude", func(l *Location) float64 { return l.Latitude }),
	num("longitude", func(l *Location) float64 { return l.Longitude }),
	str("timezone", func(l *Location) string { return l.Timezone }),
	str("utc_offset", func(l *Location) string { return l.UTCOffset }),
	str("country_calling_code", func(l *Location) string { return l.CountryCallingCode }),
	str("currency", func(l *Location) string { return l.Currency }),
	str("currency_name", func(l *Location) string { return l.CurrencyName }),
	str("languages", func(l *Location) string { return l.Languages }),
	num("country_area", func(l *Location) float64 { return l.CountryArea }),
	{name: "country_population", kind: 'i', int: func(l *Location) int64 { return l.CountryPopulation }},
	str("asn", func(l *Location) string { return l.ASN }),
	str("org", func(l *Location) string { return l.Org }),
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
	case 'i':
		return strconv.FormatInt(f.int(l), 10)
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
	case 'i':
		return strconv.AppendInt(b, f.int(l), 10)
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
