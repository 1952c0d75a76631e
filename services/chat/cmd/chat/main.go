// Command chat is the chat service: `chat serve` (the default) runs it,
// `chat healthcheck` probes a running one (Docker images have no shell)
// and `chat token` prints a development platform token (usage.go).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/redisconn"
	"github.com/apistack/platform/libs/apiserver/tracing"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/config"
	"github.com/apistack/platform/services/chat/internal/httpapi"
	"github.com/apistack/platform/services/chat/internal/jwtidentity"
	"github.com/apistack/platform/services/chat/internal/sendhook"
	"github.com/apistack/platform/services/chat/internal/webhooks"
)

// version is the build's version, set with -ldflags "-X main.version=...";
// it is the API version shown in /docs.
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chat:", err)
		os.Exit(1)
	}
}

// run is the whole program behind main, so a test can drive it with its
// own arguments, environment and context.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	case "token":
		return token(args, getenv, stdout, stderr)
	}
	if len(args) == 1 && (cmd == "serve" || cmd == "healthcheck") {
		switch args[0] {
		case "-h", "-help", "--help":
			fmt.Fprint(stdout, usage)
			return nil
		}
	}
	if len(args) > 0 {
		return fmt.Errorf("%s takes no arguments (configuration comes from the environment), got %q; see chat --help", cmd, args)
	}
	switch cmd {
	case "serve":
		return serve(ctx, getenv, stdout)
	case "healthcheck":
		return healthcheck(ctx, getenv)
	}
	return fmt.Errorf("unknown subcommand %q (want serve, healthcheck, token or help)", cmd)
}

// App is the wired service, built in one direction: settings, then
// connections, store, service, authenticator and the HTTP server, each
// from what came before it.
type App struct {
	Config config.Config
	Log    *slog.Logger
	// Redis is the one client of the process (nil with the memory
	// engine): the store, the send limit, presence and the library's
	// rate-limit counters share its pool. App closes it last.
	Redis redis.UniversalClient
	// Tracing sends traces when OTEL_EXPORTER_OTLP_ENDPOINT is set (nil: off),
	// Redis's commands included; HTTP.Stop flushes it.
	Tracing *tracing.Provider
	Store   chat.Store
	// Feed tells live delivery what the store appended (the engine's own).
	Feed    chat.FeedSource
	Service *chat.Service
	Admin   chat.User
	HTTP    *apiserver.Server[chat.User] // cmd/chat/http.go
	// Webhooks manages the webhooks (the endpoints' side); their
	// dispatcher runs from build to Close.
	Webhooks *webhooks.Manager

	// stopWebhooks ends the dispatcher and waits for its deliveries.
	stopWebhooks func()

	// stopRepair ends the engine's own background work and waits for it
	// (nil when it has none; see openStore).
	stopRepair func()
	// stopKeys ends the background JWKS refresh (nil without platform
	// tokens).
	stopKeys func()
}

// Close stops the server (a no-op once it has stopped) and the engine's
// background work, then releases the engine and the connection they ran
// on.
func (a *App) Close() error {
	errs := []error{a.HTTP.Stop(context.Background())}
	if a.stopWebhooks != nil {
		a.stopWebhooks()
	}
	if a.stopRepair != nil {
		a.stopRepair()
	}
	if a.stopKeys != nil {
		a.stopKeys()
	}
	errs = append(errs, a.Store.Close())
	if a.Redis != nil {
		errs = append(errs, a.Redis.Close())
	}
	return errors.Join(errs...)
}

