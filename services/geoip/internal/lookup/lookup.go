// Package lookup is the domain of the IP location service: the location Record, the DB
// interface every database format implements, and the rules for addresses and field values.
package lookup

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Record is what a database knows about one address. Empty strings mean unknown; the
// coordinates mean something only when HasLocation is true.
type Record struct {
	Country     string // ISO 3166-1 alpha-2, upper case
	CountryName string // English short name
	Region      string // first-level subdivision name
	RegionCode  string // its ISO 3166-2 code without the country prefix ("CA" for US-CA)
	City        string
	Postal      string
	Latitude    float64
	Longitude   float64
	HasLocation bool
	TimeZone    string // IANA name such as America/Los_Angeles
	UTCOffset   string // offset at lookup time, DST included, such as -0700
	// Network is the CIDR block of the database's entry that holds the address (the
	// largest block inside the BIN row's range); invalid when unknown.
	Network netip.Prefix
	// ASN and Org come from the ASN database, when one is configured; 0 and "" otherwise.
	ASN uint32
	Org string
	// Extra holds the other non-empty fields a database carries (for example isp, asn,
	// state2), keyed by snake_case name. Nil for the common city databases.
	Extra map[string]string
}

// Found reports whether the database had any data for the address; gaps in the address
// space (private ranges, unallocated blocks) are answered with an empty record.
func (r Record) Found() bool {
	return r.Country != "" || r.Region != "" || r.City != "" || r.HasLocation
}

// Info describes a loaded database; it is what metrics and cache validators report.
type Info struct {
	Format    string    // "bin" or "mmdb"
	Type      string    // e.g. "IP2Location DB11" or the MMDB database_type
	BuildDate time.Time // from the file's header or metadata
	Records   int       // BIN: ranges (both sections); MMDB: search tree nodes
	Source    string    // file path, or "embedded sample"
	Size      int64     // bytes
	Checksum  string    // CRC-32C of the file content, hex
	// ZoneNames is true when every record with coordinates names its IANA time zone, so
	// that no lookup needs the time zone polygons (BINs written by geoip convert).
	ZoneNames bool
}

// Version is a short string that changes whenever different data is served; suitable as
// a strong ETag component.
func (i Info) Version() string {
	return i.Checksum
}

// DB is a location database. Implementations are safe for concurrent use.
type DB interface {
	// Lookup answers for a valid address; IPv4-mapped IPv6 addresses are answered as IPv4.
	// An address the database has no data for gives an empty Record and a nil error.
	Lookup(addr netip.Addr) (Record, error)
	Info() Info
	Close() error
}

// InPlaceDB is a DB that can answer without copying its strings out of its memory: the
// strings of a record from LookupInPlace point into the database itself (for a BIN loaded
// with ip2bin.Load, memory outside the Go heap that Close unmaps) and are valid only while
// it stays open. The caller keeps it open for as long as it reads them (dbfile.Manager.Borrow
// holds its read lock until the Lease is released) and copies what it keeps (Record.Own).
// On the answer path this saves a heap copy of every string per lookup.
type InPlaceDB interface {
	LookupInPlace(addr netip.Addr) (Record, error)
}

// LocationKey identifies the location data of a database row: the bytes of the row that
// its record is decoded from (for a DB11 BIN, the seven cells after the address: pointers
// to the country, region, city, postal code and zone strings, and the coordinates). In one
// database, rows with the same key give records equal in all but their network.
type LocationKey [28]byte

// KeyedDB is an InPlaceDB that can name the location data of an address's row without
// decoding it, so that an answer built from that data can be reused for every address of
// every row that shares it (internal/answer keeps such answers' encodings).
type KeyedDB interface {
	InPlaceDB
	// LocationKey returns the key of addr's row and that row's network; ok is false when
	// the row cannot be keyed (then LookupInPlace answers as usual). The network is the
	// record's only when the record is found (Record.Found).
	LocationKey(addr netip.Addr) (key LocationKey, network netip.Prefix, ok bool)
	// LookupKeyed is LookupInPlace that also returns the key of the row the record was
	// read from, found by the same search; keyed is false where LocationKey reports no key.
	LookupKeyed(addr netip.Addr) (rec Record, key LocationKey, keyed bool, err error)
}

