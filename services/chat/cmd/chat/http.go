package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/tracing"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/config"
	"github.com/apistack/platform/services/chat/internal/httpapi"
	"github.com/apistack/platform/services/chat/internal/memory"
	"github.com/apistack/platform/services/chat/internal/realtime"
	"github.com/apistack/platform/services/chat/internal/realtime/redispresence"
	"github.com/apistack/platform/services/chat/internal/redisstore"
	"github.com/apistack/platform/services/chat/web"
)

// newHTTPServer builds the API server on the settings config loaded (the
// library's RATE_LIMIT_*, CORS_ORIGIN, TRUSTED_PROXIES, ... among them: it
// reads no environment of its own) with the process's Redis client for the
// rate-limit counters, and the process's tracing (nil: off), which Stop flushes.
func newHTTPServer(cfg config.Config, log *slog.Logger, auth *httpapi.Authenticator, rdb redis.UniversalClient, tp *tracing.Provider) (*apiserver.Server[chat.User], error) {
	srv, err := apiserver.New(apiserver.Config[chat.User]{
		Settings:       &cfg.Settings,
		Redis:          rdb,
		Tracing:        tp,
		APITitle:       "Chat API",
		ServiceName:    "chat",
		APIVersion:     version,
		APIDescription: httpapi.Description(cfg.PublicRead),
		APITags:        httpapi.Tags(),
		TokenValidator: auth.Validate,
		AcceptsJWT:     cfg.JWT.Enabled(),
		Logger:         log,
	})
	if err != nil {
		return nil, fmt.Errorf("http server: %w", err)
	}
	return srv, nil
}

// engine is what openStore opened: the store, its feed for live delivery,
// and the engine's own background work (nil for none), which runs for as
// long as the process does, whether or not a hub serves sockets.
type engine struct {
	store  chat.Store
	feed   chat.FeedSource
	repair func(context.Context)
}

// openStore opens the engine: memory, or Redis on the process's client
// (one server, Sentinel or Cluster, as REDIS_URL says). Live delivery
// needs no pool of its own: it reads every channel through one Pub/Sub
// connection and short non-blocking reads (internal/realtime/doc.go). On
// a Redis Cluster the engine repairs moderation events left pending
// (internal/redisstore/pending.go).
func openStore(ctx context.Context, cfg config.Config, rdb redis.UniversalClient) (engine, error) {
	if rdb == nil {
		store := memory.New(cfg.History)
		return engine{store: store, feed: store}, nil
	}
	store := redisstore.New(rdb, redisstore.Options{History: cfg.History})
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := store.Ping(ctx); err != nil {
		return engine{}, fmt.Errorf("open redis engine: %w", err)
	}
	return engine{store: store, feed: store, repair: store.RepairPending}, nil
}

// runUntilStopped runs fn in a goroutine until stop is called; stop waits
// for it to return.
func runUntilStopped(fn func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(ctx)
	}()
	return func() { cancel(); <-done }
}

// serveHTTP declares the API (and live delivery) on the app's server and
// serves until ctx ends or SIGINT/SIGTERM, draining in-flight requests.
func serveHTTP(ctx context.Context, app *App) error {
	if _, err := httpapi.Register(app.HTTP, app.Service); err != nil {
		return err
	}
	if err := httpapi.RegisterWebhooks(app.HTTP, app.Webhooks); err != nil {
		return err
	}
	app.HTTP.AddReadinessCheck("chat store", app.Service.Ready)
	opts := realtime.Options{Logger: app.Log, Limits: &app.Config.Sockets, Writers: app.Config.Writers}
	if app.Redis != nil {
		opts.Presence = redispresence.New(app.Redis, "", 0)
	}
	if _, err := realtime.Mount(app.HTTP, app.Service, realtime.Sources{Feed: app.Feed, Users: app.Store}, opts); err != nil {
		return fmt.Errorf("live delivery: %w", err)
	}
	web.Mount(app.HTTP.Instance(), web.Options{EmbedOrigins: app.Config.EmbedOrigins})
	app.Log.Info("chat api ready", "engine", app.Config.Engine(), "public_read", app.Config.PublicRead, "send_limit", app.Config.SendLimit.String())
	return app.HTTP.Run(ctx)
}
