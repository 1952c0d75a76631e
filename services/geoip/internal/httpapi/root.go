package httpapi

import (
	"html/template"
	"net/http"
	"sort"
	"strings"

	"github.com/gin-gonic/gin"
)

// The service's root, GET / (/geoip/ behind the compose proxy): an index naming the
// endpoints, the docs and the health checks, so that the address a person or the proxy's
// own page points at answers something useful. Every link is relative ("./docs"), so it
// resolves under whatever prefix a proxy mounted the service at, without trusting any
// header. JSON for API clients (curl's */* included), HTML for browsers.

// rootIndex is the JSON form.
type rootIndex struct {
	Service     string   `json:"service"`
	Description string   `json:"description"`
	Docs        string   `json:"docs"`
	OpenAPI     string   `json:"openapi"`
	Health      string   `json:"health"`
	Ready       string   `json:"ready"`
	Endpoints   []string `json:"endpoints"`
	Note        string   `json:"note"`
}

var rootPage = template.Must(template.New("root").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Service}}</title>
<style>body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;line-height:1.5}code{background:#f3f3f3;padding:0 .2em}</style>
</head><body>
<h1>{{.Service}}</h1>
<p>{{.Description}}</p>
<p><a href="{{.Docs}}">API docs</a> (Swagger UI) · <a href="{{.OpenAPI}}">openapi.json</a> · <a href="{{.Health}}">healthz</a> · <a href="{{.Ready}}">readyz</a></p>
<p>Try <a href="./8.8.8.8/json/"><code>8.8.8.8/json/</code></a> or <a href="./json/"><code>json/</code></a> (your own address).</p>
<h2>Endpoints</h2>
<ul>{{range .Endpoints}}<li><code>{{.}}</code></li>{{end}}</ul>
<p><small>{{.Note}}</small></p>
</body></html>
`))

// registerRoot serves the index. The endpoint list is the library's list of documented
// operations, read when asked, so it always matches openapi.json.
func (a *API) registerRoot() {
	engine := a.srv.Instance()
	serve := func(c *gin.Context) {
		idx := rootIndex{
			Service:     "geoip",
			Description: "Location of IPv4 and IPv6 addresses, with ipapi.co's URL grammar.",
			Docs:        "./docs",
			OpenAPI:     "./openapi.json",
			Health:      "./healthz",
			Ready:       "./readyz",
			Endpoints:   endpointList(a.srv.Endpoints()),
			Note:        "Links are relative to this page. IP Geolocation by DB-IP (https://db-ip.com, CC BY 4.0) when serving DB-IP data.",
		}
		c.Header("Cache-Control", "no-cache")
		c.Header("Vary", "Accept")
		if c.NegotiateFormat(gin.MIMEJSON, gin.MIMEHTML) == gin.MIMEHTML {
			c.Status(http.StatusOK)
			c.Header("Content-Type", "text/html; charset=utf-8")
			if err := rootPage.Execute(c.Writer, idx); err != nil {
				_ = c.Error(err)
			}
			return
		}
		c.JSON(http.StatusOK, idx)
	}
	engine.GET("/", serve)
	engine.HEAD("/", serve)
}

// endpointList sorts "GET /{ip}/json/" lines by path, then method.
func endpointList(endpoints []string) []string {
	path := func(e string) string { return e[strings.IndexByte(e, ' ')+1:] }
	sort.Slice(endpoints, func(i, j int) bool {
		if pi, pj := path(endpoints[i]), path(endpoints[j]); pi != pj {
			return pi < pj
		}
		return endpoints[i] < endpoints[j]
	})
	return endpoints
}
