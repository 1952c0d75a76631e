// Package apiserver runs an HTTP API on gin whose endpoints are declared
// with Go types: query, path, header and body inputs and the response are
// schemas derived once from struct tags, used to coerce and validate every
// request and result and to publish OpenAPI 3.1 with Swagger UI at /docs.
// It adds bearer-token auth with a typed context, rate limiting shared
// through Redis, CORS, Prometheus metrics, health checks and graceful
// shutdown. It is the Go form of a Fastify + Zod library; see README.md.
package apiserver

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver/clientip"
	"github.com/apistack/platform/libs/apiserver/internal/schema"
	"github.com/apistack/platform/libs/apiserver/ratelimit"
	"github.com/apistack/platform/libs/apiserver/tracing"
)

// Server is an API server whose authenticated handlers see an auth context
// of type A (use struct{} when there is none).
type Server[A any] struct {
	cfg Config[A]
	set settings
	log *slog.Logger

	engine     *gin.Engine
	ownsEngine bool
	routes     gin.IRoutes // where endpoints go: the engine, or a group with our middleware
	// routeLabels maps the gin routes of endpoints registered once per value of a
	// parameter (Operation.PathValues) to their template, the route label of metrics
	// and logs. Written only while registering, before serving.
	routeLabels map[string]string
	// errorMaps: the ErrorMap of each route whose operation has one, for a panic's 500
	// and a 405 on such a route's path.
	errorMaps routeErrorMaps

	registry *prometheus.Registry
	metrics  *httpMetrics
	schemas  *schema.Registry
	docs     *openAPI

	clientIP *clientip.Resolver
	limiter  ratelimit.Limiter
	// redisLimited: the counters live in Redis. ownRedis is the client
	// the library opened itself from REDIS_URL (no Config.Redis), closed
	// on Stop.
	redisLimited bool
	ownRedis     redis.UniversalClient
	tokenHash    []byte
	ident        identityState // usage counts of identity limits (identity.go)
	// tracing is nil when tracing is off: the request path then checks only that.
	tracing *tracing.Provider

	checksMu sync.Mutex
	checks   []readinessCheck
	details  []healthDetail // guarded by checksMu
	ready    atomic.Bool

	mu         sync.Mutex
	started    bool
	httpServer *http.Server
	listener   net.Listener
	serveErr   chan error
	done       chan struct{}
	closers    []func() error
	stopOnce   sync.Once
	stopErr    error
}

type readinessCheck struct {
	name  string
	check func(context.Context) error
}

type healthDetail struct {
	name   string
	detail func() any
}

// New builds a server from cfg, the environment and defaults. An invalid
// setting is an error that names the variable.
func New[A any](cfg Config[A]) (*Server[A], error) {
	set, err := resolve(&cfg)
	if err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	s := &Server[A]{cfg: cfg, set: set, schemas: schema.NewRegistry(), done: make(chan struct{}), routeLabels: map[string]string{}}
	s.log = cfg.Logger
	if s.log == nil {
		s.log = NewLogger(set.common, os.Stderr)
	}
	s.clientIP = clientip.NewResolverFromSet(set.trusted)
	if tok := set.common.APIToken; tok != "" {
		h := sha256.Sum256([]byte(tok))
		s.tokenHash = h[:]
	}

	s.registry = cfg.Registry
	if s.registry == nil {
		s.registry = NewRegistry()
	}
	s.metrics = newHTTPMetrics(s.registry)

	// With Settings given, the environment is the service's to read: its
	// tracing is the provider it passed, or none.
	if s.tracing = cfg.Tracing; s.tracing == nil && cfg.Settings == nil {
		s.tracing, err = tracing.Setup(context.Background(), set.common.Tracing, tracing.Options{
			ServiceName: cfg.ServiceName, ServiceVersion: set.version, Logger: s.log})
		if err != nil {
			return nil, fmt.Errorf("invalid configuration: %w", err)
		}
	}
	if err := s.setupLimiter(); err != nil {
		if cfg.Tracing == nil {
			_ = s.tracing.Shutdown(context.Background())
		}
		return nil, err
	}
	if s.redisLimited {
		s.limiter = s.tracing.Limiter(s.limiter)
		if err := s.tracing.InstrumentRedis(s.ownRedis); err != nil {
			_ = s.closeOwnRedis()
			if cfg.Tracing == nil {
				_ = s.tracing.Shutdown(context.Background())
			}
			return nil, err
		}
	}

	if cfg.Engine != nil {
		s.engine = cfg.Engine
		s.routes = s.engine.Group("/", s.commonMiddleware()...)
	} else {
		// gin's debug mode prints routes on stdout; our own logs say
		// what is served, so keep gin quiet in every environment.
		gin.SetMode(gin.ReleaseMode)
		s.engine = gin.New()
		s.ownsEngine = true
		// gin believes X-Forwarded-For from everyone by default; the
		// client address comes from our resolver instead.
		_ = s.engine.SetTrustedProxies(nil)
		s.engine.ForwardedByClientIP = false
		s.engine.HandleMethodNotAllowed = true
		s.engine.ContextWithFallback = true
		s.engine.Use(s.commonMiddleware()...)
		s.engine.NoRoute(func(c *gin.Context) {
			s.abortWithError(c, NewError(http.StatusNotFound, fmt.Sprintf("Route %s %s not found", c.Request.Method, c.Request.URL.Path)))
		})
		s.engine.NoMethod(func(c *gin.Context) {
			// The route the path matched under another method gives the body: a POST to a
			// lookup of an API with an ErrorMap answers in that API's shape.
			s.answerError(c, NewError(http.StatusMethodNotAllowed, fmt.Sprintf("Method %s is not allowed on %s", c.Request.Method, c.Request.URL.Path)),
				s.errorMaps.ofOtherMethods(s.engine, c.Request.Method, c.Request.URL.Path))
		})
		s.routes = s.engine
	}
	s.docs = newOpenAPI(s.set, s.schemas)
	s.docs.methodNotAllowed = s.ownsEngine
	s.registerBuiltins()
	s.ready.Store(true)
	return s, nil
}

