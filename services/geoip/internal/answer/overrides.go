package answer

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"

	"github.com/apistack/platform/services/geoip/internal/lookup"
)

// Bounds of an overrides file (GEOIP_OVERRIDES): what one file can make the server hold.
const (
	// MaxOverridesSize bounds the file read, in bytes.
	MaxOverridesSize = 16 << 20
	// MaxOverrides bounds the entries of one file.
	MaxOverrides = 50_000
	// maxOverrideText bounds one string field of an entry, in bytes.
	maxOverrideText = 256
)

// notOverridable are the keys an override cannot set: they describe the lookup, not the
// place (network is the entry's own CIDR, and an overridden address is never reserved).
var notOverridable = map[string]bool{"ip": true, "network": true, "version": true, "reserved": true, "error": true, "reason": true, "country_code": true}

// Overrides is a table of local corrections: networks whose answer fields replace the
// database's, longest prefix first. Immutable once parsed; Engine.SetOverrides swaps it in.
type Overrides struct {
	v4, v6  prefixTable
	version string // a hash of the file's bytes; "" for an empty table
	n       int
}

// override is one entry: its network and the fields it sets (set's bit i: fields[i]).
type override struct {
	network netip.Prefix
	set     uint64
	loc     Location
	zone    *time.Location // when the entry names a time zone and no utc_offset
}

// prefixTable finds the longest prefix holding an address: the prefixes sorted by start
// (a shorter one first on a tie), each with the nearest prefix holding it (parent, -1
// for none). Prefixes are nested or disjoint, so the longest one holding an address is
// the last prefix starting at or before it, or one of that prefix's parents.
//
// A lookup that matches nothing must cost next to nothing: filter has a bit per slot of
// the address's first 16 (IPv4) or 32 bits (IPv6, hashed), set where some prefix may
// hold the address, and most addresses end there with one load.
type prefixTable struct {
	start  []u128
	bits   []uint8
	parent []int32
	ents   []*override
	filter []uint64 // 1<<16 bits; nil: no prefix
	all    bool     // a prefix is too short for the filter: it passes everything
}

// u128 is an address as a number: IPv4 in the high 32 bits of hi.
type u128 struct{ hi, lo uint64 }

func key(addr netip.Addr) u128 {
	if addr.Is4() {
		a := addr.As4()
		return u128{hi: uint64(binary.BigEndian.Uint32(a[:])) << 32}
	}
	a := addr.As16()
	return u128{binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])}
}

func (k u128) mask(bits int) u128 {
	switch {
	case bits <= 0:
		return u128{}
	case bits < 64:
		return u128{hi: k.hi &^ (^uint64(0) >> bits)}
	case bits < 128:
		return u128{k.hi, k.lo &^ (^uint64(0) >> (bits - 64))}
	}
	return k
}

func (k u128) less(o u128) bool { return k.hi < o.hi || k.hi == o.hi && k.lo < o.lo }

// slot is k's bit in the filter: IPv4's first 16 bits, a hash of IPv6's first 32.
func slot(k u128, v4 bool) uint32 {
	if v4 {
		return uint32(k.hi >> 48)
	}
	return uint32(((k.hi >> 32) * 0x9e3779b97f4a7c15) >> 48)
}

// filterBits is how many leading bits of the address pick its slot.
func filterBits(v4 bool) int {
	if v4 {
		return 16
	}
	return 32
}

// maxFilterSpan bounds the slots one prefix marks (1<<maxFilterSpan); a shorter prefix
// disables the filter.
const maxFilterSpan = 12

func newPrefixTable(ents []*override, v4 bool) prefixTable {
	var t prefixTable
	if len(ents) == 0 {
		return t
	}
	slices.SortFunc(ents, func(a, b *override) int {
		ka, kb := key(a.network.Addr()), key(b.network.Addr())
		switch {
		case ka.less(kb):
			return -1
		case kb.less(ka):
			return 1
		}
		return a.network.Bits() - b.network.Bits()
	})
	t.filter = make([]uint64, 1<<16/64)
	var stack []int32
	fb := filterBits(v4)
	for i, e := range ents {
		k, bits := key(e.network.Addr()), e.network.Bits()
		for len(stack) > 0 {
			p := stack[len(stack)-1]
			if k.mask(int(t.bits[p])) == t.start[p] {
				break
			}
			stack = stack[:len(stack)-1]
		}
		parent := int32(-1)
		if len(stack) > 0 {
			parent = stack[len(stack)-1]
		}
		t.start, t.bits, t.parent, t.ents = append(t.start, k), append(t.bits, uint8(bits)), append(t.parent, parent), append(t.ents, e)
		stack = append(stack, int32(i))
		switch span := fb - bits; {
		case t.all:
		case span > maxFilterSpan:
			t.all = true
		case span > 0:
			for j := uint64(0); j < 1<<span; j++ {
				s := slot(u128{hi: k.hi + j<<(64-fb)}, v4)
				t.filter[s/64] |= 1 << (s % 64)
			}
		default:
			s := slot(k, v4)
			t.filter[s/64] |= 1 << (s % 64)
		}
	}
	return t
}

