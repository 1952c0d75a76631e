package dbfile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apistack/platform/services/geoip/internal/filewatch"
	"github.com/apistack/platform/services/geoip/internal/lookup"
)

// Config says where the database comes from and how it is watched.
type Config struct {
	// Path is the database file to serve and watch. When empty, Fallback serves and there
	// is nothing to reload until Install names a file.
	Path string
	// Fallback opens the database used when Path is empty (the embedded sample).
	Fallback func() (lookup.DB, error)
	// Open loads a file (default Open: a city database by extension or content); the ASN
	// database's manager opens with asn.Load.
	Open func(path string) (lookup.DB, error)
	// TimeZones completes records with IANA zone and UTC offset; nil leaves them as read.
	TimeZones lookup.TimeZoner
	// PollInterval is how often the file is checked for changes; a change is loaded once
	// two checks in a row see the same new size and time, so a file still being copied is
	// not loaded half-written. Default 5s; negative disables polling.
	PollInterval time.Duration
	Logger       *slog.Logger
	// Now is the clock for UTC offsets; default time.Now.
	Now func() time.Time
	// Name is what the database is, "city" (default) or "asn": the database label of
	// geoip_database_age_seconds, which both databases share.
	Name string
	// MetricsName is the stem of the metric names, geoip_<stem>_info and so on (default
	// "database"); a second database in the process needs its own ("asn_database").
	MetricsName string
}

// Manager serves lookups from the current database and replaces it when told to or when
// the file changes. A replacement is opened and verified in the background; lookups in
// flight finish on the old database, which is closed once they have; a file that fails to
// open or verify is refused and logged while the old one keeps serving.
type Manager struct {
	cfg     Config
	log     *slog.Logger
	cur     atomic.Pointer[handle]
	metrics *Metrics

	mu     sync.Mutex // serialises loads and guards the fields below
	path   string
	loaded filewatch.Stat // of the file behind cur, when it came from path
	failed filewatch.Stat // last stat that failed to load, not retried until it changes
	subs   map[chan lookup.Info]struct{}

	syncDir func(dir string) error // after a rename into dir; tests record the order
}

// ErrClosed is returned by lookups after Close.
var ErrClosed = errors.New("database closed")

type handle struct {
	db lookup.DB
	// inPlace is db when it can lend records read in place (a BIN held in memory), for
	// Borrow; nil otherwise.
	inPlace lookup.InPlaceDB
	// keyed is db when its rows have location keys (lookup.KeyedDB), for LocationKey.
	keyed lookup.KeyedDB
	// version is db.Info().Version(), asked on every request (ETags, the answer cache):
	// kept here rather than copying the whole Info through the interface each time.
	version string
	// mu is held shared by lookups and exclusively to close the database, so closing
	// waits for the lookups in flight.
	mu     sync.RWMutex
	closed bool
}

func newHandle(db lookup.DB) *handle {
	h := &handle{db: db, version: db.Info().Version()}
	inner := db
	if m, ok := db.(movedDB); ok {
		inner = m.DB
	}
	h.inPlace, _ = inner.(lookup.InPlaceDB)
	h.keyed, _ = inner.(lookup.KeyedDB)
	return h
}

// Release ends a Borrow's lease: the database may be closed again.
func (h *handle) Release() { h.mu.RUnlock() }

