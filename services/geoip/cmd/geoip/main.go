// Command geoip is the IP location service: `serve` (the default) answers from an
// IP2Location BIN or MMDB file or the embedded sample, `convert` writes BIN files from MMDB
// and IP2Location CSV data, `update` downloads the databases once (cron, an init
// container), and `healthcheck` probes a running server for Docker.
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
  geoip update                download the databases from GEOIP_UPDATE_SOURCE once and
                              exit: 0 when each is current (new or unchanged), 1 when one
                              failed (for cron, a Kubernetes CronJob, an init container)
  geoip healthcheck           exit 0 when the local server's /healthz answers 200
                              (for Docker: the images have no shell or curl)
  geoip help                  print this help (also -h, --help)

convert flags:
  -o FILE       output BIN file, or a DB11 CSV when FILE ends in .csv (required)
  -sample       keep only a small sample (well-known resolvers, one network per region)
                and no index: the embedded sample
  -date DATE    build date to write, YYYY-MM-DD (default: the newest input's)

serve, update and healthcheck take no flags: configuration comes from the environment.

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
  GEOIP_UPDATE_SOURCE       keep the databases current from ip2location, maxmind or dbip
                            (DB-IP's free Lite files, no key); none: off (default:
                            ip2location with IP2LOCATION_TOKEN, maxmind with
                            MAXMIND_ACCOUNT_ID, else off)
  IP2LOCATION_TOKEN, IP2LOCATION_PRODUCT
                            IP2Location's download token and product (e.g.
                            DB11LITEBINIPV6); both or neither
  MAXMIND_ACCOUNT_ID, MAXMIND_LICENSE_KEY
                            MaxMind's account ID and license key; both or neither
  GEOIP_UPDATE_CITY         city edition kept current, or none (GeoLite2-City for maxmind,
                            dbip-city-lite for dbip, IP2LOCATION_PRODUCT for ip2location)
  GEOIP_UPDATE_ASN          ASN edition kept current, or none (GeoLite2-ASN for maxmind,
                            dbip-asn-lite for dbip, none for ip2location)
  GEOIP_UPDATE_INTERVAL     time between checks (24h, at least 1m); a check asks
                            conditionally (ETag, Last-Modified) and downloads only a new file
  GEOIP_UPDATE_URL          the source's endpoint, for a mirror (the vendor's);
                            IP2LOCATION_DOWNLOAD_URL is kept for ip2location
  GEOIP_UPDATE_DIR          where downloads go when GEOIP_DB or GEOIP_ASN_DB is unset
                            (user cache dir)
  GEOIP_DB_MAX_AGE          /healthz reports a database built longer ago as stale (45d)
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
	case cmd == "update":
		return updateCmd(ctx, args, getenv, stdout, stderr)
	case cmd == "healthcheck":
		if help, err := noArguments(cmd, args, stdout); help || err != nil {
			return err
		}
		return healthcheck(ctx, getenv)
	case isHelp(cmd):
		fmt.Fprint(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown subcommand %q (want serve, convert, update, healthcheck or help)", cmd)
}

