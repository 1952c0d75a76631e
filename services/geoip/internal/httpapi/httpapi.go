// Package httpapi is the HTTP interface of the IP location service: ipapi.co's URL grammar
// (/{ip}/json/, /json/, /{ip}/{field}/, other formats, batch) declared on libs/apiserver.
package httpapi

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/services/geoip/internal/lookup"
)

// DB is what the API needs from the database: dbfile.Manager in the service, a fixed
// database in tests.
type DB interface {
	Lookup(addr netip.Addr) (lookup.Record, error)
	// Version changes whenever different data starts serving; it is part of every ETag.
	Version() string
}

// Options tune the API; the zero value is usable.
type Options struct {
	// MaxAge is the Cache-Control max-age of explicit-address answers (default 1h). The
	// ETag lets clients revalidate cheaply afterwards.
	MaxAge time.Duration
	// CacheSize bounds the in-process cache of encoded answers (default 65536 addresses;
	// negative disables it), and twice as many the cache of encoded locations (see
	// fragmentCache), when the database has location keys.
	CacheSize int
	// CacheTTL bounds how long a cached answer is reused (default 1m): utc_offset changes
	// at daylight-saving transitions without the database changing.
	CacheTTL time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// API serves the endpoints of one server.
type API struct {
	srv         *apiserver.Server[struct{}]
	db          DB
	cache       *answerCache
	now         func() time.Time
	publicCache string // Cache-Control of explicit-address answers

	hits, misses prometheus.Counter
	borrow       borrower // db, when it lends records read in place
	keyed        keyedDB  // db, when its rows have location keys and frags is kept
	frags        *fragmentCache
}

// Description is the service's /docs text with an ASN database; DB-IP's licence (CC BY 4.0) requires the
// attribution wherever its data is shown.
const Description = `Location of IPv4 and IPv6 addresses, with ipapi.co's URL grammar: ` +
	"`/{ip}/json/`, `/json/` (the caller), `/{ip}/{field}/` and `/{field}/` (plain text), " +
	"`xml`, `csv`, `yaml` and `jsonp` formats, and `POST /batch`.\n\n" +
	"Reserved addresses (private, loopback, documentation...) are answered with `reserved: true` " +
	"without a lookup; invalid ones with 400 and ipapi.co's body `{\"ip\": \"...\", \"error\": true, \"reason\": \"Invalid IP Address\"}`.\n\n" +
	"[IP Geolocation by DB-IP](https://db-ip.com) (CC BY 4.0) when serving DB-IP data, as the embedded sample does."

// Describe is the /docs text: Description, and without an ASN database why asn and org
// are empty.
func Describe(hasASN bool) string {
	if hasASN {
		return Description
	}
	return Description + "\n\n**asn and org are empty on this server**: no ASN database is configured. " +
		"Set `GEOIP_ASN_DB` to a GeoLite2-ASN or DB-IP ASN Lite `.mmdb` file to fill them."
}

// New registers the endpoints on srv. The server must own its gin engine (the default):
// the trailing-slash redirect is installed on it.
func New(srv *apiserver.Server[struct{}], db DB, opts Options) (*API, error) {
	if opts.MaxAge == 0 {
		opts.MaxAge = time.Hour
	}
	if opts.MaxAge < 0 {
		return nil, fmt.Errorf("httpapi: max-age %s is negative", opts.MaxAge)
	}
	if opts.CacheSize == 0 {
		opts.CacheSize = 1 << 16
	}
	if opts.CacheTTL <= 0 {
		opts.CacheTTL = time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	a := &API{
		srv:         srv,
		db:          db,
		cache:       newAnswerCache(opts.CacheSize, opts.CacheTTL),
		now:         opts.Now,
		publicCache: "public, max-age=" + strconv.Itoa(int(opts.MaxAge/time.Second)),
		hits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "geoip_answer_cache_hits_total", Help: "Answers served from the in-process cache.",
		}),
		misses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "geoip_answer_cache_misses_total", Help: "Answers looked up in the database (reserved addresses excluded).",
		}),
	}
	a.borrow, _ = db.(borrower)
	if k, ok := db.(keyedDB); ok && opts.CacheSize > 0 {
		a.keyed, a.frags = k, newFragmentCache(2*opts.CacheSize, opts.CacheTTL)
	}
	if err := srv.Registry().Register(a.hits); err != nil {
		return nil, fmt.Errorf("httpapi: register metrics: %w", err)
	}
	if err := srv.Registry().Register(a.misses); err != nil {
		return nil, fmt.Errorf("httpapi: register metrics: %w", err)
	}
	a.register()
	a.installRedirects()
	a.registerRoot()
	return a, nil
}

// Purge empties the answer cache; call it when the database is replaced. Answers from an
// older database are never served even before Purge (each carries its version); Purge
// frees their memory.
func (a *API) Purge() {
	a.cache.purge()
	a.frags.purge()
}

// CacheLen is the number of answers cached now.
func (a *API) CacheLen() int { return a.cache.len() }

