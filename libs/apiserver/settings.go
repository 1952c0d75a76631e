package apiserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/apistack/platform/libs/apiserver/clientip"
	"github.com/apistack/platform/libs/apiserver/ratelimit"
	"github.com/apistack/platform/libs/apiserver/redisconn"
	"github.com/apistack/platform/libs/apiserver/tracing"
)

// Settings are every setting the library reads from the environment,
// read once by LoadSettings with one set of rules (the README's
// configuration table lists them with their defaults):
//
//	PORT      0 to 65535; 0 listens on a free port (tests; the address is logged)
//	HOST      the listen host
//	APP_ENV   development or production; wins over NODE_ENV, its alias
//	LOG_LEVEL debug, info, warn (or warning), error; any case
//	REDIS_URL a URL redisconn.Open accepts; empty for none
//	API_TOKEN the static bearer token
//	RATE_LIMIT_MAX, RATE_LIMIT_WINDOW, RATE_LIMIT_IPV6_PREFIX,
//	RATE_LIMIT_ALLOW, RATE_LIMIT_FAIL_CLOSED, METRICS_ENABLED,
//	CORS_ORIGIN, TRUSTED_PROXIES, SHUTDOWN_TIMEOUT
//
//	OTEL_*    tracing.LoadConfig's (Settings.Tracing)
//
// Surrounding spaces are ignored. A service loads them in its config
// package, opens its connections from them and passes them to New as
// Config.Settings, so the library never reads the environment itself.
// It sets tracing up once from Settings.Tracing (tracing.Setup) and
// passes the provider as Config.Tracing.
//
// Settings built by hand are checked by New, which fills the zero values
// with the defaults (so MetricsDisabled, not MetricsEnabled: the zero
// value serves /metrics, as METRICS_ENABLED's default does).
type Settings struct {
	Env      string     // "development" or "production"
	LogLevel slog.Level // slog.LevelDebug, Info, Warn or Error
	Host     string
	Port     int
	// RedisURL is where shared state lives. A service opens its own
	// client from it (redisconn.Open) and passes it as Config.Redis.
	RedisURL string

	// APIToken is API_TOKEN, the static bearer token (empty: none). It
	// is never logged: LogValue says only whether it is set.
	APIToken string

	RateLimitMax        int           // RATE_LIMIT_MAX: requests per window per client
	RateLimitWindow     time.Duration // RATE_LIMIT_WINDOW
	RateLimitIPv6Prefix int           // RATE_LIMIT_IPV6_PREFIX: bits naming an IPv6 client
	RateLimitAllow      []string      // RATE_LIMIT_ALLOW: IPs or CIDRs never limited
	RateLimitFailClosed bool          // RATE_LIMIT_FAIL_CLOSED: 503 while Redis is unreachable
	MetricsDisabled     bool          // METRICS_ENABLED=false: no /metrics
	CORSOrigins         []string      // CORS_ORIGIN: "*" or origins
	TrustedProxies      []string      // TRUSTED_PROXIES: IPs or CIDRs
	ShutdownTimeout     time.Duration // SHUTDOWN_TIMEOUT: drain deadline

	// Tracing is every OTEL_* variable (tracing.LoadConfig), which a service hands to
	// tracing.Setup: read here with the rest, so the start-up line shows it too.
	Tracing tracing.Config
}

// Defaults are a service's own defaults for LoadSettings; a zero field
// takes the library's (DefaultPort, DefaultHost).
type Defaults struct {
	Port int
	Host string
}

// The two environments (APP_ENV, NODE_ENV).
const (
	EnvDevelopment = "development"
	EnvProduction  = "production"
)

// LoadSettings reads every variable of Settings through getenv
// (os.Getenv outside tests). Every invalid value is reported, all at
// once, as NAME="value": what is wanted.
func LoadSettings(getenv func(string) string, d Defaults) (Settings, error) {
	s, err := loadSettings(defaultSettings(d), func(key string) (string, string, bool) {
		v := getenv(key)
		return v, key, strings.TrimSpace(v) != ""
	})
	tc, terr := tracing.LoadConfig(getenv)
	s.Tracing = tc
	return s, errors.Join(err, terr)
}

