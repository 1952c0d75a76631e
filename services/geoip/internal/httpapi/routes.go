package httpapi

import (
	"net/http"
	"net/netip"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/services/geoip/internal/answer"
)

// Location is the answer for one address, as every format writes it (internal/answer).
type Location = answer.Location

// format is a representation of the whole record.
type format struct {
	name        string // path segment
	contentType string
	body        apiserver.Body // what its body is, documented for contentType
	summary     string
}

var formats = []format{
	{"json", "application/json; charset=utf-8", apiserver.Body{}, "JSON"},
	{"xml", "application/xml; charset=utf-8", apiserver.Body{Kind: apiserver.BodyXML, XMLName: "root",
		Description: "ipapi.co's XML: <root> holding one element per field, named as the JSON keys and in their order; values as the plain-text field endpoints write them."},
		"XML (<root> with one element per field)"},
	{"csv", "text/csv; charset=utf-8", apiserver.Body{Kind: apiserver.BodyText, Description: csvLayout()},
		"CSV (a header line and a value line)"},
	{"yaml", "application/yaml; charset=utf-8", apiserver.Body{
		Description: "A YAML mapping with the JSON keys in their order; strings double-quoted."}, "YAML"},
	{"jsonp", "application/javascript; charset=utf-8", apiserver.Body{
		Description: "/**/callback(<the JSON object>); the object is described here."}, "JSONP (callback(record);)"},
}

// plainText is the success answer of the field endpoints: text only.
var plainText = apiserver.ResponseDoc{Content: map[string]apiserver.Body{"text/plain": {Kind: apiserver.BodyText}}}

// csvLayout documents the CSV columns, read from the one field list every format walks.
func csvLayout() string {
	var always, optional []string
	for _, k := range answer.Keys() {
		if k.Optional {
			optional = append(optional, k.Name)
		} else {
			always = append(always, k.Name)
		}
	}
	return "RFC 4180 with CRLF line ends: a header line and a value line. Columns, in this order: " +
		strings.Join(always, ", ") + "; then " + strings.Join(optional, ", ") +
		" only when set (true or a non-empty reason). Values as the plain-text field endpoints write them."
}

// cacheHeaders are the validators every lookup answer carries (batch answers excepted).
type cacheHeaders struct {
	ETag         string `header:"ETag" required:"true" status:"200,304" doc:"Strong validator: the database version and a hash of the body; send it back in If-None-Match" example:"\"2026-03-dbip-3f2a9c1d0e4b5a6c\""`
	CacheControl string `header:"Cache-Control" required:"true" status:"200,304" doc:"public, max-age=<MaxAge> for an explicit address; private, no-cache for the caller's own" example:"public, max-age=3600"`
}

// batchHeaders: a batch answer is never cached.
type batchHeaders struct {
	CacheControl string `header:"Cache-Control" required:"true" enum:"no-store"`
}

// textFieldNames are the plain-text field endpoints, in documentation order: every JSON
// key plus ipapi.co's latlong.
var textFieldNames = answer.TextFieldNames()

// Inputs. The address is a plain string, checked by the handler rather than by a format
// tag, so that an invalid one gets ipapi.co's error keys and not only the library's
// validation details.
type (
	ipInput struct {
		IP string `path:"ip" doc:"IPv4 or IPv6 address; zone identifiers are refused" example:"8.8.8.8"`
	}
	ipJSONPInput struct {
		IP       string `path:"ip" doc:"IPv4 or IPv6 address; zone identifiers are refused" example:"8.8.8.8"`
		Callback string `query:"callback" default:"callback" maxLength:"128" pattern:"^[A-Za-z_$][A-Za-z0-9_$]*(\\.[A-Za-z_$][A-Za-z0-9_$]*)*$" doc:"JavaScript function to call: an identifier or a dotted path of identifiers (anything else is refused)" example:"handleLocation"`
	}
	ipFieldInput struct {
		IP    string `path:"ip" doc:"IPv4 or IPv6 address; zone identifiers are refused" example:"8.8.8.8"`
		Field string `path:"field" doc:"Any key of the JSON answer, or latlong" example:"city"`
	}
	callerInput      struct{}
	callerJSONPInput struct {
		Callback string `query:"callback" default:"callback" maxLength:"128" pattern:"^[A-Za-z_$][A-Za-z0-9_$]*(\\.[A-Za-z_$][A-Za-z0-9_$]*)*$" doc:"JavaScript function to call: an identifier or a dotted path of identifiers (anything else is refused)" example:"handleLocation"`
	}
	batchInput struct {
		Body []string `minItems:"1" maxItems:"100" doc:"Up to 100 addresses" example:"[\"8.8.8.8\",\"2001:4860:4860::8888\"]"`
	}
)

