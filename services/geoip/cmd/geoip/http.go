package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/tracing"
	"github.com/apistack/platform/services/geoip/internal/answer"
	"github.com/apistack/platform/services/geoip/internal/config"
	"github.com/apistack/platform/services/geoip/internal/dbfile"
	"github.com/apistack/platform/services/geoip/internal/httpapi"
)

// httpDeps are what serve made before the HTTP server.
type httpDeps struct {
	Log *slog.Logger
	// Registry is where the databases registered their metrics; /metrics
	// serves it (nil: a new one, for tests).
	Registry *prometheus.Registry
	// Redis holds the rate-limit counters (nil: in memory); serve owns it.
	Redis redis.UniversalClient
	// Keys are GEOIP_KEYS_FILE's (nil when unset).
	Keys *httpapi.Keys
	// Tracing is the OTEL_* tracing (nil: off); the server flushes it on Stop.
	Tracing *tracing.Provider
}

// newHTTPServer builds the API server on libs/apiserver with the settings cfg loaded (the
// library's variables among them: it reads no environment of its own), and
// the answer engine it serves, answering from db (and asnDB when there is one).
func newHTTPServer(cfg config.Config, db, asnDB *dbfile.Manager, deps httpDeps) (*apiserver.Server[struct{}], *answer.Engine, error) {
	srv, err := apiserver.New(apiserver.Config[struct{}]{
		Settings:       &cfg.Settings,
		Redis:          deps.Redis,
		Tracing:        deps.Tracing,
		Registry:       deps.Registry,
		APITitle:       "geoip",
		ServiceName:    "geoip",
		APIVersion:     version,
		APIDescription: httpapi.Describe(asnDB != nil),
		APITags: []apiserver.Tag{
			{Name: "lookup", Description: "Location of a given address"},
			{Name: "caller", Description: "Location of the caller's own address"},
		},
		Logger: deps.Log,
	})
	if err != nil {
		return nil, nil, err
	}
	var src answer.Source = db
	if asnDB != nil {
		src = &dbfile.WithASN{City: db, ASN: asnDB}
	}
	answers := answer.New(src, answer.Options{CacheSize: cfg.CacheSize})
	if _, err := httpapi.New(srv, answers, httpapi.Options{MaxAge: cfg.CacheMaxAge, Keys: deps.Keys}); err != nil {
		return nil, nil, err
	}
	srv.AddReadinessCheck("database", func(context.Context) error {
		if db.Info().Records <= 0 {
			return errors.New("no database loaded")
		}
		return nil
	})
	return srv, answers, nil
}
