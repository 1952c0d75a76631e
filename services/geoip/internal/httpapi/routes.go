package httpapi

import (
	"net/http"
	"net/netip"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/apistack/platform/libs/apiserver"
)

// format is a representation of the whole record.
type format struct {
	name        string // path segment
	contentType string
	produces    string // documented media type besides JSON
	summary     string
}

var formats = []format{
	{"json", "application/json; charset=utf-8", "", "JSON"},
	{"xml", "application/xml; charset=utf-8", "application/xml", "XML (<root> with one element per field)"},
	{"csv", "text/csv; charset=utf-8", "text/csv", "CSV (a header line and a value line)"},
	{"yaml", "application/yaml; charset=utf-8", "application/yaml", "YAML"},
	{"jsonp", "application/javascript; charset=utf-8", "application/javascript", "JSONP (callback(record);)"},
}

// textFields are the plain-text field endpoints: every JSON key plus ipapi.co's
// country_code (same as country) and latlong.
var textFields = func() map[string]func(*Location) string {
	m := map[string]func(*Location) string{
		"country_code": func(l *Location) string { return l.Country },
		"latlong":      func(l *Location) string { return formatCoord(l.Latitude) + "," + formatCoord(l.Longitude) },
	}
	for i := range fields {
		f := &fields[i]
		if !f.optional {
			m[f.name] = f.text
		}
	}
	return m
}()

// textFieldNames lists them in documentation order.
var textFieldNames = []string{"ip", "version", "city", "region", "country", "country_code", "country_name",
	"continent_code", "in_eu", "postal", "latitude", "longitude", "latlong", "timezone", "utc_offset"}

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
		Field string `path:"field" doc:"ip, version, city, region, country, country_code, country_name, continent_code, in_eu, postal, latitude, longitude, latlong, timezone or utc_offset" example:"city"`
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
)

// register declares every endpoint through the library, so each appears in /docs with its
// parameters and examples. gin allows one wildcard name per path position, so the first
// segment is :ip everywhere and the caller's field endpoints are static paths.
func (a *API) register() {
	const (
		notModifiedText = "Not Modified: If-None-Match matches the current ETag"
		invalidText     = `Invalid address or zone identifier: the error body adds "ip" and "reason": "Invalid IP Address"; or a JSONP callback that is not an identifier path`
	)
	notModified := map[int]string{http.StatusNotModified: notModifiedText}
	explicitResponses := map[int]string{http.StatusNotModified: notModifiedText, http.StatusBadRequest: invalidText}
	for _, f := range formats {
		var produces []string
		if f.produces != "" {
			produces = []string{f.produces}
		}
		explicit := apiserver.Operation{
			Method: http.MethodGet, URL: "/:ip/" + f.name + "/", Tags: []string{tagLookup},
			Summary:     "Location of an address as " + f.summary,
			Description: "Cache-Control: public; the ETag changes with the database. Reserved addresses answer 200 with reserved: true.",
			Produces:    produces, Responses: explicitResponses,
		}
		caller := apiserver.Operation{
			Method: http.MethodGet, URL: "/" + f.name + "/", Tags: []string{tagCaller},
			Summary:     "Location of the caller as " + f.summary,
			Description: "The caller is the TCP peer, or behind a proxy listed in TRUSTED_PROXIES the right-most untrusted X-Forwarded-For entry. Cache-Control: private.",
			Produces:    produces, Responses: notModified,
		}
		if f.name == "jsonp" {
			apiserver.Register(a.srv, explicit, func(c *apiserver.Context[struct{}], in *ipJSONPInput) (Location, error) {
				return Location{}, a.serveExplicit(c, in.IP, f, in.Callback)
			})
			apiserver.Register(a.srv, caller, func(c *apiserver.Context[struct{}], in *callerJSONPInput) (Location, error) {
				return Location{}, a.serveCaller(c, f, in.Callback)
			})
			continue
		}
		apiserver.Register(a.srv, explicit, func(c *apiserver.Context[struct{}], in *ipInput) (Location, error) {
			return Location{}, a.serveExplicit(c, in.IP, f, "")
		})
		apiserver.Register(a.srv, caller, func(c *apiserver.Context[struct{}], in *callerInput) (Location, error) {
			return Location{}, a.serveCaller(c, f, "")
		})
	}

	fieldResponses := map[int]string{
		http.StatusNotModified: notModifiedText,
		http.StatusBadRequest:  invalidText,
		http.StatusNotFound:    "No such field",
	}
	apiserver.Register(a.srv, apiserver.Operation{
		Method: http.MethodGet, URL: "/:ip/:field/", Tags: []string{tagLookup},
		Summary:     "One field of an address's location, as plain text",
		Description: "Unknown values are empty. Booleans are true/false; latlong is latitude,longitude.",
		Produces:    []string{"text/plain"}, Responses: fieldResponses,
	}, func(c *apiserver.Context[struct{}], in *ipFieldInput) (string, error) {
		get, ok := textFields[in.Field]
		if !ok {
			return "", unknownField(in.Field)
		}
		addr, err := parseAddr(in.IP)
		if err != nil {
			return "", err
		}
		return "", a.serveText(c, addr, public, get)
	})
	for _, name := range textFieldNames {
		get := textFields[name]
		apiserver.Register(a.srv, apiserver.Operation{
			Method: http.MethodGet, URL: "/" + name + "/", Tags: []string{tagCaller},
			Summary:  "The caller's " + name + ", as plain text",
			Produces: []string{"text/plain"}, Responses: notModified,
		}, func(c *apiserver.Context[struct{}], _ *callerInput) (string, error) {
			addr, err := a.callerAddr(c.Request)
			if err != nil {
				return "", err
			}
			return "", a.serveText(c, addr, private, get)
		})
	}

	apiserver.Register(a.srv, apiserver.Operation{
		Method: http.MethodPost, URL: "/batch", Tags: []string{tagLookup},
		Summary: "Locations of up to 100 addresses",
		Description: "One result per address, in order. An entry that is not an address gets " +
			`{"ip": "...", "error": true, "reason": "Invalid IP Address"} with the other fields empty; ` +
			"reserved addresses get reserved: true. More than 100 addresses is a 400.",
	}, func(c *apiserver.Context[struct{}], in *batchInput) ([]Location, error) {
		out := make([]Location, len(in.Body))
		for i, text := range in.Body {
			addr, err := lookupParse(text)
			if err != nil {
				out[i] = invalidLocation(text)
				continue
			}
			ans, err := a.resolve(addr)
			if err != nil {
				return nil, err
			}
			out[i] = ans.loc
		}
		c.Header("Cache-Control", "no-store")
		return out, nil
	})
}

