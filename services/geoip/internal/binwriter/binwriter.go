// Package binwriter writes IP2Location BIN files in the DB11 column layout (country,
// region, city, latitude, longitude, zip, time zone) that ip2location-go and the other
// official readers open. The format is described in docs and in the research notes; the
// reader-side rules that shape this code are restated where they matter.
package binwriter

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"slices"
	"time"
	"unicode/utf8"
)

// Location is the content of one DB11 row. Empty strings are written as "-", the
// placeholder official files use for unknown values.
type Location struct {
	Country     string // ISO alpha-2
	CountryName string
	Region      string
	City        string
	Postal      string
	TimeZone    string
	Latitude    float32
	Longitude   float32
}

// DB11 geometry: 8 columns including ip_from, so 7 four-byte cells after the address.
const (
	dbType       = 11
	columns      = 8
	cells        = columns - 1
	rowSize4     = 4 + 4*cells
	rowSize6     = 16 + 4*cells
	headerSize   = 64
	indexEntries = 1 << 16
	indexSize    = indexEntries * 8
	// productCode 1 means IP2Location; readers refuse other codes for files dated 2021 on.
	productCode = 1
	// productType 3 is what ip2convert writes for generated (not IP2Location-made) files.
	productType = 3
)

type u128 struct{ hi, lo uint64 }

func (a u128) less(b u128) bool { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo) }
func (a u128) compare(b u128) int {
	if a == b {
		return 0
	}
	if a.less(b) {
		return -1
	}
	return 1
}

func (a u128) inc() (u128, bool) {
	lo := a.lo + 1
	hi := a.hi
	if lo == 0 {
		hi++
		if hi == 0 {
			return u128{}, true
		}
	}
	return u128{hi, lo}, false
}