// KeyedSource is a source of answers whose rows have location keys (dbfile.Manager over a
// KeyedDB, swapped in and out with reloads): the answer engine (internal/answer) then
// encodes the location data of a row once and reuses it for every address whose row
// shares it. A key means something only in the database version it was read from.
type KeyedSource interface {
	// LocationKey returns the key of addr's row and that row's network in the data
	// serving now, with its version; ok is false when that data cannot key addr.
	LocationKey(addr netip.Addr) (key LocationKey, network netip.Prefix, version string, ok bool)
	// BorrowKeyed reads addr's record in place (its strings valid until the lease is
	// released) with its row's key when it has one (keyed), and the version of the
	// data both came from.
	BorrowKeyed(addr netip.Addr) (rec Record, key LocationKey, version string, keyed bool, lease Lease, err error)
	// OffsetEnd is when (Unix nanoseconds) the UTC offset given to records of the named
	// zone at t stops holding (math.MaxInt64: never).
	OffsetEnd(zone string, t time.Time) int64
}

// Lease keeps the database a record was read from open; Release ends it, after which the
// record's strings must not be read unless they were copied (Record.Own).
type Lease interface {
	Release()
}

// Own returns rec with every string copied to the Go heap, for keeping past its Lease.
func (r Record) Own() Record {
	r.Country, r.CountryName = strings.Clone(r.Country), strings.Clone(r.CountryName)
	r.Region, r.RegionCode = strings.Clone(r.Region), strings.Clone(r.RegionCode)
	r.City, r.Postal = strings.Clone(r.City), strings.Clone(r.Postal)
	r.TimeZone, r.UTCOffset, r.Org = strings.Clone(r.TimeZone), strings.Clone(r.UTCOffset), strings.Clone(r.Org)
	if r.Extra != nil {
		extra := make(map[string]string, len(r.Extra))
		for k, v := range r.Extra {
			extra[strings.Clone(k)] = strings.Clone(v)
		}
		r.Extra = extra
	}
	return r
}

// TimeZoner fills Record.TimeZone when the database had none and Record.UTCOffset for the
// given instant. The record goes in and out by value: a pointer passed through an
// interface makes the caller's record escape, one heap allocation per lookup.
type TimeZoner interface {
	Resolve(rec Record, now time.Time) Record
}

// OffsetEnder is a TimeZoner that says how long the UTC offset it gives holds.
type OffsetEnder interface {
	// OffsetEnd returns when (Unix nanoseconds) the UTC offset Resolve gives a record of
	// the named zone at t stops holding (math.MaxInt64: never).
	OffsetEnd(zone string, t time.Time) int64
}

// ErrInvalidAddress is returned by ParseAddr for text that is not an IP address.
var ErrInvalidAddress = errors.New("invalid IP address")

// ParseAddr parses IPv4 or IPv6 text strictly: no zones (fe80::1%eth0), no surrounding
// spaces, no leading zeros in IPv4 parts. IPv4-mapped IPv6 becomes IPv4, so that readers
// and callers see one form of the same address.
func ParseAddr(s string) (netip.Addr, error) {
	addr, err := netip.ParseAddr(s)
	if err != nil || addr.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("%w: %q", ErrInvalidAddress, truncate(s, 64))
	}
	return addr.Unmap(), nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Messages ip2location-go puts in string fields instead of returning errors; none of them
// is data.
const (
	msgUnavailable = "This parameter is unavailable for selected data file. Please upgrade the data file."
	msgInvalidIP   = "Invalid IP address."
	msgMissingFile = "Invalid database file."
	msgIPv6Missing = "IPv6 address missing in IPv4 BIN."
	msgBadBIN      = "Incorrect IP2Location BIN file format. Please make sure that you are using the latest IP2Location BIN file."
)

