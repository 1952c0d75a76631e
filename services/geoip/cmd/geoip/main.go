// Command geoip is the IP location service: `serve` (the default) answers from an
// IP2Location BIN or MMDB file or the embedded sample, `convert` writes BIN files from MMDB
// and IP2Location CSV data, and `healthcheck` probes a running server for Docker.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/ratelimit"
	"github.com/apistack/platform/libs/apiserver/redisconn"

	"github.com/apistack/platform/services/geoip/internal/asn"
	"github.com/apistack/platform/services/geoip/internal/config"
	"github.com/apistack/platform/services/geoip/internal/convert"
	"github.com/apistack/platform/services/geoip/internal/dbfile"
	"github.com/apistack/platform/services/geoip/internal/lookup"
	"github.com/apistack/platform/services/geoip/internal/sample"
	"github.com/apistack/platform/services/geoip/internal/tz"
	"github.com/apistack/platform/services/geoip/internal/updater"
)

// version is the build's version, set with -ldflags "-X main.version=...";
// it is the API version shown in /docs.
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "geoip:", err)
		os.Exit(1)
	}
}

// run dispatches a subcommand; env reads the environment (os.Getenv outside tests).
func run(ctx context.Context, args []string, env func(string) string) error {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(ctx, args, env)
	case "convert":
		return convertCmd(args, os.Stdout)
	case "healthcheck":
		return healthcheck(ctx, env)
	default:
		return fmt.Errorf("unknown subcommand %q (want serve, convert or healthcheck)", cmd)
	}
}

// serve runs the service, wired in one direction: settings, then the
// Redis client (REDIS_URL) and the databases with their metrics, then the
// answers and the HTTP server on them. It answers until ctx ends or
// SIGINT/SIGTERM.
func serve(ctx context.Context, args []string, env func(string) string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("serve takes no arguments (configuration comes from the environment), got %q", fs.Args())
	}
	cfg, err := config.Load(env)
	if err != nil {
		return err
	}
	log := apiserver.NewLogger(cfg.Settings, os.Stderr)
	log.Info("geoip starting", "config", cfg)
	applyGC(cfg.GC)
	var rdb redis.UniversalClient // the rate-limit counters' connection
	if cfg.Settings.RedisURL != "" {
		// Made for the limiter alone: its socket timeouts are the limiter's
		// deadline and it does not retry, so the library batches its calls
		// (autopipelining) and a hung Redis still frees the connection then.
		rdb, err = redisconn.OpenWith(cfg.Settings.RedisURL, redisconn.Options{Timeout: ratelimit.DefaultRedisTimeout})
		if err != nil {
			return err
		}
		defer rdb.Close() // after the server has stopped: deferred first, run last
	}
	reg := apiserver.NewRegistry()
	db, err := openDatabase(ctx, cfg, log, reg, tz.New())
	if err != nil {
		return err
	}
	defer db.Close()
	asnDB, err := openASN(ctx, cfg, log, reg)
	if err != nil {
		return err
	}
	if asnDB != nil {
		defer asnDB.Close()
	}
	return serveHTTP(ctx, cfg, db, asnDB, httpDeps{Log: log, Registry: reg, Redis: rdb, Getenv: env})
}

// openASN loads GEOIP_ASN_DB when it is set, watched and reloaded (SIGHUP, file change)
// like the city database, and registers its metrics on reg when it is not nil; nil when
// GEOIP_ASN_DB is not set.
func openASN(ctx context.Context, cfg config.Config, log *slog.Logger, reg prometheus.Registerer) (*dbfile.Manager, error) {
	if cfg.ASNPath == "" {
		log.Info("GEOIP_ASN_DB not set; asn and org are answered empty")
		return nil, nil
	}
	m, err := dbfile.New(dbfile.Config{
		Path:         cfg.ASNPath,
		Open:         func(path string) (lookup.DB, error) { return asn.Load(path) },
		PollInterval: cfg.WatchInterval,
		Logger:       log.With("database", "asn"),
		MetricsName:  "asn_database", // geoip_asn_database_*, beside the city database's
	})
	if err != nil {
		return nil, fmt.Errorf("GEOIP_ASN_DB: %w", err)
	}
	if reg != nil {
		if err := m.RegisterMetrics(reg); err != nil {
			m.Close()
			return nil, fmt.Errorf("register ASN database metrics: %w", err)
		}
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		m.Watch(ctx, hup)
	}()
	return m, nil
}

