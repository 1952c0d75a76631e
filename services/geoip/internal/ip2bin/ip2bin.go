// Package ip2bin reads IP2Location BIN files through ip2location-go, with the whole file in
// memory so a lookup makes no system call, and maps its records onto lookup.Record.
package ip2bin

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/ip2location/ip2location-go/v9"

	"github.com/apistack/platform/services/geoip/internal/lookup"
	"github.com/apistack/platform/services/geoip/internal/offheap"
)

// libMu guards ip2location-go's package-level variables (the IPv6 range bounds), which
// every open rewrites and every IPv6 lookup reads. Opening holds it exclusively for the
// few microseconds the 64-byte header read takes; lookups share it. It also orders Close
// (exclusive) against lookups, so no lookup reads memory Close has unmapped.
var libMu sync.RWMutex

// ErrClosed is returned by lookups on a closed DB.
var ErrClosed = errors.New("bin database closed")

// DB is an open BIN file.
type DB struct {
	db   *ip2location.DB
	info lookup.Info
	// release frees memory that Load mapped; closed (under libMu) refuses lookups after.
	release func() error
	closed  bool
	// extras is false for the location-only types (DB1, 3, 5, 9, 11), whose other fields
	// are all "unavailable": no need to look at them on every lookup.
	extras bool
	// data and hdr are the file when it is held in memory (nil for OpenFile): network.go
	// reads the matching row's range from them.
	data []byte
	hdr  header
	// fine4 is a finer IPv4 index than the file's (buildFine4), for files held in memory.
	fine4 []uint32
}

var _ lookup.DB = (*DB)(nil)

// Load reads the whole file into memory, outside the Go heap (see offheap.Read), and
// opens it.
func Load(path string) (*DB, error) {
	data, release, err := offheap.Read(path)
	if err != nil {
		return nil, fmt.Errorf("read bin: %w", err)
	}
	db, err := OpenBytes(data, path)
	if err != nil {
		_ = release()
		return nil, err
	}
	db.release = release
	return db, nil
}

// OpenBytes opens a BIN held in memory after checking it whole (see verify; a bad body is
// a *CorruptError); data must not be modified afterwards. source names it in Info.
func OpenBytes(data []byte, source string) (*DB, error) {
	h, err := parseHeader(data, int64(len(data)))
	if err == nil {
		err = verify(data, h)
	}
	if err != nil {
		return nil, fmt.Errorf("open bin %s: %w", source, err)
	}
	db, err := open(&memReader{data: data}, h, source, int64(len(data)), checksum(data))
	if err == nil {
		db.data, db.hdr, db.fine4 = data, h, buildFine4(data, h)
		db.info.ZoneNames = zoneNamesEverywhere(data, h)
	}
	return db, err
}

// OpenFile opens a BIN for reading from the file on every lookup (one pread per probe).
// It uses little memory but is several times slower than Load; benchmarks compare them.
func OpenFile(path string) (*DB, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open bin: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open bin: %w", err)
	}
	var buf [headerSize]byte
	if _, err := f.ReadAt(buf[:], 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("open bin %s: read header: %w", path, err)
	}
	h, err := parseHeader(buf[:], st.Size())
	if err == nil {
		// The whole file is checked once, read into memory for the walk only.
		var data []byte
		if data, err = os.ReadFile(path); err == nil {
			err = verify(data, h)
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open bin %s: %w", path, err)
	}
	return open(f, h, path, st.Size(), "")
}

func open(r ip2location.DBReader, h header, source string, size int64, sum string) (*DB, error) {
	libMu.Lock()
	db, err := ip2location.OpenDBWithReader(r)
	libMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("open bin %s: %w", source, err)
	}
	extras := true
	switch h.dbType {
	case 1, 3, 5, 9, 11:
		extras = false
	}
	return &DB{db: db, extras: extras, info: lookup.Info{
		Format:    "bin",
		Type:      "IP2Location DB" + strconv.Itoa(int(h.dbType)),
		BuildDate: h.date,
		Records:   h.rows(),
		Source:    source,
		Size:      size,
		Checksum:  sum,
	}}, nil
}

// Info describes the file.
func (d *DB) Info() lookup.Info { return d.info }

// Close releases the file or the memory Load mapped. Lookups after it fail with
// ErrClosed; it waits for those in flight.
func (d *DB) Close() error {
	libMu.Lock()
	defer libMu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	d.db.Close()
	if d.release != nil {
		return d.release()
	}
	return nil
}