// New opens the configured database (Path, else Fallback) and verifies it; failing that it
// returns an error, since there is nothing to serve.
func New(cfg Config) (*Manager, error) {
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Open == nil {
		cfg.Open = Open
	}
	if cfg.MetricsName == "" {
		cfg.MetricsName = "database"
	}
	if cfg.Name == "" {
		cfg.Name = "city"
	}
	m := &Manager{cfg: cfg, log: cfg.Logger, path: cfg.Path, subs: make(map[chan lookup.Info]struct{}), syncDir: syncDir}
	m.metrics = newMetrics(m, "geoip_"+cfg.MetricsName, cfg.Name)
	var db lookup.DB
	var err error
	if cfg.Path != "" {
		m.loaded, _ = filewatch.StatOf(cfg.Path)
		db, err = cfg.Open(cfg.Path)
	} else if cfg.Fallback != nil {
		db, err = cfg.Fallback()
	} else {
		err = errors.New("no database path and no fallback")
	}
	if err == nil {
		if err = Verify(db); err != nil {
			db.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("load database: %w", err)
	}
	m.cur.Store(newHandle(db))
	m.logLoaded("database loaded", db.Info())
	return m, nil
}

func (m *Manager) logLoaded(msg string, info lookup.Info) {
	m.log.Info(msg, "source", info.Source, "format", info.Format, "type", info.Type,
		"build_date", info.BuildDate.Format(time.DateOnly), "records", info.Records,
		"bytes", info.Size, "version", info.Version())
}

// Lookup answers for addr from the current database and completes the time zone.
func (m *Manager) Lookup(addr netip.Addr) (lookup.Record, error) {
	for {
		h := m.cur.Load()
		h.mu.RLock()
		if h.closed {
			h.mu.RUnlock()
			if m.cur.Load() == h {
				return lookup.Record{}, ErrClosed
			}
			// Swapped and closed between Load and RLock: the new one is already current.
			continue
		}
		rec, err := h.db.Lookup(addr)
		h.mu.RUnlock()
		if err != nil {
			return lookup.Record{}, err
		}
		if m.cfg.TimeZones != nil {
			rec = m.cfg.TimeZones.Resolve(rec, m.cfg.Now())
		}
		return rec, nil
	}
}

// Borrow is Lookup with the record's strings read in place from the database's memory
// where its format allows (lookup.InPlaceDB: a BIN), saving their copies. The database
// stays open, and cannot be swapped out and closed, until the lease is released: the
// caller must call Release exactly once (after an error there is no lease), soon, and
// copy what it keeps past it (lookup.Record.Own). A reload waits for the leases held.
func (m *Manager) Borrow(addr netip.Addr) (lookup.Record, lookup.Lease, error) {
	rec, h, err := m.borrow(addr)
	if err != nil {
		return rec, nil, err
	}
	return rec, h, nil
}

// LocationKey returns the location key and network of addr's row in the database serving
// now (lookup.KeyedDB), with that database's version: a key means something only in the
// database it came from. ok is false when that database has no keys or cannot key addr.
func (m *Manager) LocationKey(addr netip.Addr) (key lookup.LocationKey, network netip.Prefix, version string, ok bool) {
	for {
		h := m.cur.Load()
		if h.keyed == nil {
			return key, network, "", false
		}
		h.mu.RLock()
		if h.closed {
			h.mu.RUnlock()
			if m.cur.Load() == h {
				return key, network, "", false
			}
			continue // swapped and closed between Load and RLock, as in Lookup
		}
		key, network, ok = h.keyed.LocationKey(addr)
		h.mu.RUnlock()
		return key, network, h.version, ok
	}
}

// BorrowKeyed is Borrow that also returns the record's location key when it has one
// (keyed), with the version of the database both came from: the key and the record are
// read under one lease, so the key names the record's data.
func (m *Manager) BorrowKeyed(addr netip.Addr) (rec lookup.Record, key lookup.LocationKey, version string, keyed bool, lease lookup.Lease, err error) {
	rec, key, keyed, h, err := m.borrowKeyed(addr, true)
	if err != nil {
		return rec, key, "", false, nil, err
	}
	return rec, key, h.version, keyed, h, nil
}

// OffsetEnd is the time zones' lookup.OffsetEnder, when they have one; else the UTC offsets
// of records are the database's own and never end (math.MaxInt64).
func (m *Manager) OffsetEnd(zone string, t time.Time) int64 {
	if e, ok := m.cfg.TimeZones.(lookup.OffsetEnder); ok {
		return e.OffsetEnd(zone, t)
	}
	return math.MaxInt64
}

// borrow is Borrow, returning the handle whose read lock it holds.
func (m *Manager) borrow(addr netip.Addr) (lookup.Record, *handle, error) {
	rec, _, _, h, err := m.borrowKeyed(addr, false)
	return rec, h, err
}

// borrowKeyed is borrow that, when withKey is set and the database keys its rows, also
// returns the location key of the row the record came from, read by the same search
// (lookup.KeyedDB.LookupKeyed).
func (m *Manager) borrowKeyed(addr netip.Addr, withKey bool) (lookup.Record, lookup.LocationKey, bool, *handle, error) {
	for {
		h := m.cur.Load()
		h.mu.RLock()
		if h.closed {
			h.mu.RUnlock()
			if m.cur.Load() == h {
				return lookup.Record{}, lookup.LocationKey{}, false, nil, ErrClosed
			}
			continue // swapped and closed between Load and RLock, as in Lookup
		}
		var rec lookup.Record
		var key lookup.LocationKey
		var keyed bool
		var err error
		switch {
		case withKey && h.keyed != nil:
			rec, key, keyed, err = h.keyed.LookupKeyed(addr)
		case h.inPlace != nil:
			rec, err = h.inPlace.LookupInPlace(addr)
		default:
			rec, err = h.db.Lookup(addr)
		}
		if err != nil {
			h.mu.RUnlock()
			return lookup.Record{}, lookup.LocationKey{}, false, nil, err
		}
		if m.cfg.TimeZones != nil {
			rec = m.cfg.TimeZones.Resolve(rec, m.cfg.Now())
		}
		return rec, key, keyed, h, nil
	}
}

// LookupString parses text strictly (see lookup.ParseAddr) and looks it up; the error
// wraps lookup.ErrInvalidAddress for bad text.
func (m *Manager) LookupString(s string) (netip.Addr, lookup.Record, error) {
	addr, err := lookup.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, lookup.Record{}, err
	}
	rec, err := m.Lookup(addr)
	return addr, rec, err
}