// defaultSettings are the settings of an empty environment.
func defaultSettings(d Defaults) Settings {
	return Settings{
		Env: EnvDevelopment, LogLevel: slog.LevelInfo, Host: cmp.Or(d.Host, DefaultHost), Port: cmp.Or(d.Port, DefaultPort),
		RateLimitMax: DefaultRateLimitMax, RateLimitWindow: defaultRateLimitWindow, RateLimitIPv6Prefix: DefaultRateLimitIPv6,
		CORSOrigins: []string{"*"}, ShutdownTimeout: DefaultShutdownTimeout,
	}
}

// defaultRateLimitWindow is DefaultRateLimitWindow as a duration.
const defaultRateLimitWindow = 15 * time.Minute

// lookup returns a setting's raw value, the name to report it under (the
// variable, or the Config field that overrides it) and whether it is set
// at all: a set empty list (Config.TrustedProxies = []string{}) clears
// the list, an unset one keeps it.
type lookup func(key string) (value, name string, set bool)

// loadSettings applies what get sets over s, which holds the defaults or
// settings given to New.
func loadSettings(s Settings, get lookup) (Settings, error) {
	var errs []error
	bad := func(name, value, want string) { errs = append(errs, fmt.Errorf("%s=%q: %s", name, value, want)) }
	// scalar is a variable with a value to parse: set and not blank.
	scalar := func(key string) (raw, trimmed, name string, ok bool) {
		raw, name, set := get(key)
		trimmed = strings.TrimSpace(raw)
		return raw, trimmed, name, set && trimmed != ""
	}

	if v, p, name, ok := scalar("PORT"); ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 65535 {
			bad(name, v, "must be a port number from 0 to 65535 (0: any free port)")
		} else {
			s.Port = n
		}
	}
	if _, h, _, ok := scalar("HOST"); ok {
		s.Host = h
	}
	v, env, name, ok := scalar("APP_ENV") // APP_ENV wins over NODE_ENV (DESIGN.md)
	if !ok {
		v, env, name, ok = scalar("NODE_ENV")
	}
	if ok {
		if env != EnvDevelopment && env != EnvProduction {
			bad(name, v, "must be development or production")
		} else {
			s.Env = env
		}
	}
	if v, _, name, ok := scalar("LOG_LEVEL"); ok {
		if l, ok := parseLevel(v); ok {
			s.LogLevel = l
		} else {
			bad(name, v, "must be debug, info, warn or error")
		}
	}
	if v, u, name, ok := scalar("REDIS_URL"); ok {
		if err := redisconn.Validate(u); err != nil {
			// The URL may hold a password: name it, never echo it.
			errs = append(errs, fmt.Errorf("%s=%q: %v", name, redisconn.Redacted(v), strings.TrimPrefix(err.Error(), "REDIS_URL: ")))
		} else {
			s.RedisURL = u
		}
	}
	if _, tok, _, ok := scalar("API_TOKEN"); ok {
		s.APIToken = tok
	}
	if v, n, name, ok := scalar("RATE_LIMIT_MAX"); ok {
		if m, err := strconv.Atoi(n); err != nil || m < 1 {
			bad(name, v, "must be a positive integer")
		} else {
			s.RateLimitMax = m
		}
	}
	if v, w, name, ok := scalar("RATE_LIMIT_WINDOW"); ok {
		if d, err := ratelimit.ParseWindow(w); err != nil {
			bad(name, v, "must be a number and a unit (ms, s, m, h, d), like 15m or 30s")
		} else {
			s.RateLimitWindow = d
		}
	}
	if v, p, name, ok := scalar("RATE_LIMIT_IPV6_PREFIX"); ok {
		if n, err := strconv.Atoi(strings.TrimPrefix(p, "/")); err != nil || n < 1 || n > 128 {
			bad(name, v, "must be a prefix length from 1 to 128, like 64")
		} else {
			s.RateLimitIPv6Prefix = n
		}
	}
	for _, l := range []struct {
		key string
		dst *[]string
	}{{"RATE_LIMIT_ALLOW", &s.RateLimitAllow}, {"TRUSTED_PROXIES", &s.TrustedProxies}} {
		if v, name, set := get(l.key); set {
			list := splitList(v)
			if _, err := clientip.NewSet(list); err != nil {
				bad(name, v, err.Error())
			} else {
				*l.dst = list
			}
		}
	}
	for _, b := range []struct {
		key    string
		dst    *bool
		invert bool
	}{{"RATE_LIMIT_FAIL_CLOSED", &s.RateLimitFailClosed, false}, {"METRICS_ENABLED", &s.MetricsDisabled, true}} {
		if v, t, name, ok := scalar(b.key); ok {
			if on, err := ParseBool(t); err != nil {
				bad(name, v, err.Error())
			} else {
				*b.dst = on != b.invert
			}
		}
	}
	if v, _, name, ok := scalar("CORS_ORIGIN"); ok {
		origins := splitList(v)
		if err := checkOrigins(origins); err != nil {
			bad(name, v, err.Error())
		} else if len(origins) > 0 {
			s.CORSOrigins = origins
		}
	}
	if v, t, name, ok := scalar("SHUTDOWN_TIMEOUT"); ok {
		if d, err := time.ParseDuration(t); err != nil || d <= 0 {
			bad(name, v, "must be a positive duration like 10s")
		} else {
			s.ShutdownTimeout = d
		}
	}
	return s, errors.Join(errs...)
}

