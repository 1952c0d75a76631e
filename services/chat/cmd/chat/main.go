// Command chat is the chat service: `chat serve` (the default) runs it and
// `chat healthcheck` probes a running one (Docker images have no shell).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/apistack/platform/libs/apiserver"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/config"
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
	if len(args) > 0 {
		return fmt.Errorf("%s takes no arguments (configuration comes from the environment), got %q", cmd, args)
	}
	switch cmd {
	case "serve":
		return serve(ctx, getenv, stdout)
	case "healthcheck":
		return healthcheck(ctx, getenv)
	case "help", "-h", "--help":
		fmt.Fprintln(stderr, "usage: chat [serve|healthcheck]")
		return nil
	}
	return fmt.Errorf("unknown subcommand %q (want serve or healthcheck)", cmd)
}

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.Production() {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// App is the wired service: what the HTTP and real-time layers will be
// built on.
type App struct {
	Config  config.Config
	Log     *slog.Logger
	Store   chat.Store
	Service *chat.Service
	Admin   chat.User
	// HTTP is the API server (cmd/chat/http.go); the Redis engine shares
	// its client.
	HTTP *apiserver.Server[chat.User]
}

// Close stops the server (a no-op once it has stopped) and releases the engine.
func (a *App) Close() error {
	return errors.Join(a.HTTP.Stop(context.Background()), a.Store.Close())
}

// build reads the configuration, opens the engine and bootstraps the admin.
func build(ctx context.Context, getenv func(string) string, logw io.Writer) (*App, error) {
	cfg, err := config.Load(getenv)
	if err != nil {
		return nil, err
	}
	log := newLogger(cfg, logw)
	srv, auth, err := newHTTPServer(cfg, log, getenv)
	if err != nil {
		return nil, err
	}
	store, err := openStore(ctx, cfg, srv)
	if err != nil {
		_ = srv.Stop(context.Background())
		return nil, err
	}
	svc := chat.NewService(store, chat.Options{PublicRead: cfg.PublicRead, Logger: log, Limits: cfg.Limits, SendLimit: cfg.SendLimit})
	auth.Service = svc
	admin, err := svc.Bootstrap(ctx, cfg.AdminToken)
	if err != nil {
		_ = srv.Stop(context.Background())
		_ = store.Close()
		return nil, fmt.Errorf("bootstrap CHAT_ADMIN_TOKEN: %w", err)
	}
	return &App{Config: cfg, Log: log, Store: store, Service: svc, Admin: admin, HTTP: srv}, nil
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
	err = serveHTTP(ctx, app, getenv) // cmd/chat/http.go: the API, then live delivery
	app.Log.Info("chat stopped")
	return err
}

// healthcheck asks the local /healthz and succeeds on 200.
func healthcheck(ctx context.Context, getenv func(string) string) error {
	port := getenv("PORT")
	if port == "" {
		port = "3000"
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	url := "http://127.0.0.1:" + strings.TrimSpace(port) + "/healthz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck %s: %w", url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return errors.New("healthcheck " + url + ": " + resp.Status)
	}
	return nil
}
