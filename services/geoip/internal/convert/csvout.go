package convert

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"math/big"
	"net/netip"
	"strconv"

	"github.com/apistack/platform/services/geoip/internal/binwriter"
)

// writeCSV writes what was converted as an IP2Location DB11 CSV, the ten columns
// ip_from, ip_to, country_code, country_name, region, city, latitude, longitude, zip_code,
// time_zone: IPv4 rows with 32-bit numbers, then IPv6 rows with 128-bit numbers (one file
// holds both; an IPv6 range below 2^32, which no public network is, is refused as it would
// read back as IPv4). Empty fields are "-", as in IP2Location's files; coordinates are
// written as the float32 the BIN holds, so reading the file back (addCSV) gives the same
// locations in the same order and the same BIN. Its Stats count the ranges written
// (without the gap rows a BIN adds) and have no date: a CSV records none.
func (c *converter) writeCSV(w io.Writer) (Stats, error) {
	var st Stats
	cnt := &countingWriter{w: w}
	bw := bufio.NewWriter(cnt)
	cw := csv.NewWriter(bw)
	if err := cw.Write([]string{"ip_from", "ip_to", "country_code", "country_name", "region", "city", "latitude", "longitude", "zip_code", "time_zone"}); err != nil {
		return st, err
	}
	locs := map[binwriter.Location]bool{}
	err := c.b.Ranges(func(from, to netip.Addr, loc binwriter.Location) error {
		if from.Is6() && to.Compare(netip.AddrFrom16([16]byte{12: 0xff, 13: 0xff, 14: 0xff, 15: 0xff})) <= 0 {
			return fmt.Errorf("IPv6 range %s-%s would read back as IPv4", from, to)
		}
		if from.Is4() {
			st.Rows4++
		} else {
			st.Rows6++
		}
		locs[loc] = true
		return cw.Write([]string{decimal(from), decimal(to), dash(loc.Country), dash(loc.CountryName),
			dash(loc.Region), dash(loc.City), coord(loc.Latitude), coord(loc.Longitude), dash(loc.Postal), dash(loc.TimeZone)})
	})
	if err != nil {
		return st, err
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return st, err
	}
	err = bw.Flush()
	st.Locations, st.Bytes = len(locs), cnt.n
	return st, err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func decimal(a netip.Addr) string {
	if a.Is4() {
		b := a.As4()
		return strconv.FormatUint(uint64(b[0])<<24|uint64(b[1])<<16|uint64(b[2])<<8|uint64(b[3]), 10)
	}
	b := a.As16()
	return new(big.Int).SetBytes(b[:]).String()
}

func coord(f float32) string { return strconv.FormatFloat(float64(f), 'g', -1, 32) }

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
