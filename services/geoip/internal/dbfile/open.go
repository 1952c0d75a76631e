// Package dbfile manages the life of the database the service answers from: opening a file
// by its format, verifying it, swapping it in atomically on SIGHUP, on file change or on
// request, and reporting what is loaded as Prometheus metrics.
package dbfile

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/apistack/platform/services/geoip/internal/ip2bin"
	"github.com/apistack/platform/services/geoip/internal/lookup"
	"github.com/apistack/platform/services/geoip/internal/mmdb"
	"github.com/apistack/platform/services/geoip/internal/tz"
)

// Open loads a database file into memory: ".bin" as IP2Location BIN, ".mmdb" as MaxMind
// DB, anything else by looking at the content.
func Open(path string) (lookup.DB, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".bin":
		return ip2bin.Load(path)
	case ".mmdb":
		return withZones(mmdb.Load(path))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read database: %w", err)
	}
	return OpenBytes(data, path)
}

// withZones names the time zones of an MMDB's records once (mmdb.DB.NameZones) with
// polygons loaded for that and freed after: DB-IP's files name none, and the service kept
// the polygons (about 100 MB of heap) for the life of the process to name them at each
// lookup. The freed memory goes back to the system at once (the heap would otherwise stay
// that large until the scavenger returns it).
func withZones(db *mmdb.DB, err error) (lookup.DB, error) {
	if err != nil {
		return nil, err
	}
	if err := db.NameZones(tz.Namer); err != nil {
		return db, nil // the lookups' time zones name them, as before
	}
	if db.Info().ZoneNames {
		debug.FreeOSMemory()
	}
	return db, nil
}

// mmdbMarker starts the metadata section at the end of every MaxMind DB file.
var mmdbMarker = []byte("\xab\xcd\xefMaxMind.com")

// OpenBytes opens a database held in memory, recognising the format by content.
func OpenBytes(data []byte, source string) (lookup.DB, error) {
	tail := data
	if len(tail) > 128<<10 {
		tail = tail[len(tail)-128<<10:]
	}
	if bytes.Contains(tail, mmdbMarker) {
		return withZones(mmdb.OpenBytes(data, source))
	}
	return ip2bin.OpenBytes(data, source)
}

// probeAddrs are looked up in every new database before it serves: a file that opens but
// cannot answer these is refused.
var probeAddrs = []netip.Addr{
	netip.MustParseAddr("8.8.8.8"),
	netip.MustParseAddr("1.1.1.1"),
	netip.MustParseAddr("0.0.0.0"),
	netip.MustParseAddr("255.255.255.255"),
	netip.MustParseAddr("2001:4860:4860::8888"),
	netip.MustParseAddr("::1"),
	netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
}

// Verify checks that db answers lookups without error. (A BIN has been walked whole when
// it opened: see ip2bin.CorruptError.)
func Verify(db lookup.DB) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &verifyError{fmt.Errorf("lookup panicked: %v", p)}
		}
	}()
	info := db.Info()
	if info.Records <= 0 {
		return &verifyError{errors.New("no records")}
	}
	for _, a := range probeAddrs {
		if _, err := db.Lookup(a); err != nil {
			return &verifyError{err}
		}
	}
	return nil
}

// verifyError is a database that opened but failed the probe lookups.
type verifyError struct{ err error }

func (e *verifyError) Error() string { return "verify database: " + e.err.Error() }
func (e *verifyError) Unwrap() error { return e.err }
