package mmdb

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"net/netip"
	"sync"

	"github.com/oschwald/maxminddb-golang/v2"

	"github.com/apistack/platform/services/geoip/internal/lookup"
	"github.com/apistack/platform/services/geoip/internal/offheap"
)

// ErrClosed is returned by lookups on a closed database.
var ErrClosed = errors.New("mmdb database closed")

// File is a MaxMind DB file held in memory, shared by the city (DB) and ASN readers. Its
// lock is held shared by lookups and exclusively by Close, which unmaps the memory
// LoadFile read the file into: no lookup may read it after.
type File struct {
	r       *maxminddb.Reader
	raw     []byte // the whole file
	data    []byte // its data section, which Result.Offset indexes
	info    lookup.Info
	what    string // "mmdb", "asn database": names the file in errors
	mu      sync.RWMutex
	closed  bool
	release func() error
}

// LoadFile reads the whole file into memory outside the Go heap (offheap.Read: the
// collector neither scans nor counts it, so a busy server does not grow toward twice the
// file) and opens it with OpenFile.
func LoadFile(path, what string, check func(*maxminddb.Reader) error) (*File, error) {
	data, release, err := offheap.Read(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	f, err := OpenFile(data, path, what, check)
	if err != nil {
		_ = release()
		return nil, err
	}
	f.release = release
	return f, nil
}

// OpenFile opens a MaxMind DB held in memory (data must not be modified afterwards);
// check, when set, looks at the reader and refuses a layout the caller cannot read.
func OpenFile(data []byte, source, what string, check func(*maxminddb.Reader) error) (*File, error) {
	r, err := maxminddb.OpenBytes(data)
	if err != nil {
		return nil, fmt.Errorf("open %s %s: %w", what, source, err)
	}
	if check != nil {
		if err := check(r); err != nil {
			r.Close()
			return nil, fmt.Errorf("open %s %s: %w", what, source, err)
		}
	}
	return &File{r: r, what: what, raw: data, data: dataSection(data, r.Metadata), info: lookup.Info{
		Format:    "mmdb",
		Type:      r.Metadata.DatabaseType,
		BuildDate: r.Metadata.BuildTime().UTC(),
		Records:   int(r.Metadata.NodeCount),
		Source:    source,
		Size:      int64(len(data)),
		Checksum:  fmt.Sprintf("%08x", crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))),
	}}, nil
}

// Reader exposes the underlying reader; the converter walks its networks.
func (f *File) Reader() *maxminddb.Reader { return f.r }

// Info describes the file.
func (f *File) Info() lookup.Info { return f.info }

// Close releases the reader and the memory LoadFile mapped; it waits for lookups in
// flight, and later ones fail with ErrClosed.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	err := f.r.Close()
	if f.release != nil {
		if rerr := f.release(); err == nil {
			err = rerr
		}
	}
	return err
}

// Lookup finds addr's record and maps it with decode, under the read lock; an address
// the file does not cover (or an IPv6 address in an IPv4-only file) is an empty Record.
// The Record's Network is the record's network.
func (f *File) Lookup(addr netip.Addr, decode func(maxminddb.Result) (lookup.Record, error)) (lookup.Record, error) {
	if !addr.IsValid() {
		return lookup.Record{}, lookup.ErrInvalidAddress
	}
	addr = addr.Unmap()
	if addr.Is6() && f.r.Metadata.IPVersion == 4 {
		return lookup.Record{}, nil
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return lookup.Record{}, ErrClosed
	}
	res := f.r.Lookup(addr)
	if err := res.Err(); err != nil {
		return lookup.Record{}, fmt.Errorf("%s lookup %s: %w", f.what, addr, err)
	}
	if !res.Found() {
		return lookup.Record{}, nil
	}
	rec, err := decode(res)
	if err != nil {
		return lookup.Record{}, fmt.Errorf("%s lookup %s: %w", f.what, addr, err)
	}
	rec.Network = res.Prefix()
	return rec, nil
}

// dataSection is the part of data after the search tree and its 16-byte separator, up to
// the metadata marker (as maxminddb.OpenBytes, which has checked these bounds, finds it);
// nil if it cannot be found, which leaves lookups to the library's decoder.
func dataSection(data []byte, md maxminddb.Metadata) []byte {
	end := bytes.LastIndex(data, metadataMarker)
	start := md.NodeCount*(md.RecordSize/4) + 16
	if end < 0 || start > uint(end) {
		return nil
	}
	return data[start:end:end]
}

// metadataMarker starts the metadata section at the end of every MaxMind DB file.
var metadataMarker = []byte("\xab\xcd\xefMaxMind.com")
