// Package config reads the geoip service's settings from the environment
// (DESIGN.md), once, at start-up: the common ones through the library's
// rules (apiserver.LoadSettings), then geoip's own. Every invalid value is
// reported at once, naming its variable.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/apistack/platform/libs/apiserver"
)

// DefaultPort is geoip's port when PORT is unset (DESIGN.md: the
// library's default is 3000, chat's too).
const DefaultPort = 3001

// Config is everything `geoip serve` reads from the environment, read
// once: the server gets Settings as they are and reads no environment
// itself. The OTEL_* variables are Settings.Tracing, which cmd/geoip sets
// tracing up from.
type Config struct {
	// Settings are the library's variables (apiserver.Settings): PORT,
	// HOST, APP_ENV/NODE_ENV, LOG_LEVEL, REDIS_URL (rate-limit counters
	// shared by replicas; empty: in memory), API_TOKEN, RATE_LIMIT_*,
	// METRICS_ENABLED, CORS_ORIGIN, TRUSTED_PROXIES and SHUTDOWN_TIMEOUT.
	Settings       apiserver.Settings
	DBPath         string        // GEOIP_DB
	ASNPath        string        // GEOIP_ASN_DB: optional GeoLite2-ASN / DB-IP ASN Lite MMDB
	OverridesPath  string        // GEOIP_OVERRIDES: optional JSON file of local corrections
	KeysPath       string        // GEOIP_KEYS_FILE: optional JSON file of API keys and their limits
	WatchInterval  time.Duration // GEOIP_WATCH_INTERVAL
	Token          string        // IP2LOCATION_TOKEN
	Product        string        // IP2LOCATION_PRODUCT
	DownloadURL    string        // IP2LOCATION_DOWNLOAD_URL, for a mirror; default IP2Location's
	UpdateInterval time.Duration // GEOIP_UPDATE_INTERVAL
	UpdateDir      string        // GEOIP_UPDATE_DIR
	// UpdateSource is GEOIP_UPDATE_SOURCE, the vendor the updater downloads from:
	// "ip2location", "maxmind" or "dbip"; "" (no updates). Unset, it is ip2location when
	// IP2LOCATION_TOKEN is set and maxmind when MAXMIND_ACCOUNT_ID is.
	UpdateSource      string
	MaxMindAccountID  string // MAXMIND_ACCOUNT_ID
	MaxMindLicenseKey string // MAXMIND_LICENSE_KEY
	// UpdateCity and UpdateASN are GEOIP_UPDATE_CITY and GEOIP_UPDATE_ASN, the editions
	// kept current ("" when "none"): by default GeoLite2-City and GeoLite2-ASN (maxmind),
	// dbip-city-lite and dbip-asn-lite (dbip), IP2LOCATION_PRODUCT and none (ip2location).
	UpdateCity string
	UpdateASN  string
	// UpdateURL is GEOIP_UPDATE_URL, the source's endpoint for a mirror (for ip2location
	// IP2LOCATION_DOWNLOAD_URL too); "" the vendor's own.
	UpdateURL string
	// DBMaxAge is GEOIP_DB_MAX_AGE: a database built longer ago is reported stale in
	// /healthz (default 45 days).
	DBMaxAge time.Duration
	// CacheMaxAge is GEOIP_CACHE_MAX_AGE, the Cache-Control max-age of
	// explicit lookups (0: the HTTP layer's default, 1h).
	CacheMaxAge time.Duration
	// CacheSize is GEOIP_CACHE_SIZE, answers kept in memory (0: the HTTP
	// layer's default, 65536; -1: no cache, which GEOIP_CACHE_SIZE=0 asks).
	CacheSize int
	// GC is how the collector runs: Go's own GOGC and GOMEMLIMIT, with
	// geoip's defaults where the environment sets neither (see GC).
	GC GC
}

// GC is the collector's settings. geoip's live heap is small (the databases
// are off the heap; about 6 MB under random addresses) and every request
// allocates a few kilobytes, so at Go's default GOGC=100 the collector ran
// every few megabytes, 5-6 % of the server's CPU under random addresses
// (pprof under bench/scripts/geoip-http.sh). geoip lets the heap grow to
// DefaultGCPercent of the live heap between collections instead, under a
// soft limit (DefaultMemoryLimit) that bounds the heap when the answer
// cache is full. GOGC and GOMEMLIMIT, when set, are Go's as documented in
// runtime/debug and win.
type GC struct {
	// Percent is GOGC, or DefaultGCPercent when GOGC is unset (-1: off).
	Percent int
	// PercentFromEnv is whether GOGC set Percent.
	PercentFromEnv bool
	// MemoryLimit is the soft limit in bytes geoip sets when GOMEMLIMIT
	// is unset (DefaultMemoryLimit); 0 when GOMEMLIMIT is set, which the
	// runtime applied at start-up (it refuses a malformed one itself).
	MemoryLimit int64
	// MemoryLimitEnv is GOMEMLIMIT as set, for the log.
	MemoryLimitEnv string
}

