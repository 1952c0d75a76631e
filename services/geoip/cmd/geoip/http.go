package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/services/geoip/internal/dbfile"
	"github.com/apistack/platform/services/geoip/internal/httpapi"
	"github.com/apistack/platform/services/geoip/internal/lookup"
)

// defaultPort is geoip's port when PORT is unset (DESIGN.md: the library's default is
// 3000, chat's too).
const defaultPort = 3001

// httpOptions reads the HTTP layer's own variables: GEOIP_CACHE_MAX_AGE (Cache-Control
// max-age of explicit lookups, default 1h) and GEOIP_CACHE_SIZE (answers kept in memory,
// default 65536, 0 turns the cache off).
func httpOptions(env func(string) string) (httpapi.Options, error) {
	var opts httpapi.Options
	if v := env("GEOIP_CACHE_MAX_AGE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			return opts, fmt.Errorf("GEOIP_CACHE_MAX_AGE=%q: want a duration of at least 1s, such as 1h", v)
		}
		opts.MaxAge = d
	}
	if v := env("GEOIP_CACHE_SIZE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return opts, fmt.Errorf("GEOIP_CACHE_SIZE=%q: want a count of answers, 0 to disable", v)
		}
		opts.CacheSize = n
		if n == 0 {
			opts.CacheSize = -1
		}
	}
	return opts, nil
}

// newHTTPServer builds the API server on libs/apiserver (which reads PORT, HOST,
// TRUSTED_PROXIES, CORS_ORIGIN, RATE_LIMIT_* and the rest from env) answering from db.
func newHTTPServer(db, asnDB *dbfile.Manager, env func(string) string, log *slog.Logger) (*apiserver.Server[struct{}], *httpapi.API, error) {
	opts, err := httpOptions(env)
	if err != nil {
		return nil, nil, err
	}
	cfg := apiserver.Config[struct{}]{
		APITitle:       "geoip",
		ServiceName:    "geoip",
		APIVersion:     version,
		APIDescription: httpapi.Describe(asnDB != nil),
		APITags: []apiserver.Tag{
			{Name: "lookup", Description: "Location of a given address"},
			{Name: "caller", Description: "Location of the caller's own address"},
		},
		Logger: log,
		Getenv: env,
	}
	if env("PORT") == "" {
		cfg.Port = defaultPort
	}
	srv, err := apiserver.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	var answers httpapi.DB = db
	if asnDB != nil {
		answers = &dbfile.WithASN{City: db, ASN: asnDB}
	}
	api, err := httpapi.New(srv, answers, opts)
	if err != nil {
		return nil, nil, err
	}
	if err := db.RegisterMetrics(srv.Registry()); err != nil {
		return nil, nil, fmt.Errorf("register database metrics: %w", err)
	}
	if asnDB != nil {
		if err := asnDB.RegisterMetrics(srv.Registry()); err != nil {
			return nil, nil, fmt.Errorf("register ASN database metrics: %w", err)
		}
	}
	srv.AddReadinessCheck("database", func(context.Context) error {
		if db.Info().Records <= 0 {
			return errors.New("no database loaded")
		}
		return nil
	})
	return srv, api, nil
}

// serveHTTP answers HTTP requests from db until ctx ends or SIGINT/SIGTERM, then drains.
func serveHTTP(ctx context.Context, db, asnDB *dbfile.Manager, env func(string) string, log *slog.Logger) error {
	srv, api, err := newHTTPServer(db, asnDB, env, log)
	if err != nil {
		return err
	}
	swaps, stop := db.Subscribe()
	defer stop()
	var asnSwaps <-chan lookup.Info // nil without an ASN database: never ready
	if asnDB != nil {
		ch, stopASN := asnDB.Subscribe()
		defer stopASN()
		asnSwaps = ch
	}
	go func() {
		for {
			select {
			case <-swaps:
				// Answers of the old database are never served (they carry its version);
				// dropping them frees the memory at once.
				api.Purge()
			case <-asnSwaps:
				api.Purge()
			case <-ctx.Done():
				return
			case <-srv.Done():
				return
			}
		}
	}()
	return srv.Run(ctx)
}
