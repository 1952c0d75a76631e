package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/apistack/platform/libs/apiserver"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/config"
	"github.com/apistack/platform/services/chat/internal/httpapi"
	"github.com/apistack/platform/services/chat/internal/memory"
	"github.com/apistack/platform/services/chat/internal/realtime"
	"github.com/apistack/platform/services/chat/internal/redisstore"
	"github.com/apistack/platform/services/chat/web"
)

// newHTTPServer builds the API server from the environment (PORT, HOST,
// RATE_LIMIT_*, CORS_ORIGIN, REDIS_URL, ... as DESIGN.md lists). It is
// built before the engine: with REDIS_URL, the Redis engine runs on the
// server's client, so requests use one pool. Set the returned
// Authenticator's Service before the server starts.
func newHTTPServer(cfg config.Config, log *slog.Logger, getenv func(string) string) (*apiserver.Server[chat.User], *httpapi.Authenticator, error) {
	auth := &httpapi.Authenticator{}
	srv, err := apiserver.New(apiserver.Config[chat.User]{
		APITitle:       "Chat API",
		ServiceName:    "chat",
		APIVersion:     version,
		APIDescription: httpapi.Description(cfg.PublicRead),
		APITags:        httpapi.Tags(),
		TokenValidator: auth.Validate,
		Logger:         log,
		Getenv:         getenv,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("http server: %w", err)
	}
	return srv, auth, nil
}

// openStore opens the engine: memory, or Redis on the server's client (one
// server, Sentinel or Cluster, as REDIS_URL says). Live delivery needs no
// pool of its own: it reads every channel through one Pub/Sub connection
// and short non-blocking reads (internal/realtime/doc.go).
func openStore(ctx context.Context, cfg config.Config, srv *apiserver.Server[chat.User]) (chat.Store, error) {
	if cfg.RedisURL == "" {
		return memory.New(cfg.History), nil
	}
	store := redisstore.New(srv.Redis(), redisstore.Options{History: cfg.History})
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := store.Ping(ctx); err != nil {
		return nil, fmt.Errorf("open redis engine: %w", err)
	}
	return store, nil
}

// serveHTTP declares the API (and live delivery) on the app's server and
// serves until ctx ends or SIGINT/SIGTERM, draining in-flight requests.
func serveHTTP(ctx context.Context, app *App, getenv func(string) string) error {
	if _, err := httpapi.Register(app.HTTP, app.Service); err != nil {
		return err
	}
	app.HTTP.AddReadinessCheck("chat store", app.Service.Ready)
	limits, err := realtime.LimitsFromEnv(getenv)
	if err != nil {
		return err
	}
	if _, err := realtime.Mount(app.HTTP, app.Service, realtime.Options{Logger: app.Log, Limits: &limits}); err != nil {
		return fmt.Errorf("live delivery: %w", err)
	}
	web.Mount(app.HTTP.Instance())
	app.Log.Info("chat api ready", "engine", app.Config.Engine(), "public_read", app.Config.PublicRead, "send_limit", app.Config.SendLimit.String())
	return app.HTTP.Run(ctx)
}