func lookupParse(text string) (netip.Addr, error) {
	addr, err := parseAddr(strings.TrimSpace(text))
	return addr, err
}

func unknownField(name string) error {
	return apiserver.NotFoundError("Unknown field " + quoteClip(name) + ": use one of " + strings.Join(textFieldNames, ", ") +
		", or a format: json, xml, csv, yaml, jsonp")
}

func quoteClip(s string) string { return `"` + strings.ReplaceAll(clip(s), `"`, `\"`) + `"` }

// serveExplicit answers /{ip}/{format}/.
func (a *API) serveExplicit(c *apiserver.Context[struct{}], text string, f format, callback string) error {
	addr, err := parseAddr(text)
	if err != nil {
		return err
	}
	return a.serveRecord(c, addr, public, f, callback)
}

// serveCaller answers /{format}/ for the caller's own address.
func (a *API) serveCaller(c *apiserver.Context[struct{}], f format, callback string) error {
	addr, err := a.callerAddr(c.Request)
	if err != nil {
		return err
	}
	return a.serveRecord(c, addr, private, f, callback)
}

func (a *API) serveRecord(c *apiserver.Context[struct{}], addr netip.Addr, sc scope, f format, callback string) error {
	ans, err := a.resolve(addr)
	if err != nil {
		return err
	}
	var body []byte
	switch f.name {
	case "json":
		body = ans.json
	case "jsonp":
		body = appendJSONP(make([]byte, 0, len(ans.json)+len(callback)+8), callback, ans.json)
	case "xml":
		body = appendXML(nil, &ans.loc)
	case "csv":
		if body, err = appendCSV(nil, &ans.loc); err != nil {
			return err
		}
	case "yaml":
		body = appendYAML(nil, &ans.loc)
	}
	a.write(c, sc, ans.version, f.contentType, body)
	return nil
}

func (a *API) serveText(c *apiserver.Context[struct{}], addr netip.Addr, sc scope, get func(*Location) string) error {
	ans, err := a.resolve(addr)
	if err != nil {
		return err
	}
	a.write(c, sc, ans.version, "text/plain; charset=utf-8", []byte(get(&ans.loc)))
	return nil
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
		a.srv.WriteError(c, apiserver.NotFoundError("Route "+c.Request.Method+" "+c.Request.URL.Path+" not found"))
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