// DefaultGCPercent is geoip's GOGC when the environment sets none: a heap
// of 6 MB live collects at about 18 MB instead of 12 MB, two thirds of the
// collections. The heap the collector lets grow is resident memory: at 400
// it was about 38 MiB of the MMDB server's under random load, at 200 about
// 23, which keeps a 63 MB MMDB within 1.2 times the file plus 64 MiB; what
// the collector then costs lies between GOGC=100 (0.95x the throughput of
// 400) and 400.
const DefaultGCPercent = 200

// defaultCacheAnswers is the HTTP layer's answer cache size when
// GEOIP_CACHE_SIZE is unset (httpapi.Options.CacheSize).
const defaultCacheAnswers = 1 << 16

// DefaultMemoryLimit is the soft memory limit geoip sets when GOMEMLIMIT
// is unset: 3 KiB per answer the cache may keep (cacheSize as in
// Config.CacheSize), at least 64 MiB. A full cache holds about 1.6 KiB per
// answer (the locations' encodings are outside the heap, or 192 bytes per
// answer where they cannot be, see internal/answer), so the limit stays
// above the live heap at any cache size and the collector never runs back
// to back; with the default cache (192 MiB) a full cache (about 105 MB
// live) collects about as often as at GOGC=100, and the heap stays below
// the 315 MB DefaultGCPercent alone would allow.
func DefaultMemoryLimit(cacheSize int) int64 {
	answers := int64(cacheSize)
	switch {
	case cacheSize == 0:
		answers = defaultCacheAnswers
	case cacheSize < 0:
		answers = 0
	}
	return max(64<<20, answers*3<<10)
}

// LoadSettings reads only the library's settings with geoip's defaults:
// Load's first step, and what `geoip healthcheck` needs to find the server.
func LoadSettings(getenv func(string) string) (apiserver.Settings, error) {
	return apiserver.LoadSettings(getenv, apiserver.Defaults{Port: DefaultPort})
}

// Load reads the configuration from getenv (os.Getenv outside tests).
func Load(getenv func(string) string) (Config, error) {
	c := Config{
		DBPath:         getenv("GEOIP_DB"),
		ASNPath:        getenv("GEOIP_ASN_DB"),
		OverridesPath:  getenv("GEOIP_OVERRIDES"),
		KeysPath:       getenv("GEOIP_KEYS_FILE"),
		Token:          getenv("IP2LOCATION_TOKEN"),
		Product:        getenv("IP2LOCATION_PRODUCT"),
		DownloadURL:    getenv("IP2LOCATION_DOWNLOAD_URL"),
		UpdateDir:      getenv("GEOIP_UPDATE_DIR"),
		WatchInterval:  5 * time.Second,
		UpdateInterval: 24 * time.Hour,
		DBMaxAge:       DefaultDBMaxAge,
	}
	var errs []error
	bad := func(name, value, want string) { errs = append(errs, fmt.Errorf("%s=%q: %s", name, value, want)) }

	settings, err := LoadSettings(getenv)
	if err != nil {
		errs = append(errs, err)
	}
	c.Settings = settings
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{{"GEOIP_WATCH_INTERVAL", &c.WatchInterval}, {"GEOIP_UPDATE_INTERVAL", &c.UpdateInterval}} {
		if v := getenv(d.name); v != "" {
			dur, err := time.ParseDuration(v)
			if err != nil || dur <= 0 {
				bad(d.name, v, "want a positive duration such as 30s or 24h")
				continue
			}
			*d.dst = dur
		}
	}
	if c.UpdateInterval < time.Minute {
		errs = append(errs, fmt.Errorf("GEOIP_UPDATE_INTERVAL=%s: at least 1m (vendors limit downloads)", c.UpdateInterval))
	}
	if (c.Token == "") != (c.Product == "") {
		errs = append(errs, errors.New("IP2LOCATION_TOKEN and IP2LOCATION_PRODUCT must be set together"))
	}
	errs = append(errs, c.loadUpdateSource(getenv)...)
	if v := getenv("GEOIP_DB_MAX_AGE"); v != "" {
		d, err := parseAge(v)
		if err != nil || d <= 0 {
			bad("GEOIP_DB_MAX_AGE", v, "want a positive duration such as 45d or 1080h")
		} else {
			c.DBMaxAge = d
		}
	}
	if v := getenv("GEOIP_CACHE_MAX_AGE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			bad("GEOIP_CACHE_MAX_AGE", v, "want a duration of at least 1s, such as 1h")
		} else {
			c.CacheMaxAge = d
		}
	}
	if v := getenv("GEOIP_CACHE_SIZE"); v != "" {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil || n < 0:
			bad("GEOIP_CACHE_SIZE", v, "want a count of answers, 0 to disable")
		case n == 0:
			c.CacheSize = -1
		default:
			c.CacheSize = n
		}
	}
	c.GC = GC{Percent: DefaultGCPercent, MemoryLimitEnv: getenv("GOMEMLIMIT")}
	if v := getenv("GOGC"); v != "" {
		c.GC.PercentFromEnv = true
		if n, err := strconv.Atoi(v); v == "off" {
			c.GC.Percent = -1
		} else if err != nil || n < 0 {
			// The runtime would silently collect at GOGC=100.
			bad("GOGC", v, `want a percentage such as 100, or "off"`)
		} else {
			c.GC.Percent = n
		}
	}
	if c.GC.MemoryLimitEnv == "" {
		c.GC.MemoryLimit = DefaultMemoryLimit(c.CacheSize)
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	if c.UpdateDir == "" && ((c.UpdateCity != "" && c.DBPath == "") || (c.UpdateASN != "" && c.ASNPath == "")) {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		c.UpdateDir = filepath.Join(dir, "geoip")
	}
	return c, nil
}