// find is the entry of the longest prefix holding k, or nil.
func (t *prefixTable) find(k u128, v4 bool) *override {
	if t.filter == nil {
		return nil
	}
	if !t.all {
		if s := slot(k, v4); t.filter[s/64]&(1<<(s%64)) == 0 {
			return nil
		}
	}
	// The last prefix starting at or before k.
	i := int32(sortSearch(len(t.start), func(i int) bool { return k.less(t.start[i]) })) - 1
	for ; i >= 0; i = t.parent[i] {
		if k.mask(int(t.bits[i])) == t.start[i] {
			return t.ents[i]
		}
	}
	return nil
}

// sortSearch is sort.Search without its function value escaping.
func sortSearch(n int, f func(int) bool) int {
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if !f(m) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// Len is the number of entries.
func (o *Overrides) Len() int {
	if o == nil {
		return 0
	}
	return o.n
}

// Version identifies the table's content ("" when empty): it is part of the ETag of every
// answer while the table serves.
func (o *Overrides) Version() string {
	if o == nil {
		return ""
	}
	return o.version
}

// lookup is the override of addr (already unmapped), or nil.
func (o *Overrides) lookup(addr netip.Addr) *override {
	if o == nil || o.n == 0 {
		return nil
	}
	if addr.Is4() {
		return o.v4.find(key(addr), true)
	}
	return o.v6.find(key(addr), false)
}

// ParseOverrides reads an overrides file: a JSON array of objects, each with "network"
// (a CIDR; IPv4-mapped IPv6 forms such as ::ffff:10.0.0.0/104 mean the IPv4 network) and
// any of the answer's fields but ip, version, reserved, error, reason and country_code
// (which follows country). The file is refused whole, with the entry named, on a bad CIDR,
// a network given twice, an unknown field or a value of the wrong type.
func ParseOverrides(data []byte) (*Overrides, error) {
	if len(data) > MaxOverridesSize {
		return nil, fmt.Errorf("overrides: %d bytes, more than the %d allowed", len(data), MaxOverridesSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, errors.New(`overrides: want a JSON array of entries, [{"network": "10.0.0.0/8", ...}, ...]`)
	}
	var v4, v6 []*override
	seen := map[netip.Prefix]int{}
	for i := 0; dec.More(); i++ {
		if i >= MaxOverrides {
			return nil, fmt.Errorf("overrides: more than %d entries", MaxOverrides)
		}
		var raw map[string]json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("overrides: entry %d: %w", i, err)
		}
		ov, err := parseOverride(raw)
		if err != nil {
			return nil, fmt.Errorf("overrides: entry %d%s: %w", i, entryName(raw), err)
		}
		if j, dup := seen[ov.network]; dup {
			return nil, fmt.Errorf("overrides: entry %d (%s): the same network as entry %d", i, ov.network, j)
		}
		seen[ov.network] = i
		if ov.network.Addr().Is4() {
			v4 = append(v4, ov)
		} else {
			v6 = append(v6, ov)
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("overrides: %w", err)
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("overrides: text after the array")
	}
	o := &Overrides{v4: newPrefixTable(v4, true), v6: newPrefixTable(v6, false), n: len(v4) + len(v6)}
	if o.n > 0 {
		var sum [8]byte
		binary.BigEndian.PutUint64(sum[:], xxhash.Sum64(data))
		o.version = "o" + hex.EncodeToString(sum[:4])
	}
	return o, nil
}

// entryName is " (network)" when the entry has a readable network, for messages.
func entryName(raw map[string]json.RawMessage) string {
	var s string
	if json.Unmarshal(raw["network"], &s) == nil && s != "" {
		return " (" + Clip(s) + ")"
	}
	return ""
}

func parseOverride(raw map[string]json.RawMessage) (*override, error) {
	var cidr string
	if err := json.Unmarshal(raw["network"], &cidr); err != nil || cidr == "" {
		return nil, errors.New(`"network" must be a CIDR string`)
	}
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	if p.Addr().Zone() != "" {
		return nil, errors.New("network: a zone is not allowed")
	}
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	ov := &override{network: p.Masked()}
	for name, val := range raw {
		if name == "network" {
			continue
		}
		i := keyIndex(name)
		if i < 0 || notOverridable[name] {
			return nil, fmt.Errorf("unknown or fixed field %q", Clip(name))
		}
		f := &fields[i]
		switch f.kind {
		case 's':
			var s string
			if err := json.Unmarshal(val, &s); err != nil {
				return nil, fmt.Errorf("%s: want a string", name)
			}
			if len(s) > maxOverrideText || !utf8.ValidString(s) {
				return nil, fmt.Errorf("%s: want valid UTF-8 of at most %d bytes", name, maxOverrideText)
			}
			*(*string)(f.ptr(&ov.loc)) = s
		case 'n':
			var n float64
			if err := json.Unmarshal(val, &n); err != nil || math.IsNaN(n) {
				return nil, fmt.Errorf("%s: want a number", name)
			}
			*(*float64)(f.ptr(&ov.loc)) = n
		case 'i':
			var n int64
			if err := json.Unmarshal(val, &n); err != nil {
				return nil, fmt.Errorf("%s: want an integer", name)
			}
			*(*int64)(f.ptr(&ov.loc)) = n
		case 'b':
			var b bool
			if err := json.Unmarshal(val, &b); err != nil {
				return nil, fmt.Errorf("%s: want true or false", name)
			}
			*(*bool)(f.ptr(&ov.loc)) = b
		}
		ov.set |= 1 << i
	}
	if err := ov.check(); err != nil {
		return nil, err
	}
	return ov, nil
}

// check refuses values the answer could not carry: coordinates off the globe, a time
// zone Go does not know, an offset not in ±hhmm form.
func (ov *override) check() error {
	l := &ov.loc
	if ov.has("latitude") && (l.Latitude < -90 || l.Latitude > 90) {
		return errors.New("latitude: want -90 to 90")
	}
	if ov.has("longitude") && (l.Longitude < -180 || l.Longitude > 180) {
		return errors.New("longitude: want -180 to 180")
	}
	if ov.has("timezone") && l.Timezone != "" {
		z, err := time.LoadLocation(l.Timezone)
		if err != nil || !lookup.IsZoneName(l.Timezone) {
			return fmt.Errorf("timezone: %q is not an IANA time zone", Clip(l.Timezone))
		}
		if !ov.has("utc_offset") {
			ov.zone = z
		}
	}
	if ov.has("utc_offset") && l.UTCOffset != "" {
		if _, ok := lookup.ParseOffset(l.UTCOffset); !ok {
			return errors.New("utc_offset: want ±hhmm, such as +0100")
		}
	}
	return nil
}

func (ov *override) has(name string) bool {
	i := keyIndex(name)
	return i >= 0 && ov.set&(1<<i) != 0
}

// keyIndex is the index in fields of the key name, -1 for none.
func keyIndex(name string) int {
	for i := range fields {
		if fields[i].name == name {
			return i
		}
	}
	return -1
}

// apply makes l the answer of addr in the override's network: its fields replace l's (a
// new country brings its facts, which the entry's own fields may still replace).
func (ov *override) apply(l *Location, now time.Time) {
	l.Reserved, l.Error, l.Reason = false, false, ""
	l.Network = ov.network.String()
	l.facts = nil
	if ov.has("country") {
		l.Country, l.CountryCode = ov.loc.Country, ov.loc.Country
		if !setCountryFacts(l, ov.loc.Country) {
			l.CountryName, l.CountryCodeISO3, l.CountryCapital, l.CountryTLD, l.ContinentCode = "", "", "", "", ""
			l.InEU, l.CountryCallingCode, l.Currency, l.CurrencyName, l.Languages = false, "", "", "", ""
			l.CountryArea, l.CountryPopulation = 0, 0
		}
	}
	for i := range fields {
		if ov.set&(1<<i) == 0 {
			continue
		}
		f := &fields[i]
		switch f.kind {
		case 's':
			*(*string)(f.ptr(l)) = *(*string)(f.ptr(&ov.loc))
		case 'n':
			*(*float64)(f.ptr(l)) = *(*float64)(f.ptr(&ov.loc))
		case 'i':
			*(*int64)(f.ptr(l)) = *(*int64)(f.ptr(&ov.loc))
		case 'b':
			*(*bool)(f.ptr(l)) = *(*bool)(f.ptr(&ov.loc))
		}
	}
	l.CountryCode = l.Country
	if ov.zone != nil {
		_, secs := now.In(ov.zone).Zone()
		l.UTCOffset = lookup.FormatOffset(secs)
	}
}

// overridden is the answer of addr under ov: the source's record (none for a reserved
// address) with the override's fields over it. Its strings are the caller's.
func (e *Engine) overridden(addr netip.Addr, ov *override) (Location, error) {
	loc := Location{IP: addr.String(), Version: ipVersion(addr)}
	if !isReserved(addr) {
		rec, lease, err := e.src.Borrow(addr)
		if err != nil {
			return Location{}, fmt.Errorf("look up %s: %w", addr, err)
		}
		loc, _ = newLocation(addr, rec, nil)
		loc.own()
		lease.Release()
	}
	ov.apply(&loc, e.now())
	return loc, nil
}

// SetOverrides swaps in the table of local overrides (nil: none). Answers cached before are
// never served after (the table's version is part of theirs).
func (e *Engine) SetOverrides(o *Overrides) {
	e.over.Store(o)
	e.Purge()
}

// Overrides is the table serving now (nil: none).
func (e *Engine) Overrides() *Overrides { return e.over.Load() }

// versions is the source's version and the version of the answers: the source's, with
// the overrides' after a '+' while a table serves. The joined string is made once per
// pair, so an answer costs no allocation for it.
func (e *Engine) versions() (src, answers string) {
	src = e.src.Version()
	o := e.over.Load()
	if o.Version() == "" {
		return src, src
	}
	if j := e.joined.Load(); j != nil && j.src == src && j.over == o {
		return src, j.version
	}
	j := &joinedVersion{src: src, over: o, version: src + "+" + o.version}
	e.joined.Store(j)
	return src, j.version
}

type joinedVersion struct {
	src     string
	over    *Overrides
	version string
}
