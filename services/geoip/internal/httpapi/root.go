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

// builtinPaths are the library's own routes: linked by name, not listed as endpoints
// (/metrics is for the scraper on the internal network, so not linked at all).
var builtinPaths = map[string]bool{
	"/": true, "/healthz": true, "/readyz": true, "/metrics": true,
	"/openapi.json": true, "/docs": true, "/docs/*any": true,
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

// registerRoot serves the index. The endpoint list is read from the engine's routes when
// asked, so it always matches what is registered.
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
			Endpoints:   endpointList(engine.Routes()),
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

// endpointList turns gin's routes into "GET /{ip}/json/" lines, sorted by path.
func endpointList(routes gin.RoutesInfo) []string {
	var out []string
	for _, r := range routes {
		if builtinPaths[r.Path] || r.Method == http.MethodHead || r.Method == http.MethodOptions {
			continue
		}
		segs := strings.Split(r.Path, "/")
		for i, s := range segs {
			if strings.HasPrefix(s, ":") || strings.HasPrefix(s, "*") {
				segs[i] = "{" + s[1:] + "}"
			}
		}
		out = append(out, r.Method+" "+strings.Join(segs, "/"))
	}
	sort.Slice(out, func(i, j int) bool {
		pi, pj := out[i][strings.IndexByte(out[i], ' ')+1:], out[j][strings.IndexByte(out[j], ' ')+1:]
		if pi != pj {
			return pi < pj
		}
		return out[i] < out[j]
	})
	return out
}