// The update sources, GEOIP_UPDATE_SOURCE's values (updater.Source*).
const (
	SourceIP2Location = "ip2location"
	SourceMaxMind     = "maxmind"
	SourceDBIP        = "dbip"
)

// DefaultDBMaxAge is GEOIP_DB_MAX_AGE's default: DB-IP and IP2Location LITE publish
// monthly, MaxMind twice a week, so a database older than a month and a half missed an
// update.
const DefaultDBMaxAge = 45 * 24 * time.Hour

// edition is what an edition name may be: it names the downloaded file.
var edition = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// loadUpdateSource reads GEOIP_UPDATE_SOURCE and what each source needs.
func (c *Config) loadUpdateSource(getenv func(string) string) []error {
	var errs []error
	c.MaxMindAccountID = getenv("MAXMIND_ACCOUNT_ID")
	c.MaxMindLicenseKey = getenv("MAXMIND_LICENSE_KEY")
	src := strings.ToLower(strings.TrimSpace(getenv("GEOIP_UPDATE_SOURCE")))
	switch src {
	case "":
		if c.Token != "" {
			src = SourceIP2Location
		} else if c.MaxMindAccountID != "" || c.MaxMindLicenseKey != "" {
			src = SourceMaxMind
		}
	case "none", "off":
		src = ""
	case SourceIP2Location, SourceMaxMind, SourceDBIP:
	default:
		return append(errs, fmt.Errorf("GEOIP_UPDATE_SOURCE=%q: want ip2location, maxmind, dbip or none", src))
	}
	c.UpdateSource = src
	c.UpdateURL = getenv("GEOIP_UPDATE_URL")
	switch src {
	case "":
		return nil
	case SourceIP2Location:
		if c.Token == "" || c.Product == "" {
			errs = append(errs, errors.New("GEOIP_UPDATE_SOURCE=ip2location needs IP2LOCATION_TOKEN and IP2LOCATION_PRODUCT"))
		}
		c.UpdateCity = c.Product
		if c.UpdateURL == "" {
			c.UpdateURL = c.DownloadURL
		}
	case SourceMaxMind:
		if c.MaxMindAccountID == "" || c.MaxMindLicenseKey == "" {
			errs = append(errs, errors.New("MAXMIND_ACCOUNT_ID and MAXMIND_LICENSE_KEY must be set together"))
		}
		c.UpdateCity, c.UpdateASN = "GeoLite2-City", "GeoLite2-ASN"
	case SourceDBIP:
		c.UpdateCity, c.UpdateASN = "dbip-city-lite", "dbip-asn-lite"
	}
	for _, e := range []struct {
		name string
		dst  *string
	}{{"GEOIP_UPDATE_CITY", &c.UpdateCity}, {"GEOIP_UPDATE_ASN", &c.UpdateASN}} {
		switch v := getenv(e.name); {
		case v == "":
		case strings.EqualFold(v, "none"):
			*e.dst = ""
		case !edition.MatchString(v):
			errs = append(errs, fmt.Errorf("%s=%q: want an edition such as GeoLite2-City, or none", e.name, v))
		default:
			*e.dst = v
		}
	}
	if c.UpdateCity == "" && c.UpdateASN == "" {
		errs = append(errs, fmt.Errorf("GEOIP_UPDATE_SOURCE=%s with GEOIP_UPDATE_CITY and GEOIP_UPDATE_ASN both none: nothing to update", src))
	}
	if c.UpdateURL != "" {
		if u, err := url.Parse(c.UpdateURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, errors.New("GEOIP_UPDATE_URL (or IP2LOCATION_DOWNLOAD_URL): want an http(s) URL"))
		}
	}
	return errs
}

