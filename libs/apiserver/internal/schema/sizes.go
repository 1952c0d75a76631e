package schema

import (
	"bytes"
	"encoding/json"
	"slices"
)

// CheckShape looks through a raw JSON document for arrays longer than
// their node's maxItems, fields that the objects do not have and values
// of the wrong JSON type, before anything decodes it. Decoding a hostile
// megabyte of [0,0,...] into Go values costs about 130 ms of CPU and a
// hundred times the body in memory; this scan costs about a nanosecond a
// byte, keeps nothing, and does not look inside an array past its
// maxItems. 90k unknown fields likewise cost a scan, not a map of 90k
// entries. The findings go to errs as CheckJSON's would (up to
// MaxFindings, the rest counted in omitted).
//
// The scan is lenient: on a malformed or too deeply nested document it
// gives up and reports nothing (found is false), leaving the error to the
// decoder.
func (n *Node) CheckShape(data []byte, path string, errs *Errors) (found bool, omitted int) {
	w := getWalker(path, roomIn(errs))
	s := sizeScan{data: data, w: w}
	ok := s.value(n) && s.end()
	if !ok || !w.failed() {
		w.release(nil)
		return false, 0
	}
	return true, w.release(errs)
}

// scanMaxDepth is encoding/json's nesting limit: deeper, the scan gives up
// (the decoder refuses such a document), so a hostile [[[[... cannot grow
// the stack.
const scanMaxDepth = 10000

type sizeScan struct {
	data  []byte
	pos   int
	depth int
	w     *walker
}

// value scans one value that n describes (nil: any value, skipped). It
// checks the value's JSON type as CheckJSON does, with the same messages:
// the type is part of the shape, and a million items of the wrong type
// are then found without decoding any.
func (s *sizeScan) value(n *Node) bool {
	s.space()
	if s.pos >= len(s.data) {
		return false
	}
	if n == nil || n.kind == kindAny {
		return s.skip()
	}
	c := s.data[s.pos]
	var got string
	switch {
	case c == '[':
		if n.kind == kindSlice {
			return s.array(n)
		}
		got = "an array"
	case c == '{':
		if n.kind == kindStruct || n.kind == kindMap {
			return s.object(n)
		}
		got = "an object"
	case c == '"':
		if n.kind == kindString || n.kind == kindTime {
			return s.skip()
		}
		got = "a string"
	case c == '-' || c >= '0' && c <= '9':
		if n.kind == kindInt || n.kind == kindUint || n.kind == kindFloat {
			return s.skip()
		}
		got = "a number"
	case c == 't' || c == 'f':
		if n.kind == kindBool {
			return s.skip()
		}
		got = "a boolean"
	case c == 'n':
		if !n.nullable {
			s.w.add("must not be null")
		}
		return s.skip()
	default:
		return false // malformed: the decoder says how
	}
	if len(s.w.found) >= s.w.room {
		s.w.omitted++
	} else {
		s.w.add("expected %s, got %s", kindName(n.kind), got)
	}
	return s.skip()
}

// kindName is how CheckJSON names what a node expects.
func kindName(k kind) string {
	switch k {
	case kindString, kindTime:
		return "a string"
	case kindBool:
		return "a boolean"
	case kindInt, kindUint:
		return "an integer"
	case kindFloat:
		return "a number"
	case kindSlice:
		return "an array"
	}
	return "an object"
}

func (s *sizeScan) array(n *Node) bool {
	s.pos++ // [
	if s.depth++; s.depth > scanMaxDepth {
		return false
	}
	count := 0
	// Findings inside an array that turns out longer than its maxItems
	// are dropped: like CheckJSON, such an array gets the one finding.
	mark, markOmitted := len(s.w.found), s.w.omitted
	s.space()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
	} else {
		for {
			var ok bool
			if n.maxItems == nil || count < *n.maxItems {
				s.w.pushIndex(count)
				ok = s.value(n.elem)
				s.w.pop()
			} else {
				ok = s.skip() // past maxItems, items are only counted
			}
			if !ok {
				return false
			}
			count++
			c, ok := s.next()
			if !ok {
				return false
			}
			if c == ']' {
				break
			}
			if c != ',' {
				return false
			}
		}
	}
	s.depth--
	if n.maxItems != nil && count > *n.maxItems {
		clear(s.w.found[mark:])
		s.w.found, s.w.omitted = s.w.found[:mark], markOmitted
		s.w.add("must have at most %d items, got %d", *n.maxItems, count)
	}
	return true
}

