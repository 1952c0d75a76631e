package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/tracing"
	"github.com/apistack/platform/services/geoip/internal/answer"
	"github.com/apistack/platform/services/geoip/internal/config"
	"github.com/apistack/platform/services/geoip/internal/dbfile"
	"github.com/apistack/platform/services/geoip/internal/httpapi"
	"github.com/apistack/platform/services/geoip/internal/sample"
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
	if err := srv.AddHealthDetail("databases", func() any { return databaseHealth(cfg.DBMaxAge, db, asnDB) }); err != nil {
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

// dbHealth is a database's entry in /healthz's "databases": how old the data serving is,
// and whether it is older than GEOIP_DB_MAX_AGE. Stale data still answers, so /healthz
// stays 200 and /readyz ready: the entry informs, the geoip_database_age_seconds alert acts.
type dbHealth struct {
	BuildDate  string `json:"build_date"`
	AgeDays    int    `json:"age_days"`
	MaxAgeDays int    `json:"max_age_days"`
	Stale      bool   `json:"stale"`
	Message    string `json:"message,omitempty"`
}

// databaseHealth describes the city database and, when there is one, the ASN database.
func databaseHealth(maxAge time.Duration, city, asnDB *dbfile.Manager) map[string]dbHealth {
	out := make(map[string]dbHealth, 2)
	for _, m := range []*dbfile.Manager{city, asnDB} {
		if m == nil {
			continue
		}
		age, ok := m.Age()
		if !ok {
			continue // no build date: nothing to say
		}
		h := dbHealth{
			BuildDate:  m.Info().BuildDate.Format(time.DateOnly),
			AgeDays:    int(age / (24 * time.Hour)),
			MaxAgeDays: int(maxAge / (24 * time.Hour)),
			Stale:      maxAge > 0 && age > maxAge,
		}
		switch {
		case h.Stale && m.Info().Source == sample.Source:
			h.Message = fmt.Sprintf("the embedded sample was built %d days ago: set GEOIP_DB, or GEOIP_UPDATE_SOURCE to download current data", h.AgeDays)
		case h.Stale:
			h.Message = fmt.Sprintf("the %s database was built %d days ago, more than GEOIP_DB_MAX_AGE (%d days): its updates are failing or not configured (GEOIP_UPDATE_SOURCE)",
				m.Name(), h.AgeDays, h.MaxAgeDays)
		}
		out[m.Name()] = h
	}
	return out
}
