package schema

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// InvalidUTF8 reports where data, a JSON text, stops being UTF-8: the
// offset of the first byte that is not part of a valid UTF-8 sequence and
// the path (root, root.name, root.items[2]) of the string that holds it,
// named as validation findings name fields; ok is false when data is valid.
// encoding/json would decode such a byte as U+FFFD, so a body could carry
// text its sender never wrote; JSON is UTF-8 (RFC 8259 §8.1).
func InvalidUTF8(data []byte, root string) (offset int, path string, ok bool) {
	if utf8.Valid(data) {
		return 0, "", false
	}
	for offset < len(data) {
		r, n := utf8.DecodeRune(data[offset:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		offset += n
	}
	return offset, pathAt(data, offset, root), true
}

// pathAt names the value of the JSON text data whose string holds the byte
// at off (an object key names its member); root when no value does, as
// when the byte is outside any string (the decoder then finds the error).
func pathAt(data []byte, off int, root string) string {
	type frame struct {
		object  bool
		wantKey bool // in an object, before a member's name
		key     string
		index   int // in an array, the current element
	}
	var stack []frame
	name := func() string {
		var w walker
		if root != "" {
			w.segs = append(w.segs, seg{name: root})
		}
		for _, f := range stack {
			if f.object {
				w.segs = append(w.segs, seg{name: f.key})
			} else {
				w.segs = append(w.segs, seg{index: f.index})
			}
		}
		return w.path()
	}
	// valueDone moves the enclosing container past the value just read.
	valueDone := func() {
		if len(stack) == 0 {
			return
		}
		if top := &stack[len(stack)-1]; top.object {
			top.wantKey = true
		} else {
			top.index++
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err != nil {
			return root
		}
		end := int(dec.InputOffset())
		if d, isDelim := tok.(json.Delim); isDelim {
			switch d {
			case '{', '[':
				stack = append(stack, frame{object: d == '{', wantKey: d == '{'})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
			continue
		}
		if len(stack) > 0 && stack[len(stack)-1].wantKey {
			top := &stack[len(stack)-1]
			top.key, _ = tok.(string)
			top.wantKey = false
			if off < end {
				return name()
			}
			continue
		}
		if off < end {
			return name()
		}
		valueDone()
	}
}
