package binwriter

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func mustRange(t *testing.T, b *Builder, from, to string, loc uint32) {
	t.Helper()
	if err := b.AddRange(netip.MustParseAddr(from), netip.MustParseAddr(to), loc); err != nil {
		t.Fatal(err)
	}
}

func TestRowsStartAtZeroAndCoverTheSpace(t *testing.T) {
	tests := []struct {
		name   string
		ranges [][2]string // from, to; all with location 1
		want   []string    // row starts with location: "0.0.0.0=0"
	}{
		{"empty", nil, []string{"0.0.0.0=0"}},
		{"middle", [][2]string{{"8.8.8.0", "8.8.8.255"}}, []string{"0.0.0.0=0", "8.8.8.0=1", "8.8.9.0=0"}},
		{"first and last", [][2]string{{"0.0.0.0", "0.0.0.255"}, {"255.255.255.0", "255.255.255.255"}},
			[]string{"0.0.0.0=1", "0.0.1.0=0", "255.255.255.0=1"}},
		{"adjacent same location merge", [][2]string{{"8.8.8.0", "8.8.8.127"}, {"8.8.8.128", "8.8.8.255"}},
			[]string{"0.0.0.0=0", "8.8.8.0=1", "8.8.9.0=0"}},
		{"whole space", [][2]string{{"0.0.0.0", "255.255.255.255"}}, []string{"0.0.0.0=1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBuilder()
			id := b.Intern(Location{Country: "US"})
			for _, r := range tt.ranges {
				mustRange(t, b, r[0], r[1], id)
			}
			rows, err := buildRows(b.v4, "ipv4", u128{lo: 0xFFFFFFFF})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i, f := range rows.from {
				a := netip.AddrFrom4([4]byte{byte(f.lo >> 24), byte(f.lo >> 16), byte(f.lo >> 8), byte(f.lo)})
				got = append(got, a.String()+"="+string(rune('0'+rows.loc[i])))
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("rows %v; want %v", got, tt.want)
			}
		})
	}
}

func TestOverlapsAndBadRangesAreRefused(t *testing.T) {
	b := NewBuilder()
	id := b.Intern(Location{Country: "US"})
	mustRange(t, b, "8.8.8.0", "8.8.8.255", id)
	mustRange(t, b, "8.8.8.128", "8.8.9.0", id)
	if _, err := b.Write(&bytes.Buffer{}, Options{}); err == nil {
		t.Error("overlap written")
	}
	for _, r := range [][2]string{{"8.8.8.8", "8.8.8.1"}, {"8.8.8.8", "::1"}} {
		if err := b.AddRange(netip.MustParseAddr(r[0]), netip.MustParseAddr(r[1]), id); err == nil {
			t.Errorf("%v accepted", r)
		}
	}
	if err := b.AddRange(netip.MustParseAddr("1.1.1.1"), netip.MustParseAddr("1.1.1.1"), 99); err == nil {
		t.Error("unknown location id accepted")
	}
}

// TestIndexPointsAtTheRowsOfEachBlock checks index entries against a direct search.
func TestIndexPointsAtTheRowsOfEachBlock(t *testing.T) {
	b := NewBuilder()
	id := b.Intern(Location{Country: "US"})
	other := b.Intern(Location{Country: "AU"})
	mustRange(t, b, "1.0.0.0", "1.0.0.255", id)
	mustRange(t, b, "1.0.1.0", "1.2.255.255", other)
	mustRange(t, b, "9.0.0.0", "9.0.0.0", id)
	rows, err := buildRows(b.v4, "ipv4", u128{lo: 0xFFFFFFFF})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	writeIndex(&buf, rows, 16)
	if buf.Len() != indexSize {
		t.Fatalf("index is %d bytes", buf.Len())
	}
	rowOf := func(ip uint64) uint32 {
		i := 0
		for i+1 < len(rows.from) && rows.from[i+1].lo <= ip {
			i++
		}
		return uint32(i)
	}
	for _, k := range []uint64{0, 0x100, 0x101, 0x102, 0x103, 0x900, 0x901, 0xFFFF} {
		lo := binary.LittleEndian.Uint32(buf.Bytes()[k*8:])
		hi := binary.LittleEndian.Uint32(buf.Bytes()[k*8+4:])
		if lo != rowOf(k<<16) || hi != rowOf(k<<16|0xFFFF) {
			t.Errorf("block %#x: index [%d,%d]; want [%d,%d]", k, lo, hi, rowOf(k<<16), rowOf(k<<16|0xFFFF))
		}
	}
}

func TestHeaderAndStrings(t *testing.T) {
	b := NewBuilder()
	long := strings.Repeat("é", 200) // 400 bytes: cut to 255 on a rune boundary
	id := b.Intern(Location{Country: "CH", CountryName: "Switzerland", City: long})
	mustRange(t, b, "8.8.8.0", "8.8.8.255", id)
	mustRange(t, b, "2001:db8::", "2001:db8::ffff", id)
	var buf bytes.Buffer
	st, err := b.Write(&buf, Options{Date: time.Date(2026, 6, 5, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	h := buf.Bytes()
	if h[0] != 11 || h[1] != 8 || h[2] != 26 || h[3] != 6 || h[4] != 5 || h[29] != 1 {
		t.Errorf("header % x", h[:35])
	}
	le := binary.LittleEndian
	if le.Uint32(h[5:]) != uint32(st.Rows4+1) || le.Uint32(h[13:]) != uint32(st.Rows6+1) {
		t.Error("row counts must include the sentinel")
	}
	if le.Uint32(h[31:]) != uint32(buf.Len()) || int64(buf.Len()) != st.Bytes {
		t.Error("file size field")
	}
	if le.Uint32(h[21:]) != 65 || le.Uint32(h[25:]) != 65+indexSize {
		t.Errorf("index bases %d %d", le.Uint32(h[21:]), le.Uint32(h[25:]))
	}
	if !bytes.Contains(h, []byte("\x02CH\x0bSwitzerland")) || !bytes.Contains(h, []byte("\x01- \x01-")) {
		t.Error("country pairs missing")
	}
	if cut := dash(long); len(cut) != 254 {
		t.Errorf("long string cut to %d bytes", len(cut))
	}
}