// Info describes the database serving now.
func (m *Manager) Info() lookup.Info { return m.cur.Load().db.Info() }

// Age is how old the database serving now is: the time since its build date; false when
// the database names no build date.
func (m *Manager) Age() (time.Duration, bool) {
	built := m.Info().BuildDate
	if built.IsZero() {
		return 0, false
	}
	return m.cfg.Now().Sub(built), true
}

// Name is the database's name, "city" or "asn" (Config.Name).
func (m *Manager) Name() string { return m.cfg.Name }

// Version changes whenever a different database starts serving; use it in ETags.
func (m *Manager) Version() string { return m.cur.Load().version }

// Subscribe returns a channel that receives the Info of every database swapped in, and a
// function to stop. Slow readers see only the latest swap.
func (m *Manager) Subscribe() (<-chan lookup.Info, func()) {
	ch := make(chan lookup.Info, 1)
	m.mu.Lock()
	m.subs[ch] = struct{}{}
	m.mu.Unlock()
	return ch, func() {
		m.mu.Lock()
		delete(m.subs, ch)
		m.mu.Unlock()
	}
}

// Reload reopens the current path (SIGHUP does this).
func (m *Manager) Reload() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.path == "" {
		return errors.New("reload: no database file configured (serving the fallback)")
	}
	return m.loadLocked(m.path)
}

// Install loads path, verifies it and makes it the database that serves and is watched
// from now on.
func (m *Manager) Install(path string) error {
	return m.InstallFile(path, path)
}

// InstallFile loads src and verifies it; only then renames it to dst (same file system),
// swaps it in and watches dst. The updater calls it with a downloaded file, so that a bad
// download never replaces the good file on disk. The caller has synced src's data; the
// rename is synced here (dst's directory), so a crash leaves the old file or the new one,
// whole.
func (m *Manager) InstallFile(src, dst string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	db, err := m.openVerified(src)
	if err == nil && src != dst {
		if err = os.Rename(src, dst); err != nil {
			db.Close()
		} else if serr := m.syncDir(filepath.Dir(dst)); serr != nil {
			// The new file is in place and serves; only a crash now could
			// bring the old name back.
			m.log.Warn("database installed, but its directory could not be synced", "path", dst, "err", serr)
		}
	}
	if err != nil {
		reason := failureReason(err)
		m.metrics.failures.WithLabelValues(reason).Inc()
		m.log.Error("database install refused; the previous database keeps serving", "path", src, "reason", reason, "err", err)
		return fmt.Errorf("install %s: %w", src, err)
	}
	if src != dst {
		db = movedDB{db, dst}
	}
	m.swapLocked(db)
	m.path = dst
	m.loaded, _ = filewatch.StatOf(dst)
	m.failed = filewatch.Stat{}
	return nil
}

