package mmdb

import (
	"encoding/binary"
	"unsafe"

	"github.com/oschwald/maxminddb-golang/v2"

	"github.com/apistack/platform/services/geoip/internal/offheap"
)

// index4 finds IPv4 addresses in the search tree without walking its first levels: the
// node at depth index4Bits below the IPv4 root for each block of that size, so a lookup
// reads at most 32-index4Bits nodes. The library walks the tree from the IPv4 root, one
// node a bit; on DB-IP's IPv4 city file (6.3 million nodes, 44 MB) the nodes of the first
// levels are spread over far more memory than the CPU caches hold, and the walk was the
// largest cost of an answer from the location fragments (BenchmarkAnswerFullData). The
// BIN reader's /20 index (ip2bin's fine4) is the same idea.
type index4 struct {
	// nodes[b] is the node at depth index4Bits on the path of block b, or the terminal
	// node (nodeCount: no data; more: a data pointer) the path reached first, at depth
	// depth[b].
	nodes []uint32
	depth []uint8

	tree       []byte // the search tree
	nodeCount  uint
	recordSize uint
	release    []func() error // frees nodes and depth (off the Go heap)
}

// index4Bits: /20 blocks, 2^20 of them; 5 MiB, outside the Go heap. DB-IP's networks are mostly /24 or
// longer, so a lookup then reads four or five nodes, near each other.
const index4Bits = 20

// newIndex4 builds the index of the IPv4 part of r's tree (held in data); nil when the
// tree has no IPv4 root to start from (an IPv6 file whose ::/96 is one network) or a
// record size the index does not read: the library then walks the tree.
func newIndex4(r *maxminddb.Reader, data []byte) *index4 {
	md := r.Metadata
	x := &index4{nodeCount: md.NodeCount, recordSize: md.RecordSize}
	switch md.RecordSize {
	case 24, 28, 32:
	default:
		return nil
	}
	size := md.NodeCount * md.RecordSize / 4
	if size > uint(len(data)) || md.NodeCount == 0 || md.NodeCount >= 1<<32 {
		return nil
	}
	x.tree = data[:size:size]
	root := uint(0)
	if md.IPVersion == 6 {
		for range 96 {
			if root >= x.nodeCount {
				return nil
			}
			root = x.child(root, 0)
		}
	}
	if root >= x.nodeCount {
		return nil
	}
	var r1, r2 func() error
	x.nodes, r1 = offHeap[uint32](1 << index4Bits)
	x.depth, r2 = offHeap[uint8](1 << index4Bits)
	x.release = []func() error{r1, r2}
	x.fill(root, 0, 0)
	return x
}

// fill sets the entries of the blocks under node, at depth on the path of prefix (its
// depth leading bits).
func (x *index4) fill(node uint, depth int, prefix uint32) {
	if node >= x.nodeCount || depth == index4Bits {
		first := prefix << (index4Bits - depth)
		n := uint32(1) << (index4Bits - depth)
		for b := first; b < first+n; b++ {
			x.nodes[b], x.depth[b] = uint32(node), uint8(depth)
		}
		return
	}
	x.fill(x.child(node, 0), depth+1, prefix<<1)
	x.fill(x.child(node, 1), depth+1, prefix<<1|1)
}

// child is the record of node for bit (0 left, 1 right).
func (x *index4) child(node, bit uint) uint { return treeRecord(x.tree, x.recordSize, node, bit) }

// treeRecord reads the record of node for bit in tree, whose records are size bits (24,
// 28 or 32).
func treeRecord(t []byte, size, node, bit uint) uint {
	switch size {
	case 24:
		o := node*6 + bit*3
		return uint(t[o])<<16 | uint(t[o+1])<<8 | uint(t[o+2])
	case 28:
		o := node*7 + bit*3
		w := uint(binary.BigEndian.Uint32(t[o : o+4]))
		if bit == 0 {
			return w>>8 | w&0xf0<<20
		}
		return w & 0x0fffffff
	default:
		o := node*8 + bit*4
		return uint(binary.BigEndian.Uint32(t[o : o+4]))
	}
}

// find walks ip's path: the node it ends on (nodeCount: no data; more: a data pointer;
// less: a corrupt tree) and the depth below the IPv4 root, the length of the network.
func (x *index4) find(ip uint32) (node uint, depth int) {
	b := ip >> (32 - index4Bits)
	node, depth = uint(x.nodes[b]), int(x.depth[b])
	bits := ip << depth
	for depth < 32 && node < x.nodeCount {
		node = x.child(node, uint(bits>>31))
		bits <<= 1
		depth++
	}
	return node, depth
}

// offHeap returns n zeroed values outside the Go heap (offheap.Alloc), with the function
// that frees them, or on the heap where mapping fails. The index and the zone table are
// read-only tables of 5 and 2.5 MB: on the heap they counted as live data, and at the
// service's GOGC (config.DefaultGCPercent) each live megabyte lets the heap grow by two or
// more before a collection.
func offHeap[T uint8 | uint16 | uint32](n int) ([]T, func() error) {
	var zero T
	if n == 0 {
		return nil, func() error { return nil }
	}
	data, release, err := offheap.Alloc(n * int(unsafe.Sizeof(zero)))
	if err != nil {
		return make([]T, n), func() error { return nil }
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(data))), n), release
}
