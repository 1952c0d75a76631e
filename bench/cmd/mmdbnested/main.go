// Command mmdbnested rewrites a flat city MMDB (ip-location-db's DB-IP packages:
// country_code, state1, city, postcode, latitude, longitude at the top of each record)
// in the GeoIP2 City layout DB-IP's own Lite download has (city.names.en, country.iso_code,
// location.latitude, ...; database_type DBIP-City-Lite), so that readers built for GeoIP2
// files, such as echoip, answer from the same networks and values as geoip does from the
// flat file (bench/scripts/geoip-peers.sh).
//
//	mmdbnested -o OUT.mmdb IN.mmdb
//
// The search tree is copied as it is; each distinct record is encoded once in the new
// layout and the tree's pointers are moved to it. The metadata is the input's, with the
// new database_type.
package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"

	"github.com/oschwald/maxminddb-golang/v2"
)

type flat struct {
	CountryCode string  `maxminddb:"country_code"`
	State1      string  `maxminddb:"state1"`
	City        string  `maxminddb:"city"`
	Postcode    string  `maxminddb:"postcode"`
	Latitude    float64 `maxminddb:"latitude"`
	Longitude   float64 `maxminddb:"longitude"`
	Timezone    string  `maxminddb:"timezone"`
}

var marker = []byte("\xab\xcd\xefMaxMind.com")

