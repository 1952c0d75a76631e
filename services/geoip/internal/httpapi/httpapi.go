// Package httpapi is the HTTP interface of the IP location service: ipapi.co's URL grammar
// (/{ip}/json/, /json/, /{ip}/{field}/, other formats, batch) declared on libs/apiserver.
package httpapi

import (
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/services/geoip/internal/answer"
	"github.com/apistack/platform/services/geoip/internal/lookup"
)

// Options tune the API; the zero value is usable.
type Options struct {
	// MaxAge is the Cache-Control max-age of explicit-address answers (default 1h). The
	// ETag lets clients revalidate cheaply afterwards.
	MaxAge time.Duration
	// Keys are the API keys (GEOIP_KEYS_FILE): a key sent with a lookup selects its
	// limit. nil: no keys, and a key sent is ignored.
	Keys *Keys
}

// API serves the endpoints of one server.
type API struct {
	srv         *apiserver.Server[struct{}]
	answers     *answer.Engine
	publicCache string // Cache-Control of explicit-address answers
	keys        *Keys  // nil without GEOIP_KEYS_FILE
}

// Description is the service's /docs text with an ASN database; DB-IP's licence (CC BY 4.0) requires the
// attribution wherever its data is shown.
const Description = `Location of IPv4 and IPv6 addresses, with ipapi.co's URL grammar: ` +
	"`/{ip}/json/`, `/json/` (the caller), `/{ip}/{field}/` and `/{field}/` (plain text), " +
	"`xml`, `csv`, `yaml` and `jsonp` formats, and `POST /batch`.\n\n" +
	"Reserved addresses (private, loopback, documentation...) are answered with `reserved: true` " +
	"without a lookup; invalid ones with 400 and ipapi.co's body `{\"ip\": \"...\", \"error\": true, \"reason\": \"Invalid IP Address\"}`. " +
	"Every other error of a lookup is ipapi.co's body too, `{\"error\": true, \"reason\": \"RateLimited\", \"message\": \"...\"}` " +
	"(429 with `Retry-After`; reasons `Invalid Key`, `Invalid Request`, `Not Found`, `Internal Error`); `/batch` and `/usage` keep the platform's error body.\n\n" +
	"**API keys**: with `GEOIP_KEYS_FILE` (`{\"keys\": [{\"key\": \"...\", \"name\": \"acme\", \"limit\": 1000, \"window\": \"1m\"}]}`), " +
	"a lookup with `?key=KEY` (ipapi.co's form) or `Authorization: Bearer KEY` is limited by the key's limit, shared by every replica, " +
	"instead of its address's; an unknown key is a 403 (reason `Invalid Key`); without a key the per-address limit applies. " +
	"`GET /usage?key=KEY` answers the key's lookups today and its limit.\n\n" +
	"**Local overrides**: an operator can correct networks with a JSON file named by `GEOIP_OVERRIDES`, " +
	"`[{\"network\": \"10.20.0.0/16\", \"city\": \"Head Office\", \"country\": \"NL\"}, ...]`. " +
	"An override is consulted before the reserved ranges and the database, the longest prefix winning: " +
	"its fields replace the database's in every format and in batches, `network` is the override's, " +
	"and an overridden private address is not `reserved`. The overrides' version is part of every ETag.\n\n" +
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

// New registers the endpoints on srv, answering from answers, and its cache metrics on
// srv's registry. The server must own its gin engine (the default): the trailing-slash
// redirect is installed on it.
func New(srv *apiserver.Server[struct{}], answers *answer.Engine, opts Options) (*API, error) {
	if opts.MaxAge == 0 {
		opts.MaxAge = time.Hour
	}
	if opts.MaxAge < 0 {
		return nil, fmt.Errorf("httpapi: max-age %s is negative", opts.MaxAge)
	}
	a := &API{
		srv:         srv,
		answers:     answers,
		publicCache: "public, max-age=" + strconv.Itoa(int(opts.MaxAge/time.Second)),
		keys:        opts.Keys,
	}
	for _, c := range []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "geoip_answer_cache_hits_total", Help: "Answers served from the in-process cache.",
		}, func() float64 { h, _ := answers.CacheStats(); return float64(h) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "geoip_answer_cache_misses_total", Help: "Answers looked up in the database (reserved addresses excluded).",
		}, func() float64 { _, m := answers.CacheStats(); return float64(m) }),
	} {
		if err := srv.Registry().Register(c); err != nil {
			return nil, fmt.Errorf("httpapi: register metrics: %w", err)
		}
	}
	a.register()
	a.registerUsage()
	a.installRedirects()
	a.registerRoot()
	return a, nil
}

// parseAddr reads an address from the path; the error is ipapi.co's answer
// ({"ip", "error": true, "reason": "Invalid IP Address"}) with status 400.
func parseAddr(text string) (netip.Addr, error) {
	addr, err := lookup.ParseAddr(text)
	if err == nil {
		return addr, nil
	}
	body := AddressError{IP: answer.Clip(text), Error: true, Reason: reasonInvalid}
	msg := "Invalid IP address: " + strconv.Quote(answer.Clip(text))
	if strings.Contains(text, "%") {
		if _, zerr := netip.ParseAddr(text); zerr == nil {
			msg = "IPv6 zone identifiers are not accepted: " + strconv.Quote(answer.Clip(text)) + " names an interface of the caller's host"
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

// AddressError is ipapi.co's answer for a path address that is not an IP address, with
// error a boolean as its clients declare it (the library's error body has a string there).
type AddressError struct {
	IP      string `json:"ip" doc:"The text given, as received (at most 100 bytes)" example:"999.1.1.1"`
	Error   bool   `json:"error" doc:"Always true" example:"true"`
	Reason  string `json:"reason" doc:"Invalid IP Address" example:"Invalid IP Address"`
	Message string `json:"message,omitempty" doc:"Present when there is more to say, e.g. that IPv6 zone identifiers are refused"`
}

// reasonInvalid is AddressError's reason, spelled as ipapi.co spells it.
const reasonInvalid = answer.ReasonInvalid

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
		tag = answer.ETag(version, body)
	}
	cc := privateCache
	if sc == public {
		cc = a.publicCache
	}
	return apiserver.Response[cacheHeaders, B]{Header: cacheHeaders{ETag: tag, CacheControl: cc}, Raw: body, ContentType: contentType}
}
