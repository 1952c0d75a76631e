// Package convert turns the databases people have (MaxMind-format city MMDBs such as DB-IP
// Lite or GeoLite2, and IP2Location CSV files) into an IP2Location DB11 BIN file.
package convert

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/apistack/platform/services/geoip/internal/binwriter"
	"github.com/apistack/platform/services/geoip/internal/lookup"
	"github.com/apistack/platform/services/geoip/internal/mmdb"
	"github.com/apistack/platform/services/geoip/internal/tz"
)

// Options adjust a conversion.
type Options struct {
	// Date overrides the build date written to the header; by default it is the newest
	// MMDB build date among the inputs, or the newest CSV modification time.
	Date time.Time
	// Sample keeps only a small selection of networks (see SampleAddrs) and writes no
	// index tables: the result is small enough to embed in the binary.
	Sample bool
}

// Stats describe a finished conversion.
type Stats struct {
	binwriter.Stats
	Date time.Time
}

// SampleAddrs are addresses the embedded sample must answer with real data, besides one
// network per country.
var SampleAddrs = []string{
	"8.8.8.8", "8.8.4.4", "1.1.1.1", "1.0.0.1", "9.9.9.9", "149.112.112.112",
	"208.67.222.222", "4.2.2.2", "2001:4860:4860::8888", "2001:4860:4860::8844",
	"2606:4700:4700::1111", "2620:fe::fe",
}

