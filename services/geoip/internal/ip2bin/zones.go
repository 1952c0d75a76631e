package ip2bin

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/apistack/platform/services/geoip/internal/lookup"
)

// DB11 cells after ip_from: country, region, city, latitude, longitude, zip, time zone.
const (
	db11Lat  = 12
	db11Lon  = 16
	db11Zone = 24
)

// zoneNamesEverywhere reports whether every row of a DB11 file that has coordinates names
// its IANA time zone, as the files `geoip convert` writes do: then no lookup needs the
// time zone polygons, and the server need not load them (about 60 MB). Other types, and
// DB11 files with offsets such as "-07:00" (IP2Location's own), answer false.
func zoneNamesEverywhere(data []byte, h header) bool {
	if h.dbType != 11 || h.columns != 8 {
		return false
	}
	known := map[uint32]bool{} // zone pointer -> is a zone name
	check := func(base uint32, count uint32, fromSize int) bool {
		rowSize := fromSize + 4*(int(h.columns)-1)
		for i := 0; i+1 < int(count); i++ { // the last row is the sentinel
			off := int(base) - 1 + i*rowSize + fromSize
			if off < 0 || off+db11Zone+4 > len(data) {
				return false
			}
			row := data[off:]
			ptr := binary.LittleEndian.Uint32(row[db11Zone:])
			named, seen := known[ptr]
			if !seen {
				named = lookup.IsZoneName(lookup.Clean(readString(data, ptr)))
				known[ptr] = named
			}
			if named {
				continue
			}
			lat := math.Float32frombits(binary.LittleEndian.Uint32(row[db11Lat:]))
			lon := math.Float32frombits(binary.LittleEndian.Uint32(row[db11Lon:]))
			if lat != 0 || lon != 0 {
				return false // a located row without a zone name: the polygons are needed
			}
		}
		return true
	}
	if !check(h.base4, h.count4, 4) {
		return false
	}
	return h.count6 == 0 || check(h.base6, h.count6, 16)
}

// readString reads a length-prefixed string at a 0-based pointer; "" when out of bounds.
func readString(data []byte, ptr uint32) string {
	p := int(ptr)
	if p < 0 || p >= len(data) {
		return ""
	}
	n := int(data[p])
	if p+1+n > len(data) {
		return ""
	}
	return string(data[p+1 : p+1+n])
}

// readStringInPlace is readString without the copy: the string is data's own bytes, valid
// for as long as data is (see DB.LookupInPlace).
func readStringInPlace(data []byte, ptr uint32) string {
	p := int(ptr)
	if p < 0 || p >= len(data) {
		return ""
	}
	n := int(data[p])
	if n == 0 || p+1+n > len(data) {
		return ""
	}
	return unsafe.String(&data[p+1], n)
}