const (
	tagLookup = "lookup"
	tagCaller = "caller"
	tagKeys   = "keys"
)

// register declares every endpoint through the library, so each appears in /docs with its
// parameters and examples. gin allows one wildcard name per path position, so the first
// segment is :ip everywhere and the caller's field endpoints are static paths.
func (a *API) register() {
	// Every error of a lookup is answered in ipapi.co's shape (ipapiErrors), an invalid
	// address with the address too; with GEOIP_KEYS_FILE a key selects its own limit.
	addressErrors := []apiserver.ErrorBody{{
		Status:      http.StatusBadRequest,
		Description: `Not an IP address (or an IPv6 address with a zone identifier): ipapi.co's body with the address, error a boolean; any other invalid input (a JSONP callback that is not an identifier path) has reason "Invalid Request".`,
		Example:     AddressError{IP: "999.1.1.1", Error: true, Reason: reasonInvalid},
	}}
	keyed := a.identityLimit()
	for _, f := range formats {
		// Each format's routes answer in its media type only (errors stay JSON).
		mediaType, _, _ := strings.Cut(f.contentType, ";")
		responses := map[int]apiserver.ResponseDoc{http.StatusOK: {Content: map[string]apiserver.Body{mediaType: f.body}}}
		explicit := apiserver.Operation{
			Method: http.MethodGet, URL: "/:ip/" + f.name + "/", Tags: []string{tagLookup},
			Summary:     "Location of an address as " + f.summary,
			Description: "Cache-Control: public; the ETag changes with the database and the local overrides. Reserved addresses answer 200 with reserved: true.",
			Responses:   responses, ErrorBodies: addressErrors,
			IdentityLimit: keyed, ErrorMap: ipapiErrors,
		}
		caller := apiserver.Operation{
			Method: http.MethodGet, URL: "/" + f.name + "/", Tags: []string{tagCaller},
			Summary:       "Location of the caller as " + f.summary,
			Description:   "The caller is the TCP peer, or behind a proxy listed in TRUSTED_PROXIES the right-most untrusted X-Forwarded-For entry. Cache-Control: private.",
			Responses:     responses,
			IdentityLimit: keyed, ErrorMap: ipapiErrors,
		}
		if f.name == "jsonp" {
			apiserver.Register(a.srv, explicit, func(c *apiserver.Context[struct{}], in *ipJSONPInput) (recordAnswer, error) {
				return a.serveExplicit(in.IP, f, in.Callback)
			})
			apiserver.Register(a.srv, caller, func(c *apiserver.Context[struct{}], in *callerJSONPInput) (recordAnswer, error) {
				return a.serveCaller(c, f, in.Callback)
			})
			continue
		}
		apiserver.Register(a.srv, explicit, func(c *apiserver.Context[struct{}], in *ipInput) (recordAnswer, error) {
			return a.serveExplicit(in.IP, f, "")
		})
		apiserver.Register(a.srv, caller, func(c *apiserver.Context[struct{}], in *callerInput) (recordAnswer, error) {
			return a.serveCaller(c, f, "")
		})
	}

	apiserver.Register(a.srv, apiserver.Operation{
		Method: http.MethodGet, URL: "/:ip/:field/", Tags: []string{tagLookup},
		Summary:     "One field of an address's location, as plain text",
		Description: "Unknown values are empty. Booleans are true/false; latlong is latitude,longitude.",
		Responses: map[int]apiserver.ResponseDoc{
			http.StatusOK:       plainText,
			http.StatusNotFound: {Description: "No such field (the route is unknown)"},
		},
		ErrorBodies: addressErrors,
		// One route per field: beside the format routes (/:ip/json/...), a :field
		// wildcard would cost every lookup gin's way back (two allocations).
		PathValues:    map[string][]string{"field": textFieldNames},
		IdentityLimit: keyed, ErrorMap: ipapiErrors,
	}, func(c *apiserver.Context[struct{}], in *ipFieldInput) (textAnswer, error) {
		get, _ := answer.TextField(in.Field) // one of PathValues: the others are not routed
		addr, err := parseAddr(in.IP)
		if err != nil {
			return textAnswer{}, err
		}
		return a.serveText(addr, public, get)
	})
	for _, name := range textFieldNames {
		get, _ := answer.TextField(name)
		apiserver.Register(a.srv, apiserver.Operation{
			Method: http.MethodGet, URL: "/" + name + "/", Tags: []string{tagCaller},
			Summary:       "The caller's " + name + ", as plain text",
			Responses:     map[int]apiserver.ResponseDoc{http.StatusOK: plainText},
			IdentityLimit: keyed, ErrorMap: ipapiErrors,
		}, func(c *apiserver.Context[struct{}], _ *callerInput) (textAnswer, error) {
			addr, err := a.callerAddr(c.Request)
			if err != nil {
				return textAnswer{}, err
			}
			return a.serveText(addr, private, get)
		})
	}

	apiserver.Register(a.srv, apiserver.Operation{
		Method: http.MethodPost, URL: "/batch", Tags: []string{tagLookup},
		Summary: "Locations of up to 100 addresses",
		Description: "One result per address, in order. An entry that is not an address gets " +
			`{"ip": "...", "error": true, "reason": "Invalid IP Address"} with the other fields empty; ` +
			"reserved addresses get reserved: true. More than 100 addresses is a 400. " +
			"A key selects its limit as on the other lookups; errors keep the platform's body (validation details).",
		IdentityLimit: keyed,
	}, func(c *apiserver.Context[struct{}], in *batchInput) (apiserver.Response[batchHeaders, []Location], error) {
		out := make([]Location, len(in.Body))
		for i, text := range in.Body {
			addr, err := lookupParse(text)
			if err != nil {
				out[i] = answer.Invalid(text)
				continue
			}
			if out[i], _, err = a.answers.Record(addr); err != nil {
				return apiserver.Response[batchHeaders, []Location]{}, err
			}
		}
		return apiserver.Response[batchHeaders, []Location]{Header: batchHeaders{CacheControl: "no-store"}, Body: out}, nil
	})
}