func main() {
	out := flag.String("o", "", "output MMDB (required)")
	flag.Parse()
	if *out == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: mmdbnested -o OUT.mmdb IN.mmdb")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *out); err != nil {
		fmt.Fprintln(os.Stderr, "mmdbnested:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	buf, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	r, err := maxminddb.OpenBytes(buf)
	if err != nil {
		return err
	}
	md := r.Metadata
	if md.RecordSize != 24 && md.RecordSize != 28 && md.RecordSize != 32 {
		return fmt.Errorf("record size %d", md.RecordSize)
	}
	n := md.NodeCount
	treeSize := n * md.RecordSize / 4
	tree := bytes.Clone(buf[:treeSize])
	newOff := make(map[uint]uint)
	var data []byte
	for node := range n {
		for bit := range uint(2) {
			v := record(tree, md.RecordSize, node, bit)
			if v <= n {
				continue // a node, or no data
			}
			old := v - n - 16
			off, ok := newOff[old]
			if !ok {
				var f flat
				if err := r.LookupOffset(uintptr(old)).Decode(&f); err != nil {
					return fmt.Errorf("record at %d: %w", old, err)
				}
				off = uint(len(data))
				data = appendNested(data, &f)
				newOff[old] = off
			}
			if err := setRecord(tree, md.RecordSize, node, bit, off+n+16); err != nil {
				return err
			}
		}
	}
	meta := bytes.LastIndex(buf, marker)
	if meta < 0 {
		return errors.New("no metadata")
	}
	var w bytes.Buffer
	w.Write(tree)
	w.Write(make([]byte, 16))
	w.Write(data)
	w.Write(marker)
	w.Write(appendMetadata(nil, md))
	if err := os.WriteFile(out, w.Bytes(), 0o644); err != nil {
		return err
	}
	// The result must open, as a GeoIP2 reader opens it.
	check, err := maxminddb.OpenBytes(w.Bytes())
	if err != nil {
		return fmt.Errorf("the output does not open: %w", err)
	}
	fmt.Printf("wrote %s: %d nodes, %d records, %d bytes, database_type %s\n", out, n, len(newOff), w.Len(), check.Metadata.DatabaseType)
	return nil
}

// record reads the record of node for bit (0 left, 1 right).
func record(t []byte, size, node, bit uint) uint {
	switch size {
	case 24:
		o := node*6 + bit*3
		return uint(t[o])<<16 | uint(t[o+1])<<8 | uint(t[o+2])
	case 28:
		o := node * 7
		if bit == 0 {
			return uint(t[o+3]&0xf0)<<20 | uint(t[o])<<16 | uint(t[o+1])<<8 | uint(t[o+2])
		}
		return uint(t[o+3]&0x0f)<<24 | uint(t[o+4])<<16 | uint(t[o+5])<<8 | uint(t[o+6])
	default:
		o := node*8 + bit*4
		return uint(binary.BigEndian.Uint32(t[o:]))
	}
}

func setRecord(t []byte, size, node, bit, v uint) error {
	if v >= 1<<size {
		return fmt.Errorf("pointer %d does not fit a %d-bit record", v, size)
	}
	switch size {
	case 24:
		o := node*6 + bit*3
		t[o], t[o+1], t[o+2] = byte(v>>16), byte(v>>8), byte(v)
	case 28:
		o := node * 7
		if bit == 0 {
			t[o], t[o+1], t[o+2] = byte(v>>16), byte(v>>8), byte(v)
			t[o+3] = t[o+3]&0x0f | byte(v>>20)&0xf0
		} else {
			t[o+3] = t[o+3]&0xf0 | byte(v>>24)&0x0f
			t[o+4], t[o+5], t[o+6] = byte(v>>16), byte(v>>8), byte(v)
		}
	default:
		binary.BigEndian.PutUint32(t[node*8+bit*4:], uint32(v))
	}
	return nil
}

// appendNested encodes f in the GeoIP2 City layout, leaving out what is empty.
func appendNested(b []byte, f *flat) []byte {
	// names appends {"names": {"en": s}}.
	names := func(b []byte, s string) []byte {
		b = str(ctrl(b, 7, 1), "names")
		return str(str(ctrl(b, 7, 1), "en"), s)
	}
	type kv struct {
		k string
		v func([]byte) []byte
	}
	var fields []kv
	if f.City != "" {
		fields = append(fields, kv{"city", func(b []byte) []byte { return names(b, f.City) }})
	}
	if f.CountryCode != "" {
		fields = append(fields, kv{"country", func(b []byte) []byte {
			b = str(str(ctrl(b, 7, 2), "iso_code"), f.CountryCode)
			b = str(ctrl(str(b, "names"), 7, 1), "en")
			return str(b, f.CountryCode)
		}})
	}
	fields = append(fields, kv{"location", func(b []byte) []byte {
		m := 2
		if f.Timezone != "" {
			m = 3
		}
		b = ctrl(b, 7, m)
		b = double(str(b, "latitude"), f.Latitude)
		b = double(str(b, "longitude"), f.Longitude)
		if f.Timezone != "" {
			b = str(str(b, "time_zone"), f.Timezone)
		}
		return b
	}})
	if f.Postcode != "" {
		fields = append(fields, kv{"postal", func(b []byte) []byte {
			return str(str(ctrl(b, 7, 1), "code"), f.Postcode)
		}})
	}
	if f.State1 != "" {
		fields = append(fields, kv{"subdivisions", func(b []byte) []byte {
			b = append(b, 0x01, 11-7) // array of one
			return names(b, f.State1)
		}})
	}
	sort.Slice(fields, func(i, j int) bool { return fields[i].k < fields[j].k })
	b = ctrl(b, 7, len(fields))
	for _, kv := range fields {
		b = kv.v(str(b, kv.k))
	}
	return b
}

// ctrl appends the control byte(s) of a value of type typ (1-7) and size n.
func ctrl(b []byte, typ, n int) []byte {
	switch {
	case n < 29:
		return append(b, byte(typ<<5|n))
	case n < 285:
		return append(b, byte(typ<<5|29), byte(n-29))
	case n < 65821:
		n -= 285
		return append(b, byte(typ<<5|30), byte(n>>8), byte(n))
	}
	n -= 65821
	return append(b, byte(typ<<5|31), byte(n>>16), byte(n>>8), byte(n))
}

func str(b []byte, s string) []byte { return append(ctrl(b, 2, len(s)), s...) }

func double(b []byte, v float64) []byte {
	return binary.BigEndian.AppendUint64(append(b, 3<<5|8), math.Float64bits(v))
}

func uint16v(b []byte, v uint16) []byte {
	if v == 0 {
		return append(b, 5<<5)
	}
	if v < 256 {
		return append(b, 5<<5|1, byte(v))
	}
	return append(b, 5<<5|2, byte(v>>8), byte(v))
}

func uint32v(b []byte, v uint32) []byte {
	return binary.BigEndian.AppendUint32(append(b, 6<<5|4), v)
}

func uint64v(b []byte, v uint64) []byte {
	return binary.BigEndian.AppendUint64(append(b, 8, 9-7), v) // extended type 9, size 8
}

// appendMetadata encodes md with DB-IP's GeoIP2-compatible database_type.
func appendMetadata(b []byte, md maxminddb.Metadata) []byte {
	b = ctrl(b, 7, 9)
	b = uint16v(str(b, "binary_format_major_version"), uint16(md.BinaryFormatMajorVersion))
	b = uint16v(str(b, "binary_format_minor_version"), uint16(md.BinaryFormatMinorVersion))
	b = uint64v(str(b, "build_epoch"), uint64(md.BuildEpoch))
	b = str(str(b, "database_type"), "DBIP-City-Lite")
	b = ctrl(str(b, "description"), 7, 1)
	b = str(str(b, "en"), "DB-IP City Lite in the GeoIP2 City layout (bench/cmd/mmdbnested)")
	b = uint16v(str(b, "ip_version"), uint16(md.IPVersion))
	b = append(str(b, "languages"), 0x01, 11-7)
	b = str(b, "en")
	b = uint32v(str(b, "node_count"), uint32(md.NodeCount))
	return uint16v(str(b, "record_size"), uint16(md.RecordSize))
}