// resolve fills ans with the answer for addr: reserved ranges without a lookup, the rest
// from the cache or the database. ans is the caller's; a cached answer is copied into it.
// Only the JSON encoding, its ETag and the version are kept unless needLoc asks for the
// record too (the other formats, batch): the record is read in place from the database
// where it can be (borrow), encoded while the database is held open, and copied to the
// heap only when it is needed afterwards or cached.
func (a *API) resolve(addr netip.Addr, ans *answer, needLoc bool) error {
	version := a.db.Version()
	if isReserved(addr) {
		loc := reservedLocation(addr)
		ans.set(&loc, version, nil)
		return nil
	}
	now := a.now()
	if c := a.cache.get(addr, version, now); c != nil {
		a.hits.Inc()
		*ans = *c
		return nil
	}
	a.misses.Inc()
	admit := a.cache.admit(addr)
	if !needLoc && !admit && a.keyed != nil {
		// Only the JSON is needed: from the encoding of the row's location, when the
		// database keys its rows.
		if done, err := a.resolveByLocation(addr, version, now, ans); done {
			return err
		}
	}
	rec, lease, err := a.lookup(addr)
	if err != nil {
		return fmt.Errorf("look up %s: %w", addr, err)
	}
	defer lease.Release()
	loc, buf := newLocation(addr, rec, make([]byte, 0, answerBufSize))
	ans.set(&loc, version, buf)
	if !needLoc && !admit {
		ans.loc = Location{} // its strings may be the database's, released on return
		return nil
	}
	ans.loc.own()
	if admit {
		shared := new(answer)
		*shared = *ans
		a.cache.put(addr, shared, now)
	}
	return nil
}

// lookup reads addr's record, in place when the database lends records (borrower).
func (a *API) lookup(addr netip.Addr) (lookup.Record, lookup.Lease, error) {
	if a.borrow != nil {
		return a.borrow.Borrow(addr)
	}
	rec, err := a.db.Lookup(addr)
	return rec, noLease{}, err
}

// borrower is a DB that lends records read in place (dbfile.Manager, dbfile.WithASN): their
// strings are valid until the lease is released (see dbfile.Manager.Borrow).
type borrower interface {
	Borrow(addr netip.Addr) (lookup.Record, lookup.Lease, error)
}

// noLease is the lease of a record that was copied: nothing to release.
type noLease struct{}

func (noLease) Release() {}

// parseAddr reads an address from the path; the error is ipapi.co's answer
// ({"ip", "error": true, "reason": "Invalid IP Address"}) with status 400.
func parseAddr(text string) (netip.Addr, error) {
	addr, err := lookup.ParseAddr(text)
	if err == nil {
		return addr, nil
	}
	body := AddressError{IP: clip(text), Error: true, Reason: reasonInvalid}
	msg := "Invalid IP address: " + strconv.Quote(clip(text))
	if strings.Contains(text, "%") {
		if _, zerr := netip.ParseAddr(text); zerr == nil {
			msg = "IPv6 zone identifiers are not accepted: " + strconv.Quote(clip(text)) + " names an interface of the caller's host"
			body.Message = msg
		}
	}
	return netip.Addr{}, apiserver.NewBodyError(http.StatusBadRequest, body, msg)
}

// callerAddr is the caller's address: the peer, or through TRUSTED_PROXIES the right-most
// untrusted X-Forwarded-For entry (libs/apiserver/clientip).
func (a *API) callerAddr(r *http.Request) (netip.Addr, error) {
	addr := a.srv.ClientResolver().ResolveRequest(r)
	if !addr.IsValid() {
		return netip.Addr{}, fmt.Errorf("caller address %q is not an IP address", r.RemoteAddr)
	}
	return addr, nil
}

// etag is a strong validator of one representation: the database version and a hash of
// the bytes, so it changes with the database and with anything else that changes the body
// (the clock's utc_offset, a JSONP callback, a new release's encoding). xxHash64: fixed
// (every replica gives the same ETag) and fast (it runs on every uncached answer).
func etag(version string, body []byte) string {
	b := appendETag(make([]byte, 0, len(version)+19), version, body)
	return unsafe.String(unsafe.SliceData(b), len(b)) // one allocation; b is not written again
}

// appendETag appends body's ETag (see etag) to b.
func appendETag(b []byte, version string, body []byte) []byte {
	b = append(b, '"')
	b = append(b, version...)
	b = append(b, '-')
	var sum [8]byte
	binary.BigEndian.PutUint64(sum[:], xxhash.Sum64(body))
	b = hex.AppendEncode(b, sum[:])
	return append(b, '"')
}

// scope is who may cache an answer: anyone for an explicit address, only the caller for
// their own.
type scope bool

const (
	public  scope = true
	private scope = false
)

// privateCache is the Cache-Control of the caller's own answers: another caller, or this
// one on another network, gets a different answer, so no shared cache may keep it, and the
// browser revalidates (cheap with the ETag).
const privateCache = "private, no-cache"

// respond is a representation with its validators; the library answers 304 when the
// client's If-None-Match names the ETag. tag is the body's ETag when already known (the
// JSON answer's), else "".
func respond[B any](a *API, sc scope, version, contentType string, body []byte, tag string) apiserver.Response[cacheHeaders, B] {
	if tag == "" {
		tag = etag(version, body)
	}
	cc := privateCache
	if sc == public {
		cc = a.publicCache
	}
	return apiserver.Response[cacheHeaders, B]{Header: cacheHeaders{ETag: tag, CacheControl: cc}, Raw: body, ContentType: contentType}
}