// checkOrigins is CORS_ORIGIN's rule: "*", or web origins.
func checkOrigins(origins []string) error {
	for _, o := range origins {
		if o != "*" && !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") {
			return errors.New("must be *, or origins like https://example.com separated by commas")
		}
	}
	return nil
}

// parseLevel reads a LOG_LEVEL. "warning" is accepted as warn: it is
// what Python and many log shippers call that level.
func parseLevel(v string) (slog.Level, bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "debug":
		return slog.LevelDebug, true
	case "info":
		return slog.LevelInfo, true
	case "warn", "warning":
		return slog.LevelWarn, true
	case "error":
		return slog.LevelError, true
	}
	return 0, false
}

// check reports what is wrong with settings built by hand (Config.Settings
// not made by LoadSettings), and fills what a zero value leaves open with
// the defaults: an empty Env is development, an empty Host is DefaultHost
// (never every interface by accident), a zero limit, window, prefix or
// timeout is the default one, no CORS origins are "*". Port 0 stays a
// free port.
func (s *Settings) check() error {
	var errs []error
	bad := func(field, value, want string) {
		errs = append(errs, fmt.Errorf("%s=%s: %s", "Settings."+field, value, want))
	}
	def := defaultSettings(Defaults{})
	switch s.Env {
	case "":
		s.Env = EnvDevelopment
	case EnvDevelopment, EnvProduction:
	default:
		bad("Env", strconv.Quote(s.Env), "must be development or production")
	}
	s.Host = cmp.Or(s.Host, DefaultHost)
	if s.Port < 0 || s.Port > 65535 {
		bad("Port", strconv.Itoa(s.Port), "must be from 0 to 65535")
	}
	if s.RedisURL != "" {
		if err := redisconn.Validate(s.RedisURL); err != nil {
			bad("RedisURL", strconv.Quote(redisconn.Redacted(s.RedisURL)), err.Error())
		}
	}
	if s.RateLimitMax < 0 {
		bad("RateLimitMax", strconv.Itoa(s.RateLimitMax), "must be a positive integer")
	}
	s.RateLimitMax = cmp.Or(s.RateLimitMax, def.RateLimitMax)
	if s.RateLimitWindow < 0 || (s.RateLimitWindow > 0 && s.RateLimitWindow%time.Millisecond != 0) {
		bad("RateLimitWindow", s.RateLimitWindow.String(), "must be a positive whole number of milliseconds")
	}
	s.RateLimitWindow = cmp.Or(s.RateLimitWindow, def.RateLimitWindow)
	if s.RateLimitIPv6Prefix < 0 || s.RateLimitIPv6Prefix > 128 {
		bad("RateLimitIPv6Prefix", strconv.Itoa(s.RateLimitIPv6Prefix), "must be a prefix length from 1 to 128")
	}
	s.RateLimitIPv6Prefix = cmp.Or(s.RateLimitIPv6Prefix, def.RateLimitIPv6Prefix)
	for _, l := range []struct {
		field string
		list  []string
	}{{"RateLimitAllow", s.RateLimitAllow}, {"TrustedProxies", s.TrustedProxies}} {
		if _, err := clientip.NewSet(l.list); err != nil {
			bad(l.field, strconv.Quote(strings.Join(l.list, ",")), err.Error())
		}
	}
	if err := checkOrigins(s.CORSOrigins); err != nil {
		bad("CORSOrigins", strconv.Quote(strings.Join(s.CORSOrigins, ",")), err.Error())
	}
	if len(s.CORSOrigins) == 0 {
		s.CORSOrigins = def.CORSOrigins
	}
	if s.ShutdownTimeout < 0 {
		bad("ShutdownTimeout", s.ShutdownTimeout.String(), "must be positive")
	}
	s.ShutdownTimeout = cmp.Or(s.ShutdownTimeout, def.ShutdownTimeout)
	return errors.Join(errs...)
}

