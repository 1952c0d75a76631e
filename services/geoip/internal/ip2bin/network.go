package ip2bin

import (
	"encoding/binary"
	"net/netip"

	"github.com/apistack/platform/services/geoip/internal/lookup"
)

// u128 is an address as a number: hi holds the first 8 bytes of an IPv6 address.
type u128 struct{ hi, lo uint64 }

func (a u128) less(b u128) bool { return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo }

// lowMask has the low n bits set (n <= 128).
func lowMask(n int) u128 {
	switch {
	case n <= 0:
		return u128{}
	case n < 64:
		return u128{0, 1<<uint(n) - 1}
	case n < 128:
		return u128{1<<uint(n-64) - 1, ^uint64(0)}
	}
	return u128{^uint64(0), ^uint64(0)}
}

// row is the BIN row that answers for an address, found by rowFor.
type row struct {
	cells    []byte // the cells after ip_from
	ip, from u128   // the address and the row's first address
	last     u128   // the row's last address
	width    int    // 32 or 128
	valid    bool
}

// rowFor finds the row that answers for addr by an index and a binary search, as
// ip2location-go does, but over d.data without copying, and for IPv4 by the finer index
// fine4 rather than the file's. It reads d.data, so only files held
// in memory have it, and the caller holds libMu. IPv6 addresses ip2location-go answers from
// the IPv4 rows (6to4, Teredo) are not found here (valid false): callers fall back to it.
func (d *DB) rowFor(addr netip.Addr) row {
	if d.data == nil {
		return row{}
	}
	h := &d.hdr
	var ip u128
	var width, base, count, indexBase, rowSize int
	if addr.Is4() {
		a := addr.As4()
		ip = u128{0, uint64(binary.BigEndian.Uint32(a[:]))}
		width, base, count, indexBase, rowSize = 32, int(h.base4)-1, int(h.count4), int(h.index4)-1, 4*int(h.columns)
	} else {
		if _, _, tunnelled := lookup.TunnelledIPv4(addr); h.count6 == 0 || tunnelled {
			return row{}
		}
		a := addr.As16()
		ip = u128{binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])}
		width, base, count, indexBase, rowSize = 128, int(h.base6)-1, int(h.count6), int(h.index6)-1, 16+4*(int(h.columns)-1)
	}
	data := d.data
	readFrom := func(r int) (u128, bool) {
		off := base + r*rowSize
		if r < 0 || off < 0 || off+width/8 > len(data) {
			return u128{}, false
		}
		if width == 32 {
			return u128{0, uint64(binary.LittleEndian.Uint32(data[off:]))}, true
		}
		// IPv6 ip_from is a little-endian 128-bit number.
		return u128{binary.LittleEndian.Uint64(data[off+8:]), binary.LittleEndian.Uint64(data[off:])}, true
	}
	low, high := 0, count
	if width == 32 && d.fine4 != nil {
		b := ip.lo >> fineShift4
		low, high = int(d.fine4[b]), int(d.fine4[b+1])
	} else if indexBase >= 0 {
		top := ip.lo >> 16
		if width == 128 {
			top = ip.hi >> 48
		}
		off := indexBase + int(top)*8
		if off+8 > len(data) {
			return row{}
		}
		low, high = int(binary.LittleEndian.Uint32(data[off:])), int(binary.LittleEndian.Uint32(data[off+4:]))
	}
	// The last address is searched as the one before it, as ip2location-go does (the
	// sentinel row starts at the maximum).
	search := ip
	if max := lowMask(width); search == max {
		if search.lo == 0 {
			search.hi--
		}
		search.lo--
	}
	for low <= high {
		mid := (low + high) / 2
		from, ok1 := readFrom(mid)
		to, ok2 := readFrom(mid + 1)
		if !ok1 || !ok2 {
			return row{}
		}
		switch {
		case search.less(from):
			high = mid - 1
		case !search.less(to):
			low = mid + 1
		default:
			// The row covers [from, to-1] (to is the next row's start; the sentinel row's
			// start is the maximum address, which the last row includes).
			last := to
			if !(mid+1 == count-1 && to == lowMask(width)) {
				if last.lo == 0 {
					last.hi--
				}
				last.lo--
			}
			cellsAt := base + mid*rowSize + width/8
			if cellsAt+rowSize-width/8 > len(data) {
				return row{}
			}
			return row{cells: data[cellsAt : cellsAt+rowSize-width/8], ip: ip, from: from, last: last, width: width, valid: true}
		}
	}
	return row{}
}