// Instance is the underlying gin engine, to add hooks, middleware or routes.
func (s *Server[A]) Instance() *gin.Engine { return s.engine }

// Handler is the server as an http.Handler (for httptest or a custom
// server). It drops X-Forwarded-Prefix from peers that are not trusted
// proxies before gin sees it: gin builds trailing-slash redirects from
// that header whoever sent it.
func (s *Server[A]) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Header["X-Forwarded-Prefix"]; ok && !s.clientIP.Trusted().Contains(peerAddr(r)) {
			r.Header.Del("X-Forwarded-Prefix")
		}
		s.engine.ServeHTTP(w, r)
	})
}

// Endpoints lists the operations openapi.json describes (those registered with Register
// and not Hidden) as "GET /items/{id}", in the order registered: an endpoint registered
// once per value of a parameter (Operation.PathValues) is one entry, with its template.
func (s *Server[A]) Endpoints() []string { return s.docs.endpoints() }

// Logger is the server's structured logger.
func (s *Server[A]) Logger() *slog.Logger { return s.log }

// Registry is the Prometheus registry served at /metrics; applications add
// their own collectors to it.
func (s *Server[A]) Registry() *prometheus.Registry { return s.registry }

// Production reports whether the server runs in production mode.
func (s *Server[A]) Production() bool { return s.set.production }

// ClientIP is the caller's address resolved through TRUSTED_PROXIES.
func (s *Server[A]) ClientIP(r *http.Request) string { return s.clientIP.ResolveRequest(r).String() }

// ClientKey names the caller as the rate limiter counts it: its address
// resolved through TRUSTED_PROXIES, an IPv6 one cut to its prefix
// (RATE_LIMIT_IPV6_PREFIX, /64 by default) and written as
// "2001:db8:1:2::/64". Per-client limits of an application's own (the
// chat's sockets per address) use it, so that one subscriber's /64 is one
// client there too.
func (s *Server[A]) ClientKey(r *http.Request) string {
	return string(s.limiterKey(nil, s.clientIP.ResolveRequest(r)))
}

// ClientResolver resolves caller addresses through TRUSTED_PROXIES.
func (s *Server[A]) ClientResolver() *clientip.Resolver { return s.clientIP }

// CORSOrigins are the configured allowed origins ("*" or explicit ones).
func (s *Server[A]) CORSOrigins() []string { return append([]string(nil), s.set.corsOrigins...) }

// AddReadinessCheck adds a dependency check run by /readyz.
func (s *Server[A]) AddReadinessCheck(name string, check func(context.Context) error) {
	s.checksMu.Lock()
	defer s.checksMu.Unlock()
	s.checks = append(s.checks, readinessCheck{name: name, check: check})
}

// AddHealthDetail adds a key to /healthz's body, whose value detail returns
// at each request (it must be quick and must not block: liveness probes
// call it). The status stays 200 and "status" stays "ok": a detail
// informs (a database older than wanted, say), it never makes the process
// look dead. A name already taken, or "status", is refused.
func (s *Server[A]) AddHealthDetail(name string, detail func() any) error {
	s.checksMu.Lock()
	defer s.checksMu.Unlock()
	if name == "status" || name == "" {
		return fmt.Errorf("apiserver: health detail name %q is reserved", name)
	}
	for _, d := range s.details {
		if d.name == name {
			return fmt.Errorf("apiserver: health detail %q added twice", name)
		}
	}
	s.details = append(s.details, healthDetail{name, detail})
	return nil
}