// The answers of the lookup endpoints: the record in one format, or one field as text,
// with the cache validators; the library writes them and answers 304.
type (
	recordAnswer = apiserver.Response[cacheHeaders, Location]
	textAnswer   = apiserver.Response[cacheHeaders, string]
)

func lookupParse(text string) (netip.Addr, error) {
	addr, err := parseAddr(strings.TrimSpace(text))
	return addr, err
}

// serveExplicit answers /{ip}/{format}/.
func (a *API) serveExplicit(text string, f format, callback string) (recordAnswer, error) {
	addr, err := parseAddr(text)
	if err != nil {
		return recordAnswer{}, err
	}
	return a.serveRecord(addr, public, f, callback)
}

// serveCaller answers /{format}/ for the caller's own address.
func (a *API) serveCaller(c *apiserver.Context[struct{}], f format, callback string) (recordAnswer, error) {
	addr, err := a.callerAddr(c.Request)
	if err != nil {
		return recordAnswer{}, err
	}
	return a.serveRecord(addr, private, f, callback)
}

func (a *API) serveRecord(addr netip.Addr, sc scope, f format, callback string) (recordAnswer, error) {
	if f.name == "json" || f.name == "jsonp" {
		body, tag, version, err := a.answers.Answer(addr)
		if err != nil {
			return recordAnswer{}, err
		}
		if f.name == "jsonp" {
			body, tag = answer.AppendJSONP(make([]byte, 0, len(body)+len(callback)+8), callback, body), ""
		}
		return respond[Location](a, sc, version, f.contentType, body, tag), nil
	}
	loc, version, err := a.answers.Record(addr)
	if err != nil {
		return recordAnswer{}, err
	}
	var body []byte
	switch f.name {
	case "xml":
		body = answer.AppendXML(nil, &loc)
	case "csv":
		if body, err = answer.AppendCSV(nil, &loc); err != nil {
			return recordAnswer{}, err
		}
	case "yaml":
		body = answer.AppendYAML(nil, &loc)
	}
	return respond[Location](a, sc, version, f.contentType, body, ""), nil
}

