package ip2bin_test

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apistack/platform/services/geoip/internal/binwriter"
	"github.com/apistack/platform/services/geoip/internal/ip2bin"
)

// Issue 13, finding 5: a BIN whose header is valid and whose body is corrupt is refused
// before it serves (it used to answer some lookups with a 500, "slice bounds out of
// range", and others with garbage names).

// layout locates the parts of a fixture file as its header places them.
type layout struct {
	base4, base6, index4, index6 int // 0-based offsets
	rows4, rows6                 int // the sentinel included
	row4, row6                   int // row sizes
}

func layoutOf(data []byte) layout {
	le := binary.LittleEndian
	cols := int(data[1])
	return layout{
		rows4: int(le.Uint32(data[5:])), base4: int(le.Uint32(data[9:])) - 1,
		rows6: int(le.Uint32(data[13:])), base6: int(le.Uint32(data[17:])) - 1,
		index4: int(le.Uint32(data[21:])) - 1, index6: int(le.Uint32(data[25:])) - 1,
		row4: 4 * cols, row6: 16 + 4*(cols-1),
	}
}

// cell4 and cell6 are the offsets of a row's column (2 is the first after ip_from).
func (l layout) cell4(row, col int) int { return l.base4 + row*l.row4 + 4 + (col-2)*4 }
func (l layout) cell6(row, col int) int { return l.base6 + row*l.row6 + 16 + (col-2)*4 }

func TestVerifyRefusesCorruptBodies(t *testing.T) {
	good := fixture(t, binwriter.Options{})
	l := layoutOf(good)
	if l.index4 < 0 || l.rows6 == 0 {
		t.Fatal("the fixture should have both index tables and IPv6 rows")
	}
	put := func(data []byte, off int, v uint32) { binary.LittleEndian.PutUint32(data[off:], v) }
	size := uint32(len(good))
	block := func(a string) int { b := netip.MustParseAddr(a).As4(); return int(b[0])<<8 | int(b[1]) }
	rows := map[string]struct {
		damage func([]byte)
		reason string
	}{
		"city pointer past the end": {func(d []byte) { put(d, l.cell4(1, 4), size+1000) }, "ipv4 row 1 column 4 points at byte"},
		"string length past the end": {func(d []byte) {
			put(d, l.cell4(1, 4), size-2) // the last string's final bytes: its "length" overruns
		}, "column 4 points at byte"},
		"country name past the end": {func(d []byte) { put(d, l.cell4(2, 2), size-3) }, "ipv4 row 2 column 2"},
		"ipv6 region pointer":       {func(d []byte) { put(d, l.cell6(1, 3), 0xFFFFFFF0) }, "ipv6 row 1 column 3"},
		"rows out of order": {func(d []byte) {
			a, b := l.base4+2*l.row4, l.base4+3*l.row4
			x, y := binary.LittleEndian.Uint32(d[a:]), binary.LittleEndian.Uint32(d[b:])
			put(d, a, y)
			put(d, b, x)
		}, "before row"},
		"first row not at 0.0.0.0": {func(d []byte) { put(d, l.base4, 5) }, "ipv4 rows start at 5"},
		"sentinel not at the end":  {func(d []byte) { put(d, l.base4+(l.rows4-1)*l.row4, 0xFFFFFF00) }, "sentinel row"},
		"index row past the rows":  {func(d []byte) { put(d, l.index4+block("8.8.8.8")*8+4, uint32(l.rows4+5)) }, "index entry 2056 names rows"},
		"index low after high":     {func(d []byte) { put(d, l.index4+block("8.8.8.8")*8, 0x7FFFFFFF) }, "index entry 2056"},
		"index misses the block":   {func(d []byte) { put(d, l.index4+block("8.8.8.8")*8, 0); put(d, l.index4+block("8.8.8.8")*8+4, 0) }, "before the block's last address"},
		"index starts too late": {func(d []byte) {
			e := l.index4 + block("8.8.8.8")*8 // rows 8.8.0.0 (a gap) to 8.8.9.0
			put(d, e, binary.LittleEndian.Uint32(d[e+4:]))
		}, "index entry 2056 starts at row"},
		"ipv6 index past the rows":    {func(d []byte) { put(d, l.index6+4, uint32(l.rows6+1)) }, "ipv6 index entry 0"},
		"fewer columns than the type": {func(d []byte) { d[1] = 7 }, "type DB11 has 8 columns, the header says 7"},
	}
	for name, r := range rows {
		t.Run(name, func(t *testing.T) {
			data := append([]byte(nil), good...)
			r.damage(data)
			db, err := ip2bin.OpenBytes(data, name)
			if err == nil {
				db.Close()
				t.Fatal("a corrupt file opened")
			}
			var ce *ip2bin.CorruptError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), r.reason) {
				t.Fatalf("got %v, want a CorruptError saying %q", err, r.reason)
			}
		})
	}
	// The undamaged file opens, so each refusal above is the damage's doing.
	db, err := ip2bin.OpenBytes(good, "good")
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
}

// TestTruncatedFilesAreRefused cuts the file at every section boundary and within each.
func TestTruncatedFilesAreRefused(t *testing.T) {
	good := fixture(t, binwriter.Options{})
	l := layoutOf(good)
	dir := t.TempDir()
	for _, n := range []int{64, l.index4 + 100, l.base4 + 3, l.base6 + l.row6, len(good) - 1, len(good) - 20} {
		data := good[:n]
		if db, err := ip2bin.OpenBytes(data, "cut"); err == nil {
			db.Close()
			t.Errorf("cut at %d of %d bytes: opened", n, len(good))
		}
		path := filepath.Join(dir, "cut.BIN")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for name, open := range map[string]func(string) (*ip2bin.DB, error){"Load": ip2bin.Load, "OpenFile": ip2bin.OpenFile} {
			if db, err := open(path); err == nil {
				db.Close()
				t.Errorf("%s of a file cut at %d: opened", name, n)
			}
		}
	}
}

// TestSampleDatabasePassesTheWalk: the embedded sample (real DB-IP data through the
// converter) passes, as do fixtures without index tables.
func TestSampleAndIndexlessFilesPass(t *testing.T) {
	for name, data := range map[string][]byte{
		"no index": fixture(t, binwriter.Options{NoIndex: true}),
		"index":    fixture(t, binwriter.Options{}),
	} {
		db, err := ip2bin.OpenBytes(data, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		db.Close()
	}
}
