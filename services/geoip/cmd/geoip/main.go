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
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/ratelimit"
	"github.com/apistack/platform/libs/apiserver/redisconn"
	"github.com/apistack/platform/libs/apiserver/tracing"

	"github.com/apistack/platform/services/geoip/internal/answer"
	"github.com/apistack/platform/services/geoip/internal/asn"
	"github.com/apistack/platform/services/geoip/internal/config"
	"github.com/apistack/platform/services/geoip/internal/convert"
	"github.com/apistack/platform/services/geoip/internal/dbfile"
	"github.com/apistack/platform/services/geoip/internal/exepages"
	"github.com/apistack/platform/services/geoip/internal/httpapi"
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
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "geoip:", err)
		os.Exit(1)
	}
}

// usage is what `geoip help` prints: the subcommands, their flags and the environment.
const usage = `geoip: the IP location service (ipapi.co's API).

Usage:
  geoip [serve]               serve the HTTP API (the default)
  geoip convert -o OUT.BIN|OUT.csv [-sample] [-date YYYY-MM-DD] IN.mmdb|IN.csv ...
                              write an IP2Location DB11 BIN file (or CSV) from MMDB city
                              databases and IP2Location CSV files
  geoip healthcheck           exit 0 when the local server's /healthz answers 200
                              (for Docker: the images have no shell or curl)
  geoip help                  print this help (also -h, --help)

convert flags:
  -o FILE       output BIN file, or a DB11 CSV when FILE ends in .csv (required)
  -sample       keep only a small sample (well-known resolvers, one network per region)
                and no index: the embedded sample
  -date DATE    build date to write, YYYY-MM-DD (default: the newest input's)

serve and healthcheck take no flags: configuration comes from the environment.

Environment (serve):
  GEOIP_DB                  database file, .BIN (IP2Location) or .mmdb (default: the
                            embedded DB-IP sample)
  GEOIP_ASN_DB              autonomous-system database (GeoLite2-ASN or DB-IP ASN Lite
                            .mmdb) filling asn and org (default: none, both empty)
  GEOIP_OVERRIDES           JSON file of local corrections, [{"network": CIDR, "city": ...}]
                            (default: none); reloaded as the databases are
  GEOIP_KEYS_FILE           JSON file of API keys, {"keys": [{"key", "name", "limit",
                            "window"}]} (default: none); ?key= or Authorization: Bearer
                            selects a key's limit; reloaded as the databases are
  GEOIP_WATCH_INTERVAL      how often the database, overrides and keys files are checked
                            for changes (5s)
  IP2LOCATION_TOKEN, IP2LOCATION_PRODUCT
                            download and install updates (e.g. DB11LITEBINIPV6); both or
                            neither (default: off)
  GEOIP_UPDATE_INTERVAL     time between downloads (24h, at least 1m)
  IP2LOCATION_DOWNLOAD_URL  download endpoint (https://www.ip2location.com/download/)
  GEOIP_UPDATE_DIR          where downloads go when GEOIP_DB is unset (user cache dir)
  GEOIP_CACHE_MAX_AGE       Cache-Control max-age of explicit-address answers (1h)
  GEOIP_CACHE_SIZE          answers of hot addresses kept in memory, 0 to disable (65536)
  GOGC, GOMEMLIMIT          the Go collector (geoip's defaults: 200, and 3 KiB per cached
                            answer, at least 64 MiB)
  PORT, HOST                where to listen (3001, 127.0.0.1); healthcheck reads PORT
  APP_ENV (or NODE_ENV)     development or production (development)
  LOG_LEVEL                 debug, info, warn or error (info)
  REDIS_URL                 Redis for the rate-limit counters (default: in memory)
  RATE_LIMIT_MAX, RATE_LIMIT_WINDOW, RATE_LIMIT_ALLOW, RATE_LIMIT_FAIL_CLOSED
                            the per-client limit (100 per 15m), addresses exempt from it,
                            and whether a Redis outage refuses requests (false)
  TRUSTED_PROXIES           proxies whose X-Forwarded-For names the caller (none)
  CORS_ORIGIN               origins allowed to call from a browser (*)
  SHUTDOWN_TIMEOUT          how long requests in flight may finish on SIGTERM (10s)
  METRICS_ENABLED           serve /metrics (true)
  API_TOKEN                 the library's static bearer token (none)
  OTEL_EXPORTER_OTLP_ENDPOINT
                            send OpenTelemetry traces to this OTLP collector, like
                            http://jaeger:4318 (default: off); OTEL_EXPORTER_OTLP_PROTOCOL
                            (http/protobuf or grpc), OTEL_TRACES_SAMPLER and _ARG,
                            OTEL_SERVICE_NAME (geoip) and the SDK's other OTEL_* variables

Signals: SIGTERM or SIGINT drain and stop; SIGHUP reloads the database, overrides and keys files.
`

