// Package jsontext writes JSON strings exactly as encoding/json writes them,
// for encoders that build JSON by hand (the library's compiled response
// encoder, a service's fixed-shape answers) and must not differ from it.
package jsontext

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// plain marks the ASCII bytes written as they are; with HTML escaping also
// off for <, > and &.
var plain, plainHTML = func() (t, h [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
		h[c] = t[c] && c != '<' && c != '>' && c != '&'
	}
	return t, h
}()

// AppendString appends s as a quoted JSON string, byte for byte what
// encoding/json writes: json.Marshal when escapeHTML is true, an Encoder
// with SetEscapeHTML(false) otherwise. Invalid UTF-8 becomes U+FFFD, and
// U+2028 and U+2029 are escaped (they end lines in older JavaScript, so JSONP
// must not carry them raw).
func AppendString(dst []byte, s string, escapeHTML bool) []byte {
	safe := &plain
	if escapeHTML {
		safe = &plainHTML
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if safe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				// Other control characters, and <, >, & when escaping HTML.
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