// network returns the largest CIDR block that holds addr and lies inside the BIN row (an
// arbitrary from-to range) that answers for addr: "8.8.8.0/24" for a row 8.8.8.0-8.8.8.255.
// Invalid where rowFor finds no row. The caller holds libMu.
//
// A 6to4 or Teredo address is answered from the IPv4 row of the IPv4 address it carries
// (ip2location-go's rule, and the only data a BIN has for it), so its network is the IPv6
// block of every address that carries an IPv4 address of that row's block: 6to4 holds the
// IPv4 address in bits 16-47, so a /n IPv4 block is 2002::/16 plus n bits, /(16+n); Teredo
// holds it inverted in the last 32 bits (the server and port before them are the
// address's own), so the block is the address's first 96 bits plus n, /(96+n).
func (d *DB) network(addr netip.Addr) netip.Prefix {
	if v4, offset, ok := lookup.TunnelledIPv4(addr); ok {
		p := d.rowNetwork(v4, d.rowFor(v4))
		if !p.IsValid() {
			return netip.Prefix{}
		}
		np, err := addr.Prefix(offset + p.Bits())
		if err != nil {
			return netip.Prefix{}
		}
		return np
	}
	return d.rowNetwork(addr, d.rowFor(addr))
}

func (d *DB) rowNetwork(addr netip.Addr, r row) netip.Prefix {
	if !r.valid {
		return netip.Prefix{}
	}
	return largestBlock(addr, r.ip, r.from, r.last, r.width)
}

// largestBlock is the shortest prefix of addr whose block lies within [from, last].
func largestBlock(addr netip.Addr, ip, from, last u128, width int) netip.Prefix {
	for ones := 0; ones <= width; ones++ {
		host := lowMask(width - ones)
		first := u128{ip.hi &^ host.hi, ip.lo &^ host.lo}
		end := u128{first.hi | host.hi, first.lo | host.lo}
		if !first.less(from) && !last.less(end) {
			p, err := addr.Prefix(ones)
			if err != nil {
				return netip.Prefix{}
			}
			return p
		}
	}
	return netip.Prefix{}
}

// fineShift4 sets the blocks of the IPv4 index built at load (fine4): /20 blocks, 2^20 of
// them. The file's own index has /16 blocks, which on the full DB-IP data hold 56 rows on
// average and thousands in dense blocks, so a lookup then probes 6 or more rows scattered
// over 160 MB, each a cache miss; a /20 block holds 3.5 rows on average, one or two probes
// in adjacent memory, for a 4 MiB index (BenchmarkAnswerJSON/random, docs/benchmarks.md).
const fineShift4 = 12

// buildFine4 returns the IPv4 index of a file held in memory: entry b is the row holding
// the first address of /20 block b, entry 2^20 the last range's row, so the rows from
// entry b to entry b+1 hold every address of block b. Nil when the file has no IPv4 rows
// beyond the sentinel. It walks the rows once (verify has checked their order).
func buildFine4(data []byte, h header) []uint32 {
	count := int(h.count4)
	if count < 2 {
		return nil
	}
	base, rowSize := int(h.base4)-1, 4*int(h.columns)
	from := func(r int) uint64 { return uint64(binary.LittleEndian.Uint32(data[base+r*rowSize:])) }
	const blocks = 1 << (32 - fineShift4)
	idx := make([]uint32, blocks+1)
	r := 0 // the row holding the current block's first address; rows count-1 is the sentinel
	for b := range blocks {
		start := uint64(b) << fineShift4
		for r+1 < count-1 && from(r+1) <= start {
			r++
		}
		idx[b] = uint32(r)
	}
	idx[blocks] = uint32(count - 2)
	return idx
}