// noArguments checks the arguments of a subcommand configured by the environment alone:
// a lone help flag prints the usage (help is true), anything else is an error.
func noArguments(cmd string, args []string, stdout io.Writer) (help bool, err error) {
	if len(args) == 1 && isHelp(args[0]) {
		fmt.Fprint(stdout, usage)
		return true, nil
	}
	if len(args) > 0 {
		return false, fmt.Errorf("%s takes no arguments (configuration comes from the environment), got %q", cmd, args)
	}
	return false, nil
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
	Updater *updater.Updater // nil without GEOIP_UPDATE_SOURCE
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
	if app.DB, err = openDatabase(cfg, app.Log, app.Registry, app.Zones); err != nil {
		return nil, err
	}
	closers = append(closers, app.DB.Close)
	if app.ASN, err = openASN(cfg, app.Log, app.Registry); err != nil {
		return nil, err
	}
	if app.ASN != nil {
		closers = append(closers, app.ASN.Close)
	}
	if app.Updater, err = newUpdater(cfg, app.Log, app.Registry, app.DB, app.ASN); err != nil {
		return nil, err
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
	if help, err := noArguments("serve", args, stdout); help || err != nil {
		return err
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

// openASN opens GEOIP_ASN_DB when it is set, or the ASN database an earlier update
// downloaded, with its metrics on reg when reg is not nil; nil when there is neither.
// App.Background watches it.
func openASN(cfg config.Config, log *slog.Logger, reg prometheus.Registerer) (*dbfile.Manager, error) {
	path := cfg.ASNPath
	if path == "" && cfg.UpdateASN != "" {
		if _, err := os.Stat(cfg.ASNUpdateTarget()); err == nil {
			path = cfg.ASNUpdateTarget()
		}
	}
	if path == "" {
		log.Info("GEOIP_ASN_DB not set; asn and org are answered empty")
		return nil, nil
	}
	m, err := dbfile.New(dbfile.Config{
		Path:         path,
		Name:         "asn",
		Open:         openASNFile,
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

func openASNFile(path string) (lookup.DB, error) { return asn.Load(path) }

// openDatabase opens the city database, with its metrics on reg when reg is not nil.
// App.Background runs the watcher.
func openDatabase(cfg config.Config, log *slog.Logger, reg prometheus.Registerer, zones *tz.Finder) (*dbfile.Manager, error) {
	path := cfg.DBPath
	if path == "" && cfg.UpdateCity != "" {
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
	return db, nil
}

// newUpdater is the updater of GEOIP_UPDATE_SOURCE (nil when it is unset), with its
// metrics on reg when reg is not nil. A database a manager serves (city, asnDB) is swapped
// in by it; one without (`geoip update`, or an ASN database downloaded before one is
// served) is verified and put in place by a dbfile.FileInstaller, and a server watching
// the file reloads it, or serves it from its next start.
func newUpdater(cfg config.Config, log *slog.Logger, reg prometheus.Registerer, city, asnDB *dbfile.Manager) (*updater.Updater, error) {
	if cfg.UpdateSource == "" {
		return nil, nil
	}
	var dbs []updater.Database
	if cfg.UpdateCity != "" {
		var inst updater.Installer = dbfile.FileInstaller{}
		if city != nil {
			inst = city
		}
		dbs = append(dbs, updater.Database{Name: "city", Edition: cfg.UpdateCity, Target: cfg.UpdateTarget(), Installer: inst})
	}
	if cfg.UpdateASN != "" {
		var inst updater.Installer = dbfile.FileInstaller{Open: openASNFile}
		if asnDB != nil {
			inst = asnDB
		} else if city != nil {
			log.Info("the ASN database is downloaded but served only from the next start; set GEOIP_ASN_DB, or run geoip update first, to serve it now",
				"path", cfg.ASNUpdateTarget())
		}
		dbs = append(dbs, updater.Database{Name: "asn", Edition: cfg.UpdateASN, Target: cfg.ASNUpdateTarget(), Installer: inst})
	}
	up, err := updater.New(updater.Config{
		Source:     cfg.UpdateSource,
		Token:      cfg.Token,
		AccountID:  cfg.MaxMindAccountID,
		LicenseKey: cfg.MaxMindLicenseKey,
		Databases:  dbs,
		Interval:   cfg.UpdateInterval,
		URL:        cfg.UpdateURL,
		Logger:     log,
	}, nil)
	if err == nil && reg != nil {
		err = up.RegisterMetrics(reg)
	}
	if err != nil {
		return nil, err
	}
	return up, nil
}

// updateCmd is `geoip update`: one check of every database of GEOIP_UPDATE_SOURCE, a line
// per database on stdout, an error when one failed. A server watching the files reloads
// what it installs.
func updateCmd(ctx context.Context, args []string, getenv func(string) string, stdout, logw io.Writer) error {
	if help, err := noArguments("update", args, stdout); help || err != nil {
		return err
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	if cfg.UpdateSource == "" {
		return errors.New("update: nothing to update: set GEOIP_UPDATE_SOURCE (ip2location, maxmind or dbip) and its credentials")
	}
	up, err := newUpdater(cfg, apiserver.NewLogger(cfg.Settings, logw), nil, nil, nil)
	if err != nil {
		return err
	}
	failed := 0
	results := up.UpdateEach(ctx)
	for _, r := range results {
		if r.Err != nil {
			failed++
			fmt.Fprintf(stdout, "%s %s: %s: %v\n", r.Database, r.Edition, r.Outcome, r.Err)
			continue
		}
		fmt.Fprintf(stdout, "%s %s: %s: %s\n", r.Database, r.Edition, r.Outcome, r.Target)
	}
	if failed > 0 {
		return fmt.Errorf("update: %d of %d databases failed; the files in place are unchanged", failed, len(results))
	}
	return nil
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
	// Asked for, the usage goes to stdout (and the exit is 0); after a wrong flag, with
	// the flag package's message, to stderr.
	for _, a := range args {
		if a == "--" || !strings.HasPrefix(a, "-") {
			break
		}
		if isHelp(a) {
			fs.SetOutput(stdout)
			fs.Usage()
			return nil
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil // -h after other flags: the usage is printed (stderr)
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
