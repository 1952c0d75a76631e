package mmdb

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// The answer path reads a flat record (the DB-IP packages' layout, one map of strings and
// two doubles) with the small decoder below instead of maxminddb-golang's reflection: its
// strings stay in the file's memory (lookup.InPlaceDB; the caller keeps the file open
// while it reads them) and it allocates nothing. It understands exactly that shape: a map
// whose keys are strings and whose values are strings or numbers (double or float), each inline or behind
// one pointer. Anything else (another type, a duplicate key, a bound crossed) makes it
// give up, and the record is decoded by the library as before, which also reports a
// corrupt file: an answer read either way is the same (TestInPlaceDecodingMatchesTheLibrary).

// Data section types (MaxMind DB format, section "Output Data Section").
const (
	typeExtended = 0
	typePointer  = 1
	typeString   = 2
	typeDouble   = 3
	typeMap      = 7
	typeFloat    = 15
)

// flatKeys bounds the map a flat record may be: the eight fields and a few more the
// decoder skips only if they are strings or doubles.
const flatKeys = 16

// decodeFlatInPlace reads the flat record at off in data (the data section); ok is false
// when the record is not of the shape above.
func decodeFlatInPlace(data []byte, off uint) (f FlatRecord, ok bool) {
	typ, size, off, ok := ctrl(data, off)
	if !ok || typ != typeMap || size > flatKeys {
		return f, false
	}
	var seen uint8
	for range size {
		var key string
		if key, off, ok = readString(data, off); !ok {
			return f, false
		}
		var (
			s    string
			d    float64
			isD  bool
			slot int
		)
		typ, s, d, off, ok = readValue(data, off)
		if !ok {
			return f, false
		}
		isD = typ == typeDouble
		switch key {
		case "country_code":
			f.CountryCode, slot = s, 0
		case "state1":
			f.State1, slot = s, 1
		case "state2":
			f.State2, slot = s, 2
		case "city":
			f.City, slot = s, 3
		case "postcode":
			f.Postcode, slot = s, 4
		case "timezone":
			f.Timezone, slot = s, 5
		case "latitude":
			f.Latitude, slot = d, 6
		case "longitude":
			f.Longitude, slot = d, 7
		default:
			continue // a field the service does not read, of a type the decoder knows
		}
		if seen&(1<<slot) != 0 || isD != (slot >= 6) {
			return f, false // a duplicate, or a string where a double belongs (or back)
		}
		seen |= 1 << slot
	}
	return f, true
}

// readValue reads a string or a double at off, following one pointer; next is the
// offset after the value (after the pointer, for a value behind one).
func readValue(data []byte, off uint) (typ int, s string, d float64, next uint, ok bool) {
	typ, size, start, ok := ctrl(data, off)
	if !ok {
		return 0, "", 0, 0, false
	}
	next = start + size
	if typ == typePointer {
		target, after, ok := pointer(data, off)
		if !ok {
			return 0, "", 0, 0, false
		}
		if typ, size, start, ok = ctrl(data, target); !ok || typ == typePointer {
			return 0, "", 0, 0, false // a pointer to a pointer is invalid data
		}
		next = after
	}
	if start > uint(len(data)) || size > uint(len(data))-start {
		return 0, "", 0, 0, false
	}
	switch typ {
	case typeString:
		if size > 0 {
			s = unsafe.String(&data[start], size)
		}
		return typ, s, 0, next, true
	case typeDouble:
		if size != 8 {
			return 0, "", 0, 0, false
		}
		return typ, "", math.Float64frombits(binary.BigEndian.Uint64(data[start:])), next, true
	case typeFloat:
		// DB-IP's coordinates are floats; the library widens them into a float64 field.
		if size != 4 {
			return 0, "", 0, 0, false
		}
		return typeDouble, "", float64(math.Float32frombits(binary.BigEndian.Uint32(data[start:]))), next, true
	}
	return 0, "", 0, 0, false
}

// readString reads a string (a map key) at off, following one pointer.
func readString(data []byte, off uint) (string, uint, bool) {
	typ, s, _, next, ok := readValue(data, off)
	return s, next, ok && typ == typeString
}

// ctrl decodes the control byte (and extended type and size bytes) at off: the value's
// type, its size, and where its payload starts. For a pointer, size is 0 and start is
// off; pointer reads it.
func ctrl(data []byte, off uint) (typ int, size, start uint, ok bool) {
	if off >= uint(len(data)) {
		return 0, 0, 0, false
	}
	c := data[off]
	typ, off = int(c>>5), off+1
	if typ == typePointer {
		return typ, 0, off - 1, true
	}
	if typ == typeExtended {
		if off >= uint(len(data)) {
			return 0, 0, 0, false
		}
		typ, off = 7+int(data[off]), off+1
	}
	size = uint(c & 0x1f)
	if size >= 29 {
		n := size - 28 // 1, 2 or 3 more bytes
		if off+n > uint(len(data)) {
			return 0, 0, 0, false
		}
		var v uint
		for i := range n {
			v = v<<8 | uint(data[off+i])
		}
		size = [...]uint{29, 285, 65821}[n-1] + v
		off += n
	}
	return typ, size, off, true
}

// pointer decodes the pointer at off: its target in the data section and the offset
// after it.
func pointer(data []byte, off uint) (target, next uint, ok bool) {
	c := data[off]
	n := uint(c>>3&3) + 1
	if off+1+n > uint(len(data)) {
		return 0, 0, false
	}
	b := data[off+1 : off+1+n]
	v := uint(c & 7)
	switch n {
	case 1:
		target = v<<8 | uint(b[0])
	case 2:
		target = (v<<16 | uint(b[0])<<8 | uint(b[1])) + 2048
	case 3:
		target = (v<<24 | uint(b[0])<<16 | uint(b[1])<<8 | uint(b[2])) + 526336
	case 4:
		target = uint(binary.BigEndian.Uint32(b))
	}
	return target, off + 1 + n, true
}