// run is the whole program behind main, so a test can drive it with its own arguments,
// environment, output and context.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && (!strings.HasPrefix(args[0], "-") || isHelp(args[0])) {
		cmd, args = args[0], args[1:]
	}
	switch {
	case cmd == "serve":
		return serve(ctx, args, getenv, stdout, stderr)
	case cmd == "convert":
		return convertCmd(args, stdout)
	case cmd == "healthcheck":
		if len(args) > 0 {
			return fmt.Errorf("healthcheck takes no arguments, got %q", args)
		}
		return healthcheck(ctx, getenv)
	case isHelp(cmd):
		fmt.Fprint(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown subcommand %q (want serve, convert, healthcheck or help)", cmd)
}

func isHelp(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}

// App is the wired service, built in one direction: settings, then the Redis client, the
// databases with their metrics, the answer engine and the HTTP server on it.
type App struct {
	Config config.Config
	Log    *slog.Logger
	// Registry holds the databases' metrics and the server's; /metrics serves it.
	Registry *prometheus.Registry
	// Redis holds the rate-limit counters (nil: in memory). App closes it last.
	Redis redis.UniversalClient
	// Tracing sends traces when OTEL_EXPORTER_OTLP_ENDPOINT is set (nil: off); HTTP.Stop
	// flushes it.
	Tracing *tracing.Provider
	Zones   *tz.Finder
	DB      *dbfile.Manager
	ASN     *dbfile.Manager  // nil without GEOIP_ASN_DB
	Updater *updater.Updater // nil without IP2LOCATION_TOKEN
	Answers *answer.Engine
	// Overrides is GEOIP_OVERRIDES, swapped into Answers (nil when unset).
	Overrides *watchedFile
	// Keys is GEOIP_KEYS_FILE, swapped into the lookups' key check (nil when unset).
	Keys *watchedFile
	HTTP *apiserver.Server[struct{}] // cmd/geoip/http.go
}

// Close stops the server (a no-op once it has stopped), then closes the databases and the
// connection. The background work (Background) must have returned.
func (a *App) Close() error {
	errs := []error{a.HTTP.Stop(context.Background())}
	if a.ASN != nil {
		errs = append(errs, a.ASN.Close())
	}
	errs = append(errs, a.DB.Close())
	if a.Redis != nil {
		errs = append(errs, a.Redis.Close())
	}
	return errors.Join(errs...)
}

// build reads the configuration and opens everything serve needs, starting nothing:
// Background starts the work that runs beside the server.
func build(getenv func(string) string, logw io.Writer) (app *App, err error) {
	cfg, err := config.Load(getenv)
	if err != nil {
		return nil, err
	}
	app = &App{Config: cfg, Log: apiserver.NewLogger(cfg.Settings, logw), Registry: apiserver.NewRegistry(), Zones: tz.New()}
	applyGC(cfg.GC) // before the databases fill the heap
	// Whatever fails below, what was opened so far is released.
	var closers []func() error
	defer func() {
		if err != nil {
			for i := len(closers) - 1; i >= 0; i-- {
				_ = closers[i]()
			}
		}
	}()
	tp, err := tracing.Setup(context.Background(), cfg.Settings.Tracing, tracing.Options{ServiceName: "geoip", ServiceVersion: version, Logger: app.Log})
	if err != nil {
		return nil, err
	}
	app.Tracing = tp
	closers = append(closers, func() error { return tp.Shutdown(context.Background()) })
	if cfg.Settings.RedisURL != "" {
		// Made for the limiter alone: its socket timeouts are the limiter's deadline and
		// it does not retry, so the library batches its calls (autopipelining) and a hung
		// Redis still frees the connection then.
		if app.Redis, err = redisconn.OpenWith(cfg.Settings.RedisURL, redisconn.Options{Timeout: ratelimit.DefaultRedisTimeout}); err != nil {
			return nil, err
		}
		closers = append(closers, app.Redis.Close)
		if err = app.Tracing.InstrumentRedis(app.Redis); err != nil {
			return nil, err
		}
	}
	if app.DB, app.Updater, err = openDatabase(cfg, app.Log, app.Registry, app.Zones); err != nil {
		return nil, err
	}
	closers = append(closers, app.DB.Close)
	if app.ASN, err = openASN(cfg, app.Log, app.Registry); err != nil {
		return nil, err
	}
	if app.ASN != nil {
		closers = append(closers, app.ASN.Close)
	}
	var keys *httpapi.Keys
	if cfg.KeysPath != "" {
		keys = httpapi.NewKeys(nil)
		if app.Keys, err = openKeys(cfg.KeysPath, keys, cfg.WatchInterval, app.Log); err != nil {
			return nil, err
		}
	}
	if app.HTTP, app.Answers, err = newHTTPServer(cfg, app.DB, app.ASN, httpDeps{Log: app.Log, Registry: app.Registry, Redis: app.Redis, Keys: keys, Tracing: app.Tracing}); err != nil {
		return nil, err
	}
	if cfg.OverridesPath != "" {
		if app.Overrides, err = openOverrides(cfg.OverridesPath, app.Answers, cfg.WatchInterval, app.Log); err != nil {
			return nil, err
		}
	}
	return app, nil
}

// Background runs the work beside the server until ctx ends: the databases' watchers
// (reloading on a file change and on every value of hup, SIGHUP in serve), the updater,
// the time zones' warm-up and the answer caches' purge on a swap. wait returns once every
// goroutine it started has.
func (a *App) Background(ctx context.Context, hup <-chan os.Signal) (wait func()) {
	var wg sync.WaitGroup
	// One signal handler: each value of hup reloads both databases, the overrides and the keys.
	cityHup := make(chan os.Signal, 1)
	asnHup := make(chan os.Signal, 1)
	overridesHup := make(chan os.Signal, 1)
	keysHup := make(chan os.Signal, 1)
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case sig := <-hup:
				for _, ch := range []chan os.Signal{cityHup, asnHup, overridesHup, keysHup} {
					select {
					case ch <- sig:
					default: // a reload is pending already
					}
				}
			}
		}
	})
	wg.Go(func() { a.DB.Watch(ctx, cityHup) })
	if a.ASN != nil {
		wg.Go(func() { a.ASN.Watch(ctx, asnHup) })
	}
	if a.Overrides != nil {
		wg.Go(func() { a.Overrides.Watch(ctx, overridesHup) })
	}
	if a.Keys != nil {
		wg.Go(func() { a.Keys.Watch(ctx, keysHup) })
	}
	if a.Updater != nil {
		wg.Go(func() { a.Updater.Run(ctx) })
	}
	wg.Go(func() { warmZones(ctx, a.DB, a.Zones, a.Log) })
	swaps, stop := a.DB.Subscribe()
	var asnSwaps <-chan lookup.Info // nil without an ASN database: never ready
	stopASN := func() {}
	if a.ASN != nil {
		asnSwaps, stopASN = a.ASN.Subscribe()
	}
	wg.Go(func() {
		defer stop()
		defer stopASN()
		for {
			select {
			case <-swaps:
				// Answers of the old data are never served (they carry its version);
				// dropping them frees the memory at once.
				a.Answers.Purge()
			case <-asnSwaps:
				a.Answers.Purge()
			case <-ctx.Done():
				return
			}
		}
	})
	return wg.Wait
}