// Clean turns the placeholders databases use for "unknown" into the empty string and
// trims stray spaces (the BIN country slot pads "-" to three bytes).
func Clean(s string) string {
	switch s {
	case "", "-", "N/A", msgUnavailable, msgInvalidIP, msgMissingFile, msgIPv6Missing, msgBadBIN:
		return ""
	}
	if s[0] == ' ' || s[len(s)-1] == ' ' {
		s = strings.TrimSpace(s)
		if s == "-" {
			return ""
		}
	}
	return s
}

// IsZoneName reports whether s looks like an IANA zone name (Area/Location or UTC) rather
// than an offset such as "-07:00".
func IsZoneName(s string) bool {
	if s == "UTC" {
		return true
	}
	i := strings.IndexByte(s, '/')
	return i > 0 && i < len(s)-1 && s[0] >= 'A' && s[0] <= 'Z'
}

// ParseOffset turns an offset as IP2Location stores it ("-07:00", "+05:45", "0") into the
// "-0700" form; ok is false for anything else.
func ParseOffset(s string) (string, bool) {
	if s == "0" || s == "00:00" || s == "+00:00" || s == "-00:00" {
		return "+0000", true
	}
	if len(s) != 6 || (s[0] != '+' && s[0] != '-') || s[3] != ':' {
		return "", false
	}
	for _, i := range []int{1, 2, 4, 5} {
		if s[i] < '0' || s[i] > '9' {
			return "", false
		}
	}
	return s[:3] + s[4:], true
}

// FormatOffset renders a UTC offset in seconds as "+0530".
func FormatOffset(seconds int) string {
	// Every zone in force today is a whole quarter hour from UTC, within -12h..+14h; their
	// texts are made once, so the per-lookup offset costs no allocation.
	if q := seconds / 900; seconds%900 == 0 && q >= minQuarter && q <= maxQuarter {
		return quarterOffsets[q-minQuarter]
	}
	return formatOffset(seconds)
}

const minQuarter, maxQuarter = -12 * 4, 14 * 4

var quarterOffsets = func() (s [maxQuarter - minQuarter + 1]string) {
	for i := range s {
		s[i] = formatOffset((minQuarter + i) * 900)
	}
	return s
}()

func formatOffset(seconds int) string {
	b := [5]byte{'+', '0', '0', '0', '0'}
	if seconds < 0 {
		b[0] = '-'
		seconds = -seconds
	}
	minutes := seconds / 60
	h, m := minutes/60%100, minutes%60
	b[1], b[2], b[3], b[4] = byte('0'+h/10), byte('0'+h%10), byte('0'+m/10), byte('0'+m%10)
	return string(b[:])
}

// WidenFloat32 widens a float32 coordinate through its shortest decimal form, so 37.422 is
// served as 37.422 and not as 37.42200088500977. The converter derives time zones from
// coordinates widened the same way, so a zone it stores is the one a reader deriving from
// the stored coordinates would find.
//
// Every BIN lookup widens two coordinates, and the text round trip costs about 1 % of the
// server's CPU, so recent results are kept in widened: a direct-mapped table of float64
// bits, which needs no key beside the value: the float32 a widened value came from is that
// value rounded back to float32 (the shortest decimal of f lies within f's rounding
// interval, and the float64 nearest it is within 1e-16 of it, nowhere near the interval's
// ends), so a slot answers for f exactly when its value rounds back to f's bits.
func WidenFloat32(f float32) float64 {
	bits := math.Float32bits(f)
	slot := &widened[(bits*0x9e3779b1)>>(32-widenBits)]
	if v := math.Float64frombits(slot.Load()); math.Float32bits(float32(v)) == bits {
		return v // an empty slot holds +0, which is +0's own widening
	}
	v := widen(f)
	if math.Float32bits(float32(v)) == bits { // always, but for NaN payloads
		slot.Store(math.Float64bits(v))
	}
	return v
}

const widenBits = 14 // 16,384 slots, 128 KB

var widened [1 << widenBits]atomic.Uint64

func widen(f float32) float64 {
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], float64(f), 'g', -1, 32)
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return float64(f)
	}
	return v
}