// Files converts the inputs (".mmdb" or ".csv", by extension) into one BIN at out, or, when
// out ends in ".csv", into one IP2Location DB11 CSV (see WriteCSV). The file is written
// beside out and renamed into place, so readers never see half a file.
func Files(out string, inputs []string, opts Options) (Stats, error) {
	if len(inputs) == 0 {
		return Stats{}, errors.New("convert: no input files")
	}
	c := newConverter(opts)
	for _, in := range inputs {
		var err error
		switch ext := strings.ToLower(filepath.Ext(in)); ext {
		case ".mmdb":
			err = c.addMMDBFile(in)
		case ".csv":
			err = c.addCSVFile(in)
		default:
			err = fmt.Errorf("unsupported input type %q (want .mmdb or .csv)", ext)
		}
		if err != nil {
			return Stats{}, fmt.Errorf("convert %s: %w", in, err)
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*.tmp")
	if err != nil {
		return Stats{}, fmt.Errorf("convert: %w", err)
	}
	defer os.Remove(tmp.Name())
	var st Stats
	if strings.EqualFold(filepath.Ext(out), ".csv") {
		st, err = c.writeCSV(tmp)
	} else {
		st, err = c.write(tmp)
	}
	if cerr := tmp.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return Stats{}, fmt.Errorf("convert: write %s: %w", out, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return Stats{}, fmt.Errorf("convert: %w", err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return Stats{}, fmt.Errorf("convert: %w", err)
	}
	return st, nil
}

type sampleKey struct {
	is6             bool
	country, region string
}

type converter struct {
	opts    Options
	b       *binwriter.Builder
	date    time.Time
	sampled map[sampleKey]bool // regions (IPv4) and countries (IPv6) already in the sample
	wanted  []netip.Addr
	// zoneAt holds the IANA zone of every coordinate pair met so far ("" for none found):
	// DB-IP Lite has 566,834 distinct locations behind 14.7 million networks, and many
	// locations share coordinates, so each polygon search runs once per coordinate pair.
	zoneAt map[[2]float32]string
	zones  *tz.Finder // loaded on the first location that needs a zone
}

// zoneFinder is shared by the conversions of one process (tests convert many times); its
// 60 MB of polygons load only when a conversion first needs them.
var zoneFinder = sync.OnceValue(tz.New)

func newConverter(opts Options) *converter {
	c := &converter{opts: opts, b: binwriter.NewBuilder(), sampled: make(map[sampleKey]bool),
		zoneAt: make(map[[2]float32]string)}
	for _, s := range SampleAddrs {
		c.wanted = append(c.wanted, netip.MustParseAddr(s))
	}
	return c
}

// intern adds loc to the builder after giving it an IANA time zone from its coordinates
// when the source has none (DB-IP Lite has no zone; IP2Location CSVs have offsets such as
// -07:00). Readers then take the zone from the file instead of searching the polygons on
// every lookup. The rule is the readers' own, so answers do not change: a zone is derived
// only for a row whose coordinates count as a location (a country or city beside
// coordinates other than 0,0), from the coordinates as readers widen them from float32.
func (c *converter) intern(loc binwriter.Location) (uint32, error) {
	if !lookup.IsZoneName(loc.TimeZone) && (loc.Country != "" || loc.City != "") &&
		(loc.Latitude != 0 || loc.Longitude != 0) {
		key := [2]float32{loc.Latitude, loc.Longitude}
		name, ok := c.zoneAt[key]
		if !ok {
			if c.zones == nil {
				z := zoneFinder()
				if err := z.Warm(); err != nil {
					return 0, err
				}
				c.zones = z
			}
			name = c.zones.Name(lookup.WidenFloat32(loc.Latitude), lookup.WidenFloat32(loc.Longitude))
			c.zoneAt[key] = name
		}
		// Open sea has no zone: the row keeps what the source had, and readers derive
		// (and find nothing) as they would have.
		if name != "" {
			loc.TimeZone = name
		}
	}
	return c.b.Intern(loc), nil
}

func (c *converter) write(w io.Writer) (Stats, error) {
	date := c.date
	if !c.opts.Date.IsZero() {
		date = c.opts.Date
	}
	if date.IsZero() {
		date = time.Now()
	}
	date = date.UTC()
	st, err := c.b.Write(w, binwriter.Options{Date: date, NoIndex: c.opts.Sample})
	return Stats{Stats: st, Date: date}, err
}

// BIN converts an IP2Location CSV read from r into a BIN file in memory. The embedded
// sample is kept as CSV (text in git, readable in review) and built by this at start.
func BIN(r io.Reader, opts Options) ([]byte, error) {
	c := newConverter(opts)
	if err := c.addCSV(r); err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	var buf bytes.Buffer
	if _, err := c.write(&buf); err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	return buf.Bytes(), nil
}

func (c *converter) seeDate(t time.Time) {
	if t.After(c.date) {
		c.date = t
	}
}

// keep decides, in sample mode, whether a network goes in: it holds a well-known address,
// or it is the first network with a city seen for its region (IPv4) or country (IPv6).
func (c *converter) keep(is6 bool, contains func(netip.Addr) bool, loc binwriter.Location) bool {
	if !c.opts.Sample {
		return true
	}
	for _, a := range c.wanted {
		if contains(a) {
			return true
		}
	}
	if loc.Country == "" || loc.City == "" {
		return false
	}
	// IPv4 keeps one network per region, IPv6 one per country: a few thousand rows that
	// make the sample useful for demos while staying far below the 2 MB budget.
	key := sampleKey{is6, loc.Country, loc.Region}
	if is6 {
		key.region = ""
	}
	if c.sampled[key] {
		return false
	}
	c.sampled[key] = true
	return true
}

func (c *converter) addMMDBFile(path string) error {
	db, err := mmdb.Load(path)
	if err != nil {
		return err
	}
	defer db.Close()
	c.seeDate(db.Info().BuildDate)
	r := db.Reader()
	// Records are shared by many networks; decode each once, keyed by its data offset.
	type entry struct {
		loc      binwriter.Location
		id       uint32
		interned bool
	}
	cache := make(map[uintptr]*entry)
	for res := range r.Networks() {
		if err := res.Err(); err != nil {
			return fmt.Errorf("walk networks: %w", err)
		}
		e := cache[res.Offset()]
		if e == nil {
			rec, err := mmdb.Decode(res, db.Schema())
			if err != nil {
				return fmt.Errorf("decode %s: %w", res.Prefix(), err)
			}
			e = &entry{loc: LocationOf(rec)}
			cache[res.Offset()] = e
		}
		// In sample mode only kept locations are interned, so the strings of the others
		// stay out of the file.
		if p := res.Prefix(); !c.keep(p.Addr().Is6(), p.Contains, e.loc) {
			continue
		}
		if !e.interned {
			if e.id, err = c.intern(e.loc); err != nil {
				return err
			}
			e.interned = true
		}
		id := e.id
		if err := c.b.AddPrefix(res.Prefix(), id); err != nil {
			return err
		}
	}
	return nil
}

// LocationOf maps a record onto the DB11 columns. Coordinates are narrowed to float32 as
// the format stores them.
func LocationOf(rec lookup.Record) binwriter.Location {
	loc := binwriter.Location{
		Country:     rec.Country,
		CountryName: rec.CountryName,
		Region:      rec.Region,
		City:        rec.City,
		Postal:      rec.Postal,
		TimeZone:    rec.TimeZone,
	}
	if loc.CountryName == "" {
		loc.CountryName = lookup.CountryName(loc.Country)
	}
	if rec.HasLocation {
		loc.Latitude, loc.Longitude = float32(rec.Latitude), float32(rec.Longitude)
	}
	return loc
}