// syncDir makes the renames in dir durable: a rename is an entry of its directory, and
// without this a crash could leave the old entry (or none) after InstallFile returned.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (m *Manager) openVerified(path string) (lookup.DB, error) {
	db, err := m.cfg.Open(path)
	if err != nil {
		return nil, err
	}
	if err := Verify(db); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Replace makes db serve after verifying it; it is not tied to a file.
func (m *Manager) Replace(db lookup.DB) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := Verify(db); err != nil {
		m.metrics.failures.WithLabelValues(failureReason(err)).Inc()
		return err
	}
	m.swapLocked(db)
	m.path, m.loaded = "", filewatch.Stat{}
	return nil
}

func (m *Manager) loadLocked(path string) error {
	st, err := filewatch.StatOf(path)
	if err == nil {
		var db lookup.DB
		if db, err = m.openVerified(path); err == nil {
			m.swapLocked(db)
			m.loaded, m.failed = st, filewatch.Stat{}
			return nil
		}
	}
	m.failed = st
	reason := failureReason(err)
	m.metrics.failures.WithLabelValues(reason).Inc()
	m.log.Error("database reload refused; the previous database keeps serving", "path", path, "reason", reason, "err", err)
	return fmt.Errorf("reload %s: %w", path, err)
}

func (m *Manager) swapLocked(db lookup.DB) {
	old := m.cur.Swap(newHandle(db))
	m.metrics.reloads.Inc()
	info := db.Info()
	m.logLoaded("database swapped in", info)
	for ch := range m.subs {
		select {
		case <-ch: // drop the stale notification
		default:
		}
		ch <- info
	}
	// Waits for the lookups in flight on the old database, then frees it.
	old.mu.Lock()
	old.closed = true
	old.mu.Unlock()
	if err := old.db.Close(); err != nil {
		m.log.Warn("closing the previous database", "err", err)
	}
}

// Watch reloads on every value from hup (SIGHUP, wired by the caller with signal.Notify)
// and when the file changes, until ctx ends.
func (m *Manager) Watch(ctx context.Context, hup <-chan os.Signal) {
	var settle filewatch.Settle
	filewatch.Loop(ctx, hup, m.cfg.PollInterval, func(sig os.Signal) {
		m.log.Info("reloading database on signal", "signal", fmt.Sprint(sig))
		if err := m.Reload(); err != nil {
			m.log.Warn("reload on signal failed", "err", err)
		}
	}, func() { m.poll(&settle) })
}

// poll loads the file once it has changed and then stayed the same for one interval.
func (m *Manager) poll(settle *filewatch.Settle) {
	m.mu.Lock()
	path, loaded, failed := m.path, m.loaded, m.failed
	m.mu.Unlock()
	if path == "" {
		settle.Reset()
		return
	}
	st, err := filewatch.StatOf(path)
	if !settle.Changed(st, err, loaded, failed) {
		return
	}
	m.log.Info("database file changed; reloading", "path", path)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.path == path {
		_ = m.loadLocked(path) // logged and counted inside
	}
}

// Close closes the current database; lookups must have stopped.
func (m *Manager) Close() error {
	h := m.cur.Load()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	return h.db.Close()
}

// movedDB reports the path a database was moved to after it was opened.
type movedDB struct {
	lookup.DB
	path string
}

func (d movedDB) Info() lookup.Info {
	info := d.DB.Info()
	info.Source = d.path
	return info
}

// Keys is m itself: its LocationKey answers for the database serving (a BIN keys its rows
// by their location cells, an MMDB its records by their offset), reporting no key when
// that database has none, so the answer engine asks it per request.
func (m *Manager) Keys() lookup.KeyedSource { return m }