// Lookup answers for addr. IPv4-mapped addresses are looked up as IPv4 (the library does
// the same for 6to4 and Teredo addresses, by design of the format).
func (d *DB) Lookup(addr netip.Addr) (lookup.Record, error) {
	rec, _, _, err := d.lookup(addr, false)
	return rec, err
}

// LookupInPlace is Lookup with the strings of a directly read row (a DB11 file held in
// memory) pointing into the file's memory instead of copied out of it (see
// lookup.InPlaceDB): valid until Close, which the caller must keep from happening while it
// reads them. Rows answered through ip2location-go have copied strings either way.
func (d *DB) LookupInPlace(addr netip.Addr) (lookup.Record, error) {
	rec, _, _, err := d.lookup(addr, true)
	return rec, err
}

var _ lookup.InPlaceDB = (*DB)(nil)

// LookupKeyed is LookupInPlace that also returns the location key of the row the record
// was read from (lookup.KeyedDB), in the same search; keyed is false where LocationKey
// would report no key.
func (d *DB) LookupKeyed(addr netip.Addr) (rec lookup.Record, key lookup.LocationKey, keyed bool, err error) {
	return d.lookup(addr, true)
}

func (d *DB) lookup(addr netip.Addr, inPlace bool) (rec lookup.Record, key lookup.LocationKey, keyed bool, err error) {
	if !addr.IsValid() {
		return lookup.Record{}, key, false, lookup.ErrInvalidAddress
	}
	defer func() {
		// The library trusts the file's pointers; a corrupt file must fail one lookup,
		// not the process.
		if p := recover(); p != nil {
			rec, key, keyed, err = lookup.Record{}, lookup.LocationKey{}, false, fmt.Errorf("bin lookup %s: corrupt data: %v", addr, p)
		}
	}()
	addr = addr.Unmap()
	r, network, key, keyed, err := d.getAll(addr, inPlace)
	if err != nil {
		return lookup.Record{}, lookup.LocationKey{}, false, fmt.Errorf("bin lookup %s: %w", addr, err)
	}
	rec = toRecord(&r, d.extras)
	if rec.Found() {
		rec.Network = network
	}
	return rec, key, keyed, nil
}

// getAll holds libMu through a deferred unlock, so a panic on corrupt data cannot leave it
// locked. keyed reports that the record was read from its row directly, whose location
// key is key.
func (d *DB) getAll(addr netip.Addr, inPlace bool) (r ip2location.IP2Locationrecord, network netip.Prefix, key lookup.LocationKey, keyed bool, err error) {
	libMu.RLock()
	defer libMu.RUnlock()
	if d.closed {
		return r, network, key, false, ErrClosed
	}
	if r, network, key, ok := d.lookupRow(addr, inPlace); ok {
		return r, network, key, true, nil
	}
	r, err = d.db.Get_all(addr.String())
	return r, d.network(addr), key, false, err
}

func toRecord(r *ip2location.IP2Locationrecord, extras bool) lookup.Record {
	rec := lookup.Record{
		Country:     lookup.Clean(r.Country_short),
		CountryName: lookup.Clean(r.Country_long),
		Region:      lookup.Clean(r.Region),
		City:        lookup.Clean(r.City),
		Postal:      lookup.Clean(r.Zipcode),
	}
	if tz := lookup.Clean(r.Timezone); lookup.IsZoneName(tz) {
		rec.TimeZone = tz
	} else if off, ok := lookup.ParseOffset(tz); ok {
		rec.UTCOffset = off
	}
	// Unknown rows hold 0,0; a row with a country or city but 0,0 is Null Island in
	// nobody's data, so coordinates count only alongside other data.
	if rec.Country != "" || rec.City != "" {
		rec.Latitude = lookup.WidenFloat32(r.Latitude)
		rec.Longitude = lookup.WidenFloat32(r.Longitude)
		rec.HasLocation = r.Latitude != 0 || r.Longitude != 0
	}
	if !extras {
		return rec
	}
	extra := [...]struct{ key, val string }{
		{"isp", r.Isp}, {"domain", r.Domain}, {"net_speed", r.Netspeed}, {"idd_code", r.Iddcode},
		{"area_code", r.Areacode}, {"weather_station_code", r.Weatherstationcode},
		{"weather_station_name", r.Weatherstationname}, {"mcc", r.Mcc}, {"mnc", r.Mnc},
		{"mobile_brand", r.Mobilebrand}, {"usage_type", r.Usagetype}, {"address_type", r.Addresstype},
		{"category", r.Category}, {"district", r.District}, {"asn", r.Asn}, {"as", r.As},
		{"as_domain", r.Asdomain}, {"as_usage_type", r.Asusagetype}, {"as_cidr", r.Ascidr},
	}
	for _, e := range extra {
		if v := lookup.Clean(e.val); v != "" {
			if rec.Extra == nil {
				rec.Extra = make(map[string]string)
			}
			rec.Extra[e.key] = v
		}
	}
	return rec
}