func (s *sizeScan) object(n *Node) bool {
	s.pos++ // {
	if s.depth++; s.depth > scanMaxDepth {
		return false
	}
	s.space()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		s.depth--
		return true
	}
	// Unknown fields of a struct: the first ones by name (as many as
	// there is room for) and how many.
	var unknown []string
	unknownCount, room := 0, max(0, s.w.room-len(s.w.found))
	for {
		s.space()
		start := s.pos
		if s.pos >= len(s.data) || s.data[s.pos] != '"' || !s.skipString() {
			return false
		}
		quoted := s.data[start:s.pos]
		if c, ok := s.next(); !ok || c != ':' {
			return false
		}
		var key string
		raw := quoted[1 : len(quoted)-1]
		escaped := bytes.IndexByte(raw, '\\') >= 0
		if escaped {
			// "ip\u0073" names the field ips, as the decoder will see it.
			if err := json.Unmarshal(quoted, &key); err != nil {
				return false
			}
		}
		var child *Node
		if n.kind == kindMap {
			child = n.elem
		} else {
			var f *Field
			if escaped {
				f = n.byName[key]
			} else {
				f = n.byName[string(raw)] // no allocation
			}
			if f != nil {
				child = f.Node
			} else {
				unknownCount++
				if escaped {
					unknown = keepFirst(unknown, key, room)
				} else if len(unknown) < room || room > 0 && string(raw) < unknown[room-1] {
					unknown = keepFirst(unknown, string(raw), room)
				}
			}
		}
		var ok bool
		if child != nil {
			if !escaped {
				key = string(raw)
			}
			s.w.push(key)
			ok = s.value(child)
			s.w.pop()
		} else {
			ok = s.skip()
		}
		if !ok {
			return false
		}
		c, ok := s.next()
		if !ok {
			return false
		}
		if c == '}' {
			break
		}
		if c != ',' {
			return false
		}
	}
	s.depth--
	for _, k := range unknown {
		s.w.push(k)
		s.w.add("is not an allowed field")
		s.w.pop()
	}
	s.w.omitted += unknownCount - len(unknown)
	return true
}

// keepFirst inserts k into first, sorted and at most limit long.
func keepFirst(first []string, k string, limit int) []string {
	if limit == 0 || len(first) == limit && k >= first[limit-1] {
		return first
	}
	i, _ := slices.BinarySearch(first, k)
	if len(first) < limit {
		return slices.Insert(first, i, k)
	}
	copy(first[i+1:], first[i:limit-1])
	first[i] = k
	return first
}

// skip passes over one value of any kind without looking into it.
func (s *sizeScan) skip() bool {
	s.space()
	if s.pos >= len(s.data) {
		return false
	}
	switch s.data[s.pos] {
	case '"':
		return s.skipString()
	case '[', '{':
		depth := 0
		for s.pos < len(s.data) {
			switch s.data[s.pos] {
			case '"':
				if !s.skipString() {
					return false
				}
				continue
			case '[', '{':
				if depth++; s.depth+depth > scanMaxDepth {
					return false
				}
			case ']', '}':
				if depth--; depth == 0 {
					s.pos++
					return true
				}
			}
			s.pos++
		}
		return false
	}
	start := s.pos
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ',', ']', '}', ':', ' ', '\t', '\n', '\r':
			return s.pos > start
		}
		s.pos++
	}
	return s.pos > start
}

// skipString passes over a string, s.pos on its opening quote.
func (s *sizeScan) skipString() bool {
	s.pos++
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case '\\':
			s.pos += 2
			continue
		case '"':
			s.pos++
			return true
		}
		s.pos++
	}
	return false
}

func (s *sizeScan) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// next returns the next byte that is not white space, and passes it.
func (s *sizeScan) next() (byte, bool) {
	s.space()
	if s.pos >= len(s.data) {
		return 0, false
	}
	s.pos++
	return s.data[s.pos-1], true
}

// end reports whether only white space is left.
func (s *sizeScan) end() bool {
	s.space()
	return s.pos == len(s.data)
}
