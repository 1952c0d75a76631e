package ip2bin

import (
	"encoding/binary"
	"fmt"
	"math"
)

// CorruptError is a BIN whose header is valid but whose body is not: a row, index entry
// or string pointer that a lookup would follow out of place. ip2location-go trusts every
// one of them, so such a file would answer some lookups with a panic and others with
// garbage; it is refused before it serves.
type CorruptError struct{ Reason string }

func (e *CorruptError) Error() string { return "corrupt bin: " + e.Reason }

func corrupt(format string, args ...any) error {
	return &CorruptError{Reason: fmt.Sprintf(format, args...)}
}

// lastColumn[t] is the last column ip2location-go v9 reads for database type t (the
// largest of its per-field position tables): a file of type t with fewer columns would
// have lookups slice past the end of a row.
var lastColumn = [27]byte{0, 2, 3, 4, 5, 6, 7, 6, 8, 7, 9, 8, 10, 8, 11, 10, 13, 10, 15, 11, 18, 11, 19, 12, 20, 22, 28}

// hasLocation reports the types whose columns 5 and 6 are latitude and longitude: float32
// bits in the row, not pointers.
func hasLocation(t byte) bool { return t >= 5 && t != 7 }

// section is one address family's rows and index as the header places them.
type section struct {
	name         string
	base, index  uint32 // 1-based file offsets; index 0: none
	count        uint32 // rows, the final sentinel included
	fromSize     int64  // bytes of ip_from: 4 or 16
	rowSize      int64
	bucketShift  uint // the index selects rows by the top 16 bits
	maxHi, maxLo uint64
}

// verify walks the whole file the way lookups will: every index entry, every row's ip_from
// order and every string a row points to must be in place. It costs one pass over the rows
// (tens of milliseconds for the full DB-IP database), paid once per load or reload.
func verify(data []byte, h header) error {
	if int(h.columns) < int(lastColumn[h.dbType]) {
		return corrupt("type DB%d has %d columns, the header says %d", h.dbType, lastColumn[h.dbType], h.columns)
	}
	cols := int64(h.columns)
	v4 := section{name: "ipv4", base: h.base4, index: h.index4, count: h.count4, fromSize: 4, rowSize: 4 * cols,
		bucketShift: 16, maxLo: math.MaxUint32}
	if err := verifySection(data, h, v4); err != nil {
		return err
	}
	if h.count6 == 0 {
		return nil
	}
	v6 := section{name: "ipv6", base: h.base6, index: h.index6, count: h.count6, fromSize: 16, rowSize: 16 + 4*(cols-1),
		bucketShift: 112, maxHi: math.MaxUint64, maxLo: math.MaxUint64}
	return verifySection(data, h, v6)
}

func verifySection(data []byte, h header, s section) error {
	size := int64(len(data))
	le := binary.LittleEndian
	rows := int64(s.count)
	start := int64(s.base) - 1
	// parseHeader checked that the rows lie in the file; a lookup also reads the ip_from
	// of the row after the one it probes, which for the last probed row is the sentinel.
	from := func(i int64) (hi, lo uint64) {
		off := start + i*s.rowSize
		if s.fromSize == 4 {
			return 0, uint64(le.Uint32(data[off:]))
		}
		return le.Uint64(data[off+8:]), le.Uint64(data[off:])
	}
	less := func(ah, al, bh, bl uint64) bool { return ah < bh || ah == bh && al < bl }

	if hi, lo := from(0); hi != 0 || lo != 0 {
		return corrupt("%s rows start at %s, not at the first address", s.name, fromText(s, hi, lo))
	}
	if hi, lo := from(rows - 1); hi != s.maxHi || lo != s.maxLo {
		return corrupt("%s sentinel row ends the ranges at %s, not at the last address", s.name, fromText(s, hi, lo))
	}
	location := hasLocation(h.dbType)
	last := int64(lastColumn[h.dbType])
	ph, pl := from(0)
	for i := int64(0); i < rows-1; i++ { // the sentinel's cells are never read
		if i > 0 {
			hi, lo := from(i)
			if less(hi, lo, ph, pl) {
				return corrupt("%s row %d starts at %s, before row %d", s.name, i, fromText(s, hi, lo), i-1)
			}
			ph, pl = hi, lo
		}
		row := start + i*s.rowSize + s.fromSize
		for col := int64(2); col <= last; col++ {
			if location && (col == 5 || col == 6) {
				continue // latitude, longitude
			}
			p := int64(le.Uint32(data[row+(col-2)*4:]))
			ok := stringFits(data, p)
			if col == 2 { // country: the code, and the name 3 bytes on
				ok = ok && stringFits(data, p+3)
			}
			if !ok {
				return corrupt("%s row %d column %d points at byte %d, outside the %d-byte file", s.name, i, col, p, size)
			}
		}
	}
	if s.index == 0 {
		return nil
	}
	idx := int64(s.index) - 1
	for k := int64(0); k < 1<<16; k++ {
		low := int64(le.Uint32(data[idx+k*8:]))
		high := int64(le.Uint32(data[idx+k*8+4:]))
		if low > high || high > rows-2 {
			return corrupt("%s index entry %d names rows %d to %d of %d", s.name, k, low, high, rows-1)
		}
		// The rows must hold the block's first address and its last one.
		var bh, bl, eh, el uint64
		if s.bucketShift == 16 {
			bl = uint64(k) << 16
			el = bl | 0xFFFF
		} else {
			bh = uint64(k) << 48
			eh, el = bh|(1<<48-1), math.MaxUint64
		}
		if lh, ll := from(low); less(bh, bl, lh, ll) {
			return corrupt("%s index entry %d starts at row %d, past the block's first address", s.name, k, low)
		}
		if high+1 < rows-1 {
			if nh, nl := from(high + 1); !less(eh, el, nh, nl) {
				return corrupt("%s index entry %d ends at row %d, before the block's last address", s.name, k, high)
			}
		}
	}
	return nil
}

// stringFits reports whether the length-prefixed string at byte p lies inside data.
func stringFits(data []byte, p int64) bool {
	return p >= 0 && p < int64(len(data)) && p+1+int64(data[p]) <= int64(len(data))
}

func fromText(s section, hi, lo uint64) string {
	if s.fromSize == 4 {
		return fmt.Sprintf("%d", lo)
	}
	return fmt.Sprintf("%016x%016x", hi, lo)
}