// Production reports whether the environment is production.
func (s Settings) Production() bool { return s.Env == EnvProduction }

// LogValue shows every setting in logs, each under its variable's name in
// lower case, with the secrets masked: REDIS_URL's user and password, the
// API token, of which only whether it is set is shown, and the OTLP
// exporter's header values (under "tracing").
func (s Settings) LogValue() slog.Value {
	token := "unset"
	if s.APIToken != "" {
		token = "set"
	}
	return slog.GroupValue(
		slog.String("env", s.Env), slog.String("log_level", s.LogLevel.String()),
		slog.String("host", s.Host), slog.Int("port", s.Port),
		slog.String("redis_url", redisconn.Redacted(s.RedisURL)),
		slog.String("api_token", token),
		slog.Int("rate_limit_max", s.RateLimitMax), slog.String("rate_limit_window", s.RateLimitWindow.String()),
		slog.Int("rate_limit_ipv6_prefix", s.RateLimitIPv6Prefix),
		slog.String("rate_limit_allow", strings.Join(s.RateLimitAllow, ",")),
		slog.Bool("rate_limit_fail_closed", s.RateLimitFailClosed),
		slog.Bool("metrics_enabled", !s.MetricsDisabled),
		slog.String("cors_origin", strings.Join(s.CORSOrigins, ",")),
		slog.String("trusted_proxies", strings.Join(s.TrustedProxies, ",")),
		slog.String("shutdown_timeout", s.ShutdownTimeout.String()),
		slog.Any("tracing", s.Tracing),
	)
}

// NewLogger is the logger the settings call for: JSON lines in
// production, text in development, at LogLevel.
func NewLogger(s Settings, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: s.LogLevel}
	if s.Production() {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// CheckHealth asks the server these settings describe for /healthz and
// succeeds on 200: the `healthcheck` subcommand of a service, run by
// Docker in images that have no shell or curl. It asks 127.0.0.1 when the
// server listens on every interface, and gives up after 3 seconds.
func CheckHealth(ctx context.Context, s Settings) error {
	if s.Port == 0 {
		return errors.New("healthcheck: PORT=0 listens on a free port; set the port the server uses")
	}
	host := s.Host
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	url := "http://" + net.JoinHostPort(host, strconv.Itoa(s.Port)) + "/healthz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck %s: %w", url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck %s: %s", url, resp.Status)
	}
	return nil
}