// openDatabase builds the database manager with its watcher, SIGHUP handler and updater,
// all stopped by ctx, and registers their metrics on reg when it is not nil.
func openDatabase(ctx context.Context, cfg config.Config, log *slog.Logger, reg prometheus.Registerer, zones *tz.Finder) (*dbfile.Manager, error) {
	path := cfg.DBPath
	if path == "" && cfg.Token != "" {
		// A database downloaded by an earlier run beats the sample.
		if _, err := os.Stat(cfg.UpdateTarget()); err == nil {
			path = cfg.UpdateTarget()
		}
	}
	if path == "" {
		log.Info("GEOIP_DB not set; serving the embedded sample database", "credit", "IP Geolocation by DB-IP (https://db-ip.com)")
	}
	db, err := dbfile.New(dbfile.Config{
		Path:         path,
		Fallback:     sample.Open,
		TimeZones:    zones,
		PollInterval: cfg.WatchInterval,
		Logger:       log,
	})
	if err != nil {
		return nil, err
	}
	if reg != nil {
		if err := db.RegisterMetrics(reg); err != nil {
			db.Close()
			return nil, fmt.Errorf("register database metrics: %w", err)
		}
	}
	var up *updater.Updater
	if cfg.Token != "" {
		up, err = updater.New(updater.Config{
			Token:    cfg.Token,
			Product:  cfg.Product,
			Interval: cfg.UpdateInterval,
			Target:   cfg.UpdateTarget(),
			URL:      cfg.DownloadURL,
			Logger:   log,
		}, db)
		if err == nil && reg != nil {
			err = up.RegisterMetrics(reg)
		}
		if err != nil {
			db.Close()
			return nil, err
		}
	}
	// Nothing can fail from here on: start the background work.
	go warmZones(ctx, db, zones, log)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		db.Watch(ctx, hup)
	}()
	if up != nil {
		go up.Run(ctx)
	}
	return db, nil
}

// warmZones loads the time zone polygons (some 60 MB, a moment) before the first request
// needs them, for a database whose records do not all name their zone, now and whenever
// such a database is swapped in. A database whose records all name it (BINs written by
// geoip convert) never needs them, and they are not loaded.
func warmZones(ctx context.Context, db *dbfile.Manager, zones *tz.Finder, log *slog.Logger) {
	swaps, stop := db.Subscribe()
	defer stop()
	info := db.Info()
	for {
		if !info.ZoneNames && !zones.Loaded() {
			log.Info("loading time zone polygons: the database has records without a zone name", "source", info.Source)
			if err := zones.Warm(); err != nil {
				log.Error("time zone data not loaded; records will lack time zones", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case info = <-swaps:
		}
	}
}

func convertCmd(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("convert", flag.ContinueOnError)
	out := fs.String("o", "", "output BIN file (required)")
	sampleOnly := fs.Bool("sample", false, "keep only a small sample (well-known resolvers, one network per region) and no index: the embedded sample")
	date := fs.String("date", "", "build date to write, YYYY-MM-DD (default: newest input's)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: geoip convert -o OUT.BIN [-sample] [-date YYYY-MM-DD] IN.mmdb|IN.csv ...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() == 0 {
		fs.Usage()
		return errors.New("convert: -o and at least one input are required")
	}
	opts := convert.Options{Sample: *sampleOnly}
	if *date != "" {
		d, err := time.Parse(time.DateOnly, *date)
		if err != nil {
			return fmt.Errorf("convert: -date %q: want YYYY-MM-DD", *date)
		}
		opts.Date = d
	}
	start := time.Now()
	st, err := convert.Files(*out, fs.Args(), opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %d IPv4 and %d IPv6 ranges, %d locations, %d bytes, dated %s, in %s\n",
		*out, st.Rows4, st.Rows6, st.Locations, st.Bytes, st.Date.Format(time.DateOnly), time.Since(start).Round(time.Millisecond))
	return nil
}

// healthcheck exits 0 when the local server's /healthz answers 200; Docker runs it, and the
// images have no shell or curl. The port is PORT or geoip's default, by serve's rules.
func healthcheck(ctx context.Context, env func(string) string) error {
	settings, err := config.LoadSettings(env)
	if err != nil {
		return err
	}
	return apiserver.CheckHealth(ctx, settings)
}
