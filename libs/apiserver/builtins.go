package apiserver

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	swaggerFiles "github.com/swaggo/files/v2"
	ginSwagger "github.com/swaggo/gin-swagger"
	"golang.org/x/net/webdav"
)

// registerBuiltins adds /healthz, /readyz, /metrics, /openapi.json and
// /docs, each for GET and HEAD. They are not rate limited: orchestrators
// and scrapers poll them.
func (s *Server[A]) registerBuiltins() {
	s.get("/healthz", s.healthz)
	s.get("/readyz", s.readyz)
	if s.set.metrics {
		h := promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{Registry: s.registry, ErrorLog: nil})
		s.get("/metrics", gin.WrapH(h))
	}
	openapiJSON := func(c *gin.Context) {
		b, err := s.docs.json(s.forwardedPrefix(c.Request) + "/")
		if err != nil {
			s.abortWithError(c, err)
			return
		}
		// Its length is known: a HEAD then says it too (net/http counts
		// only bodies that fit its 2 KB buffer, and never a HEAD's).
		c.Header("Content-Length", strconv.Itoa(len(b)))
		c.Data(http.StatusOK, "application/json; charset=utf-8", b)
	}
	s.get("/openapi.json", openapiJSON)
	ui := ginSwagger.WrapHandler(&webdav.Handler{FileSystem: readOnlyFS{swaggerFiles.FS}, LockSystem: webdav.NewMemLS()},
		// Relative to /docs/index.html, so it also resolves behind a proxy
		// that mounts the service under a prefix.
		ginSwagger.URL("../openapi.json"),
		ginSwagger.DocExpansion("list"),
		ginSwagger.PersistAuthorization(true),
	)
	// A relative redirect keeps whatever prefix a proxy added.
	s.get("/docs", func(c *gin.Context) { relativeRedirect(c, "docs/index.html") })
	s.get("/docs/*any", func(c *gin.Context) {
		switch c.Param("any") {
		case "/":
			relativeRedirect(c, "index.html")
			return
		case "/doc.json":
			// gin-swagger's own document, which it serves from swag's
			// registry; nothing registers there (it answered 500 with an
			// empty body), so the one document is served here too.
			openapiJSON(c)
			return
		}
		if c.Request.Method == http.MethodHead {
			// gin-swagger answers 405 to anything but GET. The response
			// still belongs to the HEAD request, so net/http drops the body.
			c.Request = c.Request.Clone(c.Request.Context())
			c.Request.Method = http.MethodGet
		}
		ui(c)
	})
}

// get routes GET and HEAD on path to h: a HEAD answers as GET does,
// without the body (RFC 9110 §9.3.2; net/http drops what h writes).
func (s *Server[A]) get(path string, h gin.HandlerFunc) {
	s.routes.Match([]string{http.MethodGet, http.MethodHead}, path, h)
}

// relativeRedirect answers 302 with a relative Location (http.Redirect
// would make it absolute and lose a proxy's prefix).
func relativeRedirect(c *gin.Context, to string) {
	c.Header("Location", to)
	// Said, not left to net/http: it counts no length for a HEAD.
	c.Header("Content-Length", "0")
	c.Status(http.StatusFound)
	c.Writer.WriteHeaderNow()
}

// forwardedPrefix is X-Forwarded-Prefix when the peer is a trusted proxy
// and the value is a clean path, else "".
func (s *Server[A]) forwardedPrefix(r *http.Request) string {
	p := r.Header.Get("X-Forwarded-Prefix")
	if p == "" || !s.clientIP.Trusted().Contains(peerAddr(r)) {
		return ""
	}
	p = "/" + strings.Trim(path.Clean("/"+p), "/")
	for _, ch := range p {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || strings.ContainsRune("/-._~", ch)) {
			return ""
		}
	}
	if p == "/" {
		return ""
	}
	return p
}

// healthz answers 200 while the process serves: liveness checks nothing
// outside it. The details added with AddHealthDetail join the body.
func (s *Server[A]) healthz(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
	s.checksMu.Lock()
	details := append([]healthDetail(nil), s.details...)
	s.checksMu.Unlock()
	body := gin.H{"status": "ok"}
	for _, d := range details {
		body[d.name] = d.detail()
	}
	c.JSON(http.StatusOK, body)
}

func (s *Server[A]) readyz(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
	if !s.ready.Load() {
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "shutting down"})
		return
	}
	s.checksMu.Lock()
	checks := append([]readinessCheck(nil), s.checks...)
	s.checksMu.Unlock()
	results := make(map[string]string, len(checks))
	ok := true
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, chk := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
			defer cancel()
			err := chk.check(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				ok = false
				results[chk.name] = "unavailable"
				s.log.Warn("readiness check failed", "check", chk.name, "err", err)
				return
			}
			results[chk.name] = "ok"
		}()
	}
	wg.Wait()
	if !ok {
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "not ready", "checks": results})
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready", "checks": results})
}

// readOnlyFS adapts an fs.FS (the Swagger UI 5 assets that swaggo/files/v2
// embeds) to the webdav.FileSystem that gin-swagger serves from; its own
// bundled UI is 4.x, which cannot show OpenAPI 3.1.
type readOnlyFS struct{ fsys fs.FS }

func (r readOnlyFS) Mkdir(context.Context, string, os.FileMode) error { return os.ErrPermission }
func (r readOnlyFS) RemoveAll(context.Context, string) error          { return os.ErrPermission }
func (r readOnlyFS) Rename(context.Context, string, string) error     { return os.ErrPermission }

func (r readOnlyFS) Stat(_ context.Context, name string) (os.FileInfo, error) {
	return fs.Stat(r.fsys, clean(name))
}

func (r readOnlyFS) OpenFile(_ context.Context, name string, flag int, _ os.FileMode) (webdav.File, error) {
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0 {
		return nil, os.ErrPermission
	}
	f, err := r.fsys.Open(clean(name))
	if err != nil {
		return nil, err
	}
	return readOnlyFile{f}, nil
}

func clean(name string) string {
	n := strings.TrimPrefix(path.Clean("/"+name), "/")
	if n == "" {
		return "."
	}
	return n
}

type readOnlyFile struct{ fs.File }

func (f readOnlyFile) Seek(offset int64, whence int) (int64, error) {
	if s, ok := f.File.(interface {
		Seek(int64, int) (int64, error)
	}); ok {
		return s.Seek(offset, whence)
	}
	return 0, errors.New("seek not supported")
}

func (f readOnlyFile) Readdir(int) ([]fs.FileInfo, error) { return nil, os.ErrPermission }
func (f readOnlyFile) Write([]byte) (int, error)          { return 0, os.ErrPermission }
