package convert

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/apistack/platform/services/geoip/internal/binwriter"
	"github.com/apistack/platform/services/geoip/internal/lookup"
)

func (c *converter) addCSVFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil {
		c.seeDate(st.ModTime())
	}
	return c.addCSV(f)
}

// addCSV reads an IP2Location CSV (DB1, DB3, DB5, DB9 or DB11 columns; IPv4 files with
// 32-bit numbers or IPv6 files with 128-bit numbers, where IPv4 appears IPv4-mapped).
func (c *converter) addCSV(r io.Reader) error {
	cr := csv.NewReader(bufio.NewReaderSize(r, 1<<20))
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1
	ids := make(map[binwriter.Location]uint32)
	for line := 1; ; line++ {
		fields, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("csv: %w", err)
		}
		if line == 1 && len(fields) > 0 && !isDigits(fields[0]) {
			continue // a header line
		}
		row, err := ParseCSVRow(fields)
		if err != nil {
			return fmt.Errorf("csv line %d: %w", line, err)
		}
		if row.Loc == (binwriter.Location{}) {
			continue // unknown rows are what gap filling writes anyway
		}
		for _, rg := range row.Ranges {
			contains := func(a netip.Addr) bool {
				return a.Is4() == rg[0].Is4() && !a.Less(rg[0]) && !rg[1].Less(a)
			}
			if !c.keep(rg[0].Is6(), contains, row.Loc) {
				continue
			}
			id, ok := ids[row.Loc]
			if !ok {
				if id, err = c.intern(row.Loc); err != nil {
					return err
				}
				ids[row.Loc] = id
			}
			if err := c.b.AddRange(rg[0], rg[1], id); err != nil {
				return fmt.Errorf("csv line %d: %w", line, err)
			}
		}
	}
}

// CSVRow is one parsed CSV line: its location and the address ranges it covers (one, or
// two when an IPv6 range straddles the IPv4-mapped block, which the BIN keeps as IPv4).
type CSVRow struct {
	Ranges [][2]netip.Addr
	Loc    binwriter.Location
}

var (
	mappedFrom = u128{lo: 0xFFFF_0000_0000}
	mappedTo   = u128{lo: 0xFFFF_FFFF_FFFF}
)

// ParseCSVRow parses the fields of one IP2Location CSV line.
func ParseCSVRow(f []string) (CSVRow, error) {
	switch len(f) {
	case 4, 6, 8, 9, 10:
	default:
		return CSVRow{}, fmt.Errorf("%d columns; want 4, 6, 8, 9 or 10 (DB1, DB3, DB5, DB9, DB11)", len(f))
	}
	from, err := parseU128(f[0])
	if err != nil {
		return CSVRow{}, fmt.Errorf("ip_from: %w", err)
	}
	to, err := parseU128(f[1])
	if err != nil {
		return CSVRow{}, fmt.Errorf("ip_to: %w", err)
	}
	if to.less(from) {
		return CSVRow{}, errors.New("ip_to before ip_from")
	}
	var row CSVRow
	code := lookup.Clean(strings.TrimSpace(f[2]))
	if code == "UK" {
		code = "GB" // as IP2Location's own converter does
	}
	if code != "" && !isCountryCode(code) {
		return CSVRow{}, fmt.Errorf("country code %q is not two letters", code)
	}
	row.Loc.Country = strings.ToUpper(code)
	if row.Loc.Country != "" {
		row.Loc.CountryName = lookup.Clean(f[3])
	}
	if len(f) >= 6 {
		row.Loc.Region, row.Loc.City = lookup.Clean(f[4]), lookup.Clean(f[5])
	}
	if len(f) >= 8 {
		lat, err1 := strconv.ParseFloat(strings.TrimSpace(f[6]), 32)
		lon, err2 := strconv.ParseFloat(strings.TrimSpace(f[7]), 32)
		if err1 != nil || err2 != nil || lat < -90 || lat > 90 || lon < -180 || lon > 180 {
			return CSVRow{}, fmt.Errorf("coordinates %q,%q are not valid", f[6], f[7])
		}
		row.Loc.Latitude, row.Loc.Longitude = float32(lat), float32(lon)
	}
	if len(f) >= 9 {
		row.Loc.Postal = lookup.Clean(f[8])
	}
	if len(f) >= 10 {
		row.Loc.TimeZone = lookup.Clean(f[9])
	}

	switch {
	case !(u128{lo: 0xFFFF_FFFF}).less(to):
		row.Ranges = append(row.Ranges, [2]netip.Addr{from.v4(), to.v4()})
	case !from.less(mappedFrom) && !mappedTo.less(to):
		row.Ranges = append(row.Ranges, [2]netip.Addr{from.sub(mappedFrom).v4(), to.sub(mappedFrom).v4()})
	default:
		// Clip the IPv4-mapped block out: the BIN answers it from the IPv4 section.
		if from.less(mappedFrom) {
			end := to
			if !to.less(mappedFrom) {
				end = mappedFrom.dec()
			}
			row.Ranges = append(row.Ranges, [2]netip.Addr{from.v6(), end.v6()})
		}
		if mappedTo.less(to) {
			start := from
			if !mappedTo.less(from) {
				start = mappedTo.inc()
			}
			row.Ranges = append(row.Ranges, [2]netip.Addr{start.v6(), to.v6()})
		}
	}
	return row, nil
}

func isCountryCode(s string) bool {
	if len(s) != 2 {
		return false
	}
	for i := 0; i < 2; i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

type u128 struct{ hi, lo uint64 }

func (a u128) less(b u128) bool { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo) }

func (a u128) sub(b u128) u128 {
	lo, borrow := bits.Sub64(a.lo, b.lo, 0)
	hi, _ := bits.Sub64(a.hi, b.hi, borrow)
	return u128{hi, lo}
}

func (a u128) inc() u128 {
	lo, carry := bits.Add64(a.lo, 1, 0)
	return u128{a.hi + carry, lo}
}

func (a u128) dec() u128 { return a.sub(u128{lo: 1}) }

func (a u128) v4() netip.Addr {
	return netip.AddrFrom4([4]byte{byte(a.lo >> 24), byte(a.lo >> 16), byte(a.lo >> 8), byte(a.lo)})
}

func (a u128) v6() netip.Addr {
	var b [16]byte
	for i := 0; i < 8; i++ {
		b[i] = byte(a.hi >> (56 - 8*i))
		b[8+i] = byte(a.lo >> (56 - 8*i))
	}
	return netip.AddrFrom16(b)
}

// parseU128 parses a decimal number of up to 128 bits.
func parseU128(s string) (u128, error) {
	s = strings.TrimSpace(s)
	if !isDigits(s) {
		return u128{}, fmt.Errorf("%q is not a decimal number", s)
	}
	var v u128
	for i := 0; i < len(s); i++ {
		hiHi, hiLo := bits.Mul64(v.hi, 10)
		loHi, loLo := bits.Mul64(v.lo, 10)
		hi, carry := bits.Add64(hiLo, loHi, 0)
		if hiHi != 0 || carry != 0 {
			return u128{}, fmt.Errorf("%q exceeds 128 bits", s)
		}
		lo, c := bits.Add64(loLo, uint64(s[i]-'0'), 0)
		hi, c2 := bits.Add64(hi, 0, c)
		if c2 != 0 {
			return u128{}, fmt.Errorf("%q exceeds 128 bits", s)
		}
		v = u128{hi, lo}
	}
	return v, nil
}