// OnShutdown registers a function run when the server stops, after it
// stops accepting requests (close WebSockets, flush queues). Functions run
// in reverse order of registration; the library's own Redis client (see
// Config.RedisURL) is closed after all of them.
func (s *Server[A]) OnShutdown(f func() error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closers = append(s.closers, f)
}

// Addr is the address the server listens on, once started.
func (s *Server[A]) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener == nil {
		return ""
	}
	return s.listener.Addr().String()
}

// Start listens on the configured host and port and serves in the
// background; it returns once the port is bound. With a caller-supplied
// engine it only marks the server started: the caller listens.
func (s *Server[A]) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("server is already started")
	}
	s.started = true
	s.warnUnprotectedAuth()
	if !s.ownsEngine {
		s.log.Info("routes attached to the caller's engine", "docs", "/docs", "settings", s.set.common,
			"rate_limit_store", s.limiterKind(), "tracing", s.tracing.String())
		return nil
	}
	addr := net.JoinHostPort(s.set.common.Host, strconv.Itoa(s.set.common.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		s.started = false
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	s.listener = ln
	s.httpServer = &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.set.timeouts.readHeader,
		ReadTimeout:       s.set.timeouts.read,
		WriteTimeout:      s.set.timeouts.write,
		IdleTimeout:       s.set.timeouts.idle,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.serveErr = make(chan error, 1)
	go func() {
		err := s.httpServer.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.serveErr <- err
	}()
	host := ln.Addr().String()
	// Every resolved setting on one line (secrets masked by Settings.LogValue),
	// so a deployment's effective configuration is read off its first log.
	s.log.Info("server listening", "addr", host, "docs", "http://"+host+"/docs", "settings", s.set.common,
		"rate_limit_store", s.limiterKind(), "tracing", s.tracing.String())
	return nil
}

// Stop stops the server: readiness turns false, the listener closes,
// in-flight requests finish within ShutdownTimeout (or ctx), shutdown
// hooks run, then the Redis client the library opened itself closes
// (never Config.Redis), and the spans still queued are exported within
// what is left of ShutdownTimeout. A caller-supplied engine is not closed.
// Calling Stop again returns the first result.
func (s *Server[A]) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		s.ready.Store(false)
		s.mu.Lock()
		srv, closers := s.httpServer, s.closers
		s.mu.Unlock()
		var errs []error
		// One budget for draining and for flushing the spans that draining ended.
		ctx, cancel := context.WithTimeout(ctx, s.set.shutdownTimeout)
		defer cancel()
		if srv != nil {
			if err := srv.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("drain in-flight requests: %w", err))
				_ = srv.Close()
			}
			if err := <-s.serveErr; err != nil {
				errs = append(errs, err)
			}
		}
		for i := len(closers) - 1; i >= 0; i-- {
			if err := closers[i](); err != nil {
				errs = append(errs, err)
			}
		}
		if err := s.closeOwnRedis(); err != nil {
			errs = append(errs, fmt.Errorf("close redis: %w", err))
		}
		if err := s.tracing.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
		s.stopErr = errors.Join(errs...)
		close(s.done)
		s.log.Info("server stopped")
	})
	return s.stopErr
}

// Done is closed when Stop has finished.
func (s *Server[A]) Done() <-chan struct{} { return s.done }

// SetupGracefulShutdown stops the server on SIGINT or SIGTERM, draining
// in-flight requests within ShutdownTimeout. The returned function undoes
// the signal handling.
func (s *Server[A]) SetupGracefulShutdown() (cancel func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	quit := make(chan struct{})
	go func() {
		defer signal.Stop(sigs)
		select {
		case sig := <-sigs:
			s.log.Info("shutting down", "signal", sig.String(), "deadline", s.set.shutdownTimeout)
			if err := s.Stop(context.Background()); err != nil {
				s.log.Error("shutdown", "err", err)
			}
		case <-quit:
		case <-s.done:
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(quit) }) }
}

// Run starts the server, stops it on SIGINT/SIGTERM or when ctx ends, and
// returns when it has stopped: the usual body of a service's main.
func (s *Server[A]) Run(ctx context.Context) error {
	if err := s.Start(); err != nil {
		return err
	}
	undo := s.SetupGracefulShutdown()
	defer undo()
	select {
	case <-ctx.Done():
		return s.Stop(context.Background())
	case err := <-s.serveFailure():
		_ = s.Stop(context.Background())
		return err
	case <-s.done:
		return s.stopErr
	}
}

// serveFailure yields an error if Serve fails on its own (not by Stop).
func (s *Server[A]) serveFailure() <-chan error {
	out := make(chan error, 1)
	if s.serveErr == nil {
		return out
	}
	go func() {
		select {
		case err := <-s.serveErr:
			s.serveErr <- err // let Stop read it too
			if err != nil {
				out <- err
			}
		case <-s.done:
		}
	}()
	return out
}