func (a *API) serveText(addr netip.Addr, sc scope, get func(*Location) string) (textAnswer, error) {
	loc, version, err := a.answers.Record(addr)
	if err != nil {
		return textAnswer{}, err
	}
	return respond[string](a, sc, version, "text/plain; charset=utf-8", []byte(get(&loc)), ""), nil
}

// callerPaths are the one-segment paths that exist with a trailing slash.
var callerPaths = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range formats {
		m[f.name] = true
	}
	for _, n := range textFieldNames {
		m[n] = true
	}
	return m
}()

// installRedirects replaces gin's trailing-slash redirect, whose Location is an absolute
// path (right behind a proxy only if it sends X-Forwarded-Prefix and is trusted), with a
// relative one: "./json/" resolves against whatever prefix the client used, so
// /geoip/8.8.8.8/json behind any prefix-stripping proxy lands on /geoip/8.8.8.8/json/.
// Other unknown paths keep the library's 404 body.
func (a *API) installRedirects() {
	engine := a.srv.Instance()
	engine.RedirectTrailingSlash = false
	engine.NoRoute(func(c *gin.Context) {
		if to, ok := slashRedirect(c.Request); ok {
			c.Header("Location", to)
			c.Status(http.StatusMovedPermanently)
			c.Writer.WriteHeaderNow()
			c.Abort()
			return
		}
		notFound := apiserver.NotFoundError("Route " + c.Request.Method + " " + c.Request.URL.Path + " not found")
		if lookupShaped(c.Request) {
			// /{ip}/{unknown field}/ is a lookup's error: ipapi.co's body, as documented there.
			a.srv.WriteErrorMapped(c, notFound, ipapiErrors)
			return
		}
		a.srv.WriteError(c, notFound)
	})
}

// slashRedirect returns the relative Location for a GET of one of our paths without its
// trailing slash: /{ip}/{format-or-field} and /{format-or-field}.
func slashRedirect(r *http.Request) (string, bool) {
	if r.Method != http.MethodGet {
		return "", false
	}
	p := r.URL.EscapedPath()
	if len(p) < 2 || strings.HasSuffix(p, "/") {
		return "", false
	}
	segs := strings.Split(p[1:], "/")
	switch {
	case len(segs) == 2 && segs[0] != "":
	case len(segs) == 1 && callerPaths[segs[0]]:
	default:
		return "", false
	}
	// "./" keeps a last segment such as "fe80::1" from reading as a URI scheme.
	to := "./" + segs[len(segs)-1] + "/"
	if r.URL.RawQuery != "" {
		to += "?" + r.URL.RawQuery // the JSONP callback, an API key
	}
	return to, true
}

// lookupShaped reports whether r has the form of /{ip}/{field}/: a GET of two segments
// and a trailing slash.
func lookupShaped(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	p := r.URL.Path
	if len(p) < 4 || !strings.HasSuffix(p, "/") {
		return false
	}
	a, b, ok := strings.Cut(p[1:len(p)-1], "/")
	return ok && a != "" && b != "" && !strings.Contains(b, "/")
}