// memReader is the in-memory DBReader. ip2location-go reads 256 bytes for every string and
// accepts a short read only when the error is io.EOF, as bytes.Reader returns.
type memReader struct{ data []byte }

func (m *memReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("ip2bin: negative offset")
	}
	if off >= int64(len(m.data)) {
		return 0, io.EOF
	}
	n := copy(p, m.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Read is never called by the library; it exists to satisfy io.Reader.
func (m *memReader) Read([]byte) (int, error) { return 0, io.EOF }
func (m *memReader) Close() error             { return nil }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func checksum(data []byte) string {
	return fmt.Sprintf("%08x", crc32.Checksum(data, castagnoli))
}

const headerSize = 64

type header struct {
	dbType, columns byte
	date            time.Time
	count4, count6  uint32
	base4, base6    uint32
	index4, index6  uint32
	productCode     byte
}

func (h header) rows() int {
	n := 0
	if h.count4 > 0 {
		n += int(h.count4) - 1 // the sentinel row is not a range
	}
	if h.count6 > 0 {
		n += int(h.count6) - 1
	}
	return n
}

// parseHeader checks what ip2location-go does not: that the type is one it has tables for
// (it indexes arrays with it and would panic) and that every section lies inside the file.
func parseHeader(b []byte, size int64) (header, error) {
	if len(b) < headerSize || size < headerSize {
		return header{}, errors.New("file too short for a BIN header")
	}
	if b[0] == 'P' && b[1] == 'K' {
		return header{}, errors.New("file is a zip archive; unpack the .BIN first")
	}
	le := binary.LittleEndian
	h := header{
		dbType: b[0], columns: b[1],
		count4: le.Uint32(b[5:]), base4: le.Uint32(b[9:]),
		count6: le.Uint32(b[13:]), base6: le.Uint32(b[17:]),
		index4: le.Uint32(b[21:]), index6: le.Uint32(b[25:]),
		productCode: b[29],
	}
	if h.dbType < 1 || h.dbType > 26 {
		return header{}, fmt.Errorf("database type %d is not an IP2Location type (1-26)", h.dbType)
	}
	if h.columns < 2 || h.columns > 30 {
		return header{}, fmt.Errorf("column count %d out of range", h.columns)
	}
	month, day := time.Month(b[3]), int(b[4])
	if month < 1 || month > 12 || day < 1 || day > 31 {
		return header{}, fmt.Errorf("build date %d-%d-%d is not a date", b[2], b[3], b[4])
	}
	h.date = time.Date(2000+int(b[2]), month, day, 0, 0, 0, 0, time.UTC)
	if h.count4 < 2 {
		return header{}, errors.New("no IPv4 rows")
	}
	inFile := func(what string, base1 uint32, length int64) error {
		if base1 == 0 || int64(base1)-1+length > size {
			return corrupt("%s (%d bytes at %d) lie outside the %d-byte file (truncated?)", what, length, base1, size)
		}
		return nil
	}
	cols := int64(h.columns)
	if err := inFile("ipv4 rows", h.base4, int64(h.count4)*4*cols); err != nil {
		return header{}, err
	}
	if h.index4 > 0 {
		if err := inFile("ipv4 index", h.index4, 1<<16*8); err != nil {
			return header{}, err
		}
	}
	if h.count6 > 0 {
		if err := inFile("ipv6 rows", h.base6, int64(h.count6)*(16+4*(cols-1))); err != nil {
			return header{}, err
		}
		if h.index6 > 0 {
			if err := inFile("ipv6 index", h.index6, 1<<16*8); err != nil {
				return header{}, err
			}
		}
	}
	if h.count4 > math.MaxInt32 || h.count6 > math.MaxInt32 {
		return header{}, errors.New("row counts out of range")
	}
	return h, nil
}