// build reads the configuration, opens the connection and the engine,
// bootstraps the admin and builds the HTTP server on them.
func build(ctx context.Context, getenv func(string) string, logw io.Writer) (app *App, err error) {
	cfg, err := config.Load(getenv)
	if err != nil {
		return nil, err
	}
	app = &App{Config: cfg, Log: apiserver.NewLogger(cfg.Settings, logw)}
	// Whatever fails below, what was opened so far is released.
	var closers []func() error
	defer func() {
		if err != nil {
			for i := len(closers) - 1; i >= 0; i-- {
				_ = closers[i]()
			}
		}
	}()
	tp, err := tracing.Setup(ctx, cfg.Settings.Tracing, tracing.Options{ServiceName: "chat", ServiceVersion: version, Logger: app.Log})
	if err != nil {
		return nil, err
	}
	app.Tracing = tp
	closers = append(closers, func() error { return tp.Shutdown(context.Background()) })
	if cfg.Settings.RedisURL != "" {
		if app.Redis, err = redisconn.OpenWith(cfg.Settings.RedisURL, redisconn.Options{NoRetry: true}); err != nil {
			return nil, err
		}
		closers = append(closers, app.Redis.Close)
		// Before the store, the limiter and presence share it: their commands on a
		// request's context become its child spans.
		if err = app.Tracing.InstrumentRedis(app.Redis); err != nil {
			return nil, err
		}
	}
	eng, err := openStore(ctx, cfg, app.Redis)
	if err != nil {
		return nil, err
	}
	app.Store, app.Feed = eng.store, eng.feed
	closers = append(closers, app.Store.Close)
	if eng.repair != nil {
		app.stopRepair = runUntilStopped(eng.repair)
		closers = append(closers, func() error { app.stopRepair(); return nil })
	}
	identities, err := cfg.JWT.Verifier()
	if err != nil {
		return nil, fmt.Errorf("platform tokens: %w", err)
	}
	if identities != nil {
		// The JWKS is fetched now and kept fresh in the background, so no
		// token waits on (or can be starved of) a fetch of its own.
		stopKeys := runUntilStopped(identities.Refresh)
		app.stopKeys = stopKeys
		closers = append(closers, func() error { stopKeys(); return nil })
	}
	opts := chat.Options{PublicRead: cfg.PublicRead, Logger: app.Log, Limits: cfg.Limits, SendLimit: cfg.SendLimit, Identities: jwtidentity.New(identities), ClosedChannels: !cfg.OpenChannels}
	if cfg.SendHook.URL != "" {
		if opts.SendHook, err = sendhook.New(cfg.SendHook.URL, cfg.SendHook.Secret, cfg.SendHook.Timeout); err != nil {
			return nil, err
		}
		opts.SendHookFailOpen = cfg.SendHook.FailOpen
	}
	app.Service = chat.NewService(app.Store, opts)
	if err := app.startWebhooks(); err != nil {
		return nil, err
	}
	closers = append(closers, func() error { app.stopWebhooks(); return nil })
	if app.Admin, err = app.Service.Bootstrap(ctx, cfg.AdminToken); err != nil {
		return nil, fmt.Errorf("bootstrap CHAT_ADMIN_TOKEN: %w", err)
	}
	if app.HTTP, err = newHTTPServer(cfg, app.Log, httpapi.NewAuthenticator(app.Service), app.Redis, app.Tracing); err != nil {
		return nil, err
	}
	return app, nil
}

func serve(ctx context.Context, getenv func(string) string, logw io.Writer) error {
	app, err := build(ctx, getenv, logw)
	if err != nil {
		return err
	}
	defer app.Close()
	app.Log.Info("chat starting", "config", app.Config, "admin_user", app.Admin.ID)
	if app.Config.AdminTokenGenerated {
		// Development only: config refuses a missing token in production.
		app.Log.Warn("CHAT_ADMIN_TOKEN not set; generated a development token for the broadcaster", "token", app.Config.AdminToken)
	}
	err = serveHTTP(ctx, app) // cmd/chat/http.go: the API, then live delivery
	app.Log.Info("chat stopped")
	return err
}

// healthcheck asks the local /healthz and succeeds on 200; the port is
// PORT or chat's default, read by the same rules as serve's.
func healthcheck(ctx context.Context, getenv func(string) string) error {
	settings, err := config.LoadSettings(getenv)
	if err != nil {
		return err
	}
	return apiserver.CheckHealth(ctx, settings)
}