// serve runs the service until ctx ends (SIGINT, SIGTERM), then drains the server and
// waits for the background work before closing what build opened.
func serve(ctx context.Context, args []string, getenv func(string) string, stdout, logw io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(logw)
	fs.Usage = func() { fmt.Fprint(stdout, usage) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("serve takes no arguments (configuration comes from the environment), got %q", fs.Args())
	}
	app, err := build(getenv, logw)
	if err != nil {
		return err
	}
	defer app.Close()
	app.Log.Info("geoip starting", "config", app.Config)
	// The databases are loaded (an MMDB's zones named from the polygons): what start-up
	// read of the executable need not stay resident.
	exepages.Release()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	bg, cancel := context.WithCancel(ctx)
	wait := app.Background(bg, hup)
	err = app.HTTP.Run(ctx)
	cancel()
	wait()
	app.Log.Info("geoip stopped")
	return err
}

// openASN opens GEOIP_ASN_DB when it is set, with its metrics on reg when reg is not nil;
// nil when GEOIP_ASN_DB is not set. App.Background watches it.
func openASN(cfg config.Config, log *slog.Logger, reg prometheus.Registerer) (*dbfile.Manager, error) {
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
	return m, nil
}

// openDatabase opens the city database and, with IP2LOCATION_TOKEN, its updater, with
// their metrics on reg when reg is not nil. App.Background runs the watcher and updater.
func openDatabase(cfg config.Config, log *slog.Logger, reg prometheus.Registerer, zones *tz.Finder) (*dbfile.Manager, *updater.Updater, error) {
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
		return nil, nil, err
	}
	if reg != nil {
		if err := db.RegisterMetrics(reg); err != nil {
			db.Close()
			return nil, nil, fmt.Errorf("register database metrics: %w", err)
		}
	}
	if cfg.Token == "" {
		return db, nil, nil
	}
	up, err := updater.New(updater.Config{
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
		return nil, nil, err
	}
	return db, up, nil
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
	out := fs.String("o", "", "output BIN file, or a DB11 CSV when it ends in .csv (required)")
	sampleOnly := fs.Bool("sample", false, "keep only a small sample (well-known resolvers, one network per region) and no index: the embedded sample")
	date := fs.String("date", "", "build date to write, YYYY-MM-DD (default: newest input's)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: geoip convert -o OUT.BIN|OUT.csv [-sample] [-date YYYY-MM-DD] IN.mmdb|IN.csv ...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil // -h: the usage is printed
		}
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
	dated := "" // a CSV records no date
	if !st.Date.IsZero() {
		dated = ", dated " + st.Date.Format(time.DateOnly)
	}
	fmt.Fprintf(stdout, "wrote %s: %d IPv4 and %d IPv6 ranges, %d locations, %d bytes%s, in %s\n",
		*out, st.Rows4, st.Rows6, st.Locations, st.Bytes, dated, time.Since(start).Round(time.Millisecond))
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