func fromAddr(a netip.Addr) u128 {
	if a.Is4() {
		b := a.As4()
		return u128{lo: uint64(binary.BigEndian.Uint32(b[:]))}
	}
	b := a.As16()
	return u128{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

type span struct {
	from, to u128
	loc      uint32
}

// Builder collects address ranges and their locations, then writes them as one BIN file.
// Ranges may arrive in any order but must not overlap; the space between them is filled
// with an unknown ("-") row, as real files fill private and unallocated space.
type Builder struct {
	locs  []Location
	locID map[Location]uint32
	v4    []span
	v6    []span
}

// Unknown is the location id of the "-" row used for gaps.
const Unknown uint32 = 0

// NewBuilder returns an empty builder.
func NewBuilder() *Builder {
	b := &Builder{locID: make(map[Location]uint32)}
	b.Intern(Location{})
	return b
}

// Intern returns the id of loc, adding it when new. Rows share identical locations, and so
// do the strings they point to.
func (b *Builder) Intern(loc Location) uint32 {
	if id, ok := b.locID[loc]; ok {
		return id
	}
	id := uint32(len(b.locs))
	b.locs = append(b.locs, loc)
	b.locID[loc] = id
	return id
}

// AddRange records that the inclusive range [from, to] has location id loc. Both ends
// must be of one family; IPv4-mapped IPv6 addresses count as IPv4.
func (b *Builder) AddRange(from, to netip.Addr, loc uint32) error {
	from, to = from.Unmap(), to.Unmap()
	if !from.IsValid() || !to.IsValid() || from.Is4() != to.Is4() {
		return fmt.Errorf("range %s-%s: ends must be valid addresses of one family", from, to)
	}
	if to.Less(from) {
		return fmt.Errorf("range %s-%s: end before start", from, to)
	}
	if int(loc) >= len(b.locs) {
		return fmt.Errorf("range %s-%s: unknown location id %d", from, to, loc)
	}
	s := span{fromAddr(from), fromAddr(to), loc}
	sec := &b.v6
	if from.Is4() {
		sec = &b.v4
	}
	// Sources list networks in address order, and neighbours often share a location
	// (an MMDB splits ranges into CIDR blocks): extend the last span instead of adding.
	if n := len(*sec); n > 0 {
		last := &(*sec)[n-1]
		if next, overflow := last.to.inc(); !overflow && next == s.from && last.loc == loc {
			last.to = s.to
			return nil
		}
	}
	*sec = append(*sec, s)
	return nil
}

// AddPrefix is AddRange for a CIDR prefix.
func (b *Builder) AddPrefix(p netip.Prefix, loc uint32) error {
	p = p.Masked()
	if !p.IsValid() {
		return fmt.Errorf("prefix %s: invalid", p)
	}
	return b.AddRange(p.Addr(), lastAddr(p), loc)
}

func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Addr()
	if a.Is4() {
		v := a.As4()
		// Shifting a uint32 by 32 gives 0, which is right for a /32.
		n := binary.BigEndian.Uint32(v[:]) | (uint32(math.MaxUint32) >> p.Bits())
		binary.BigEndian.PutUint32(v[:], n)
		return netip.AddrFrom4(v)
	}
	v := a.As16()
	for i := p.Bits(); i < 128; i++ {
		v[i/8] |= 0x80 >> (i % 8)
	}
	return netip.AddrFrom16(v)
}

// Options control the file layout.
type Options struct {
	// Date is the build date written to the header (day precision, years 2000-2255).
	Date time.Time
	// NoIndex leaves out the two 512 KiB index tables: readers then binary-search the
	// whole section. Worth it only for tiny files such as the embedded sample.
	NoIndex bool
}

// Stats describe a written file.
type Stats struct {
	Rows4, Rows6 int // ranges written per section, gap rows included, sentinel excluded
	Locations    int
	Bytes        int64
}

// rows is one section after sorting, gap filling and merging: row i covers
// [from[i], from[i+1]-1].
type rows struct {
	from []u128
	loc  []uint32
}

var errOverlap = errors.New("overlapping ranges")

func buildRows(spans []span, family string, last u128) (rows, error) {
	slices.SortFunc(spans, func(a, b span) int { return a.from.compare(b.from) })
	var r rows
	add := func(from u128, loc uint32) {
		// Merging equal neighbours is what makes a /24-per-row MMDB compact as a BIN.
		if n := len(r.loc); n > 0 && r.loc[n-1] == loc {
			return
		}
		r.from = append(r.from, from)
		r.loc = append(r.loc, loc)
	}
	var next u128 // first address not yet covered
	done := false // next overflowed: the whole space is covered
	for i, s := range spans {
		if done || s.from.less(next) {
			return rows{}, fmt.Errorf("%s: %w near range %d", family, errOverlap, i)
		}
		if next.less(s.from) {
			add(next, Unknown)
		}
		if last.less(s.to) {
			return rows{}, fmt.Errorf("%s: range %d ends beyond the address space", family, i)
		}
		add(s.from, s.loc)
		next, _ = s.to.inc()
		done = s.to == last
	}
	if !done {
		add(next, Unknown)
	}
	return r, nil
}

// Write sorts, fills and writes the collected ranges as a DB11 BIN. Without any IPv6
// range the file is IPv4-only (IPv6 queries get the reader's "missing" answer), as
// IP2Location's own IPv4 products are.
func (b *Builder) Write(w io.Writer, opts Options) (Stats, error) {
	r4, err := buildRows(b.v4, "ipv4", u128{lo: math.MaxUint32})
	if err != nil {
		return Stats{}, err
	}
	var r6 rows
	if len(b.v6) > 0 {
		if r6, err = buildRows(b.v6, "ipv6", u128{math.MaxUint64, math.MaxUint64}); err != nil {
			return Stats{}, err
		}
	}
	year := opts.Date.Year()
	if opts.Date.IsZero() {
		year = 2000
	}
	if year < 2000 || year > 2255 {
		return Stats{}, fmt.Errorf("build date %s: year out of range", opts.Date.Format(time.DateOnly))
	}

	strs := newStringTable()
	cellsByLoc := make([][cells]uint32, len(b.locs))
	for i, loc := range b.locs {
		cellsByLoc[i] = strs.cells(loc)
	}

	// Layout: header, index tables, IPv4 rows, IPv6 rows, strings. Header addresses are
	// 1-based; string pointers in rows are 0-based.
	off := int64(headerSize)
	var idx4, idx6 int64
	if !opts.NoIndex {
		idx4 = off
		off += indexSize
		if len(r6.from) > 0 {
			idx6 = off
			off += indexSize
		}
	}
	base4 := off
	off += int64(len(r4.from)+1) * rowSize4
	base6 := off
	if len(r6.from) > 0 {
		off += int64(len(r6.from)+1) * rowSize6
	}
	strBase := off
	total := strBase + int64(len(strs.data))
	if total > math.MaxUint32 {
		return Stats{}, fmt.Errorf("output would be %d bytes, beyond the format's 4 GiB limit", total)
	}

	bw := bufio.NewWriterSize(w, 1<<20)
	var hdr [headerSize]byte
	hdr[0] = dbType
	hdr[1] = columns
	hdr[2] = byte(year % 100)
	if !opts.Date.IsZero() {
		hdr[3] = byte(opts.Date.Month())
		hdr[4] = byte(opts.Date.Day())
	} else {
		hdr[3], hdr[4] = 1, 1
	}
	le := binary.LittleEndian
	le.PutUint32(hdr[5:], uint32(len(r4.from)+1))
	le.PutUint32(hdr[9:], uint32(base4+1))
	if len(r6.from) > 0 {
		le.PutUint32(hdr[13:], uint32(len(r6.from)+1))
		le.PutUint32(hdr[17:], uint32(base6+1))
	}
	if idx4 > 0 {
		le.PutUint32(hdr[21:], uint32(idx4+1))
	}
	if idx6 > 0 {
		le.PutUint32(hdr[25:], uint32(idx6+1))
	}
	hdr[29] = productCode
	hdr[30] = productType
	le.PutUint32(hdr[31:], uint32(total))
	bw.Write(hdr[:])

	if idx4 > 0 {
		writeIndex(bw, r4, 16)
	}
	if idx6 > 0 {
		writeIndex(bw, r6, 112)
	}
	unknown := cellsByLoc[Unknown]
	writeRows := func(r rows, v6 bool, sentinel u128) {
		var buf [rowSize6]byte
		put := func(from u128, c [cells]uint32) {
			n := 4
			if v6 {
				// ip_from is a 128-bit little-endian integer.
				le.PutUint64(buf[0:], from.lo)
				le.PutUint64(buf[8:], from.hi)
				n = 16
			} else {
				le.PutUint32(buf[0:], uint32(from.lo))
			}
			for j, v := range c {
				if j == latCell || j == lonCell {
					le.PutUint32(buf[n+4*j:], v)
				} else {
					le.PutUint32(buf[n+4*j:], uint32(strBase)+v)
				}
			}
			bw.Write(buf[:n+4*cells])
		}
		for i, from := range r.from {
			put(from, cellsByLoc[r.loc[i]])
		}
		// The sentinel row's ip_from is the exclusive end of the last range; its cells
		// point at "-" like every unknown row.
		put(sentinel, unknown)
	}
	writeRows(r4, false, u128{lo: math.MaxUint32})
	if len(r6.from) > 0 {
		writeRows(r6, true, u128{math.MaxUint64, math.MaxUint64})
	}
	bw.Write(strs.data)
	if err := bw.Flush(); err != nil {
		return Stats{}, fmt.Errorf("write bin: %w", err)
	}
	return Stats{Rows4: len(r4.from), Rows6: len(r6.from), Locations: len(b.locs), Bytes: total}, nil
}

// Cell order of DB11 after ip_from; latitude and longitude are inline float32 bits, the
// rest are string pointers relative to the string area until written.
const (
	countryCell = iota
	regionCell
	cityCell
	latCell
	lonCell
	zipCell
	tzCell
)

// writeIndex writes the 65,536 entries (first row, last row) of the rows intersecting each
// block of the address space selected by the top 16 bits (shift 16 for IPv4, 112 for IPv6).
func writeIndex(w io.Writer, r rows, shift uint) {
	n := len(r.from)
	var buf [8]byte
	i := 0
	for k := uint64(0); k < indexEntries; k++ {
		var start, end u128
		if shift == 16 {
			start, end = u128{lo: k << 16}, u128{lo: k<<16 | 0xFFFF}
		} else {
			start, end = u128{hi: k << 48}, u128{hi: k<<48 | (1<<48 - 1), lo: math.MaxUint64}
		}
		// Rows start at 0 and are sorted: the row holding an address is the last one
		// starting at or before it.
		for i+1 < n && !start.less(r.from[i+1]) {
			i++
		}
		j := i
		for j+1 < n && !end.less(r.from[j+1]) {
			j++
		}
		binary.LittleEndian.PutUint32(buf[0:], uint32(i))
		binary.LittleEndian.PutUint32(buf[4:], uint32(j))
		w.Write(buf[:])
		i = j
	}
}

// stringTable deduplicates strings into the string area. Offsets are relative to the
// area's start until the rows are written.
type stringTable struct {
	data      []byte
	generic   map[string]uint32
	countries map[[2]string]uint32
}

func newStringTable() *stringTable {
	return &stringTable{generic: make(map[string]uint32), countries: make(map[[2]string]uint32)}
}

func (t *stringTable) str(s string) uint32 {
	s = dash(s)
	if off, ok := t.generic[s]; ok {
		return off
	}
	off := uint32(len(t.data))
	t.data = append(t.data, byte(len(s)))
	t.data = append(t.data, s...)
	t.generic[s] = off
	return off
}

// country writes the code/name pair a country cell points to. Readers take the long name
// at pointer+3, so the code always occupies three bytes: "-" is padded with a space.
func (t *stringTable) country(code, name string) uint32 {
	code = dash(code)
	if len(code) > 2 {
		code = "-"
	}
	name = dash(name)
	if code == "-" {
		name = "-"
	}
	key := [2]string{code, name}
	if off, ok := t.countries[key]; ok {
		return off
	}
	off := uint32(len(t.data))
	t.data = append(t.data, byte(len(code)))
	t.data = append(t.data, code...)
	if len(code) < 2 {
		t.data = append(t.data, ' ')
	}
	t.data = append(t.data, byte(len(name)))
	t.data = append(t.data, name...)
	t.countries[key] = off
	return off
}

func (t *stringTable) cells(loc Location) [cells]uint32 {
	var c [cells]uint32
	c[countryCell] = t.country(loc.Country, loc.CountryName)
	c[regionCell] = t.str(loc.Region)
	c[cityCell] = t.str(loc.City)
	c[latCell] = math.Float32bits(loc.Latitude)
	c[lonCell] = math.Float32bits(loc.Longitude)
	c[zipCell] = t.str(loc.Postal)
	c[tzCell] = t.str(loc.TimeZone)
	return c
}

// dash maps empty to "-" and cuts values to the format's 255-byte limit on a rune boundary.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	if len(s) > 255 {
		s = s[:255]
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}

func (a u128) addr(is4 bool) netip.Addr {
	if is4 {
		return netip.AddrFrom4([4]byte{byte(a.lo >> 24), byte(a.lo >> 16), byte(a.lo >> 8), byte(a.lo)})
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], a.hi)
	binary.BigEndian.PutUint64(b[8:], a.lo)
	return netip.AddrFrom16(b)
}

// Ranges calls fn for every range added, IPv4 then IPv6, each family in the order
// the ranges were added (neighbours with one location merged), and stops at fn's
// first error. Adding the same ranges in this order to a new Builder interns the
// locations in the same order, so it writes the same file.
func (b *Builder) Ranges(fn func(from, to netip.Addr, loc Location) error) error {
	for _, sec := range []struct {
		spans []span
		is4   bool
	}{{b.v4, true}, {b.v6, false}} {
		for _, s := range sec.spans {
			if err := fn(s.from.addr(sec.is4), s.to.addr(sec.is4), b.locs[s.loc]); err != nil {
				return err
			}
		}
	}
	return nil
}