// parseAge reads a duration, also in days ("45d"), which Go's durations lack.
func parseAge(v string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(v, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days > 100000 {
			return 0, fmt.Errorf("bad day count %q", n)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	return time.ParseDuration(v)
}

// UpdateTarget is where the city database's downloads go: over GEOIP_DB when
// set, else into the update folder.
func (c Config) UpdateTarget() string {
	if c.DBPath != "" {
		return c.DBPath
	}
	ext := ".mmdb"
	if c.UpdateSource == SourceIP2Location && !strings.Contains(strings.ToUpper(c.UpdateCity), "MMDB") {
		ext = ".BIN"
	}
	return filepath.Join(c.UpdateDir, c.UpdateCity+ext)
}

// ASNUpdateTarget is where the ASN database's downloads go: over GEOIP_ASN_DB
// when set, else into the update folder.
func (c Config) ASNUpdateTarget() string {
	if c.ASNPath != "" {
		return c.ASNPath
	}
	return filepath.Join(c.UpdateDir, c.UpdateASN+".mmdb")
}

// LogValue shows the configuration in logs with secrets masked: the
// IP2Location token, and any user or password in the download URL and
// REDIS_URL.
func (c Config) LogValue() slog.Value {
	token := mask(c.Token)
	return slog.GroupValue(
		slog.Any("settings", c.Settings),
		slog.String("db", c.DBPath), slog.String("asn_db", c.ASNPath),
		slog.String("overrides", c.OverridesPath),
		slog.String("keys_file", c.KeysPath), // the path only: the keys are never logged
		slog.String("watch_interval", c.WatchInterval.String()),
		slog.String("ip2location_token", token), slog.String("ip2location_product", c.Product),
		slog.String("ip2location_download_url", redactURL(c.DownloadURL)),
		slog.String("update_interval", c.UpdateInterval.String()), slog.String("update_dir", c.UpdateDir),
		slog.String("update_source", c.UpdateSource), slog.String("update_city", c.UpdateCity), slog.String("update_asn", c.UpdateASN),
		slog.String("update_url", redactURL(c.UpdateURL)),
		slog.String("maxmind_account_id", c.MaxMindAccountID), slog.String("maxmind_license_key", mask(c.MaxMindLicenseKey)),
		slog.String("db_max_age", c.DBMaxAge.String()),
		slog.String("cache_max_age", c.CacheMaxAge.String()), slog.Int("cache_size", c.CacheSize),
		slog.Any("gc", c.GC),
	)
}

func mask(secret string) string {
	if secret == "" {
		return ""
	}
	return "***"
}

// LogValue shows the collector's settings and where they came from.
func (g GC) LogValue() slog.Value {
	percent := "off"
	if g.Percent >= 0 {
		percent = strconv.Itoa(g.Percent)
	}
	source := "geoip default"
	if g.PercentFromEnv {
		source = "GOGC"
	}
	limit, limitSource := g.MemoryLimitEnv, "GOMEMLIMIT"
	if limit == "" {
		limit, limitSource = strconv.FormatInt(g.MemoryLimit>>20, 10)+"MiB", "geoip default"
	}
	return slog.GroupValue(
		slog.String("gogc", percent), slog.String("gogc_from", source),
		slog.String("memory_limit", limit), slog.String("memory_limit_from", limitSource),
	)
}

// redactURL hides a URL's user and password and its query (a mirror URL
// may carry a token there); the host and path say which mirror it is.
func redactURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable)"
	}
	hadUser := u.User != nil
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "***"
	}
	s := u.String()
	if hadUser {
		s = strings.Replace(s, "://", "://***@", 1)
	}
	return s
}
