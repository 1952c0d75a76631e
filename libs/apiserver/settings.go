package apiserver

import (
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

	"github.com/apistack/platform/libs/apiserver/redisconn"
)

// Settings are the settings every service on the library shares, read
// from the environment once by LoadSettings with one set of rules:
//
//	PORT      0 to 65535; 0 listens on a free port (tests; the address is logged)
//	HOST      the listen host
//	APP_ENV   development or production; wins over NODE_ENV, its alias
//	LOG_LEVEL debug, info, warn (or warning), error; any case
//	REDIS_URL a URL redisconn.Open accepts; empty for none
//
// Surrounding spaces are ignored. A service loads them in its config
// package, opens its connections from them and passes them to New as
// Config.Settings, so the library does not read those variables again.
type Settings struct {
	Env      string     // "development" or "production"
	LogLevel slog.Level // slog.LevelDebug, Info, Warn or Error
	Host     string
	Port     int
	// RedisURL is where shared state lives. A service opens its own
	// client from it (redisconn.Open) and passes it as Config.Redis.
	RedisURL string
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

// LoadSettings reads PORT, HOST, APP_ENV/NODE_ENV, LOG_LEVEL and REDIS_URL
// through getenv (os.Getenv outside tests). Every invalid value is
// reported, all at once, as NAME="value": what is wanted.
func LoadSettings(getenv func(string) string, d Defaults) (Settings, error) {
	return loadSettings(func(key string) (string, string) { return getenv(key), key }, d)
}

// lookup returns a setting's raw value and the name to report it under
// (the variable, or the Config field that overrides it).
type lookup func(key string) (value, name string)

func loadSettings(get lookup, d Defaults) (Settings, error) {
	s := Settings{Env: EnvDevelopment, LogLevel: slog.LevelInfo, Host: DefaultHost, Port: DefaultPort}
	if d.Port != 0 {
		s.Port = d.Port
	}
	if d.Host != "" {
		s.Host = d.Host
	}
	var errs []error
	bad := func(name, value, want string) { errs = append(errs, fmt.Errorf("%s=%q: %s", name, value, want)) }

	if v, name := get("PORT"); strings.TrimSpace(v) != "" {
		p, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || p < 0 || p > 65535 {
			bad(name, v, "must be a port number from 0 to 65535 (0: any free port)")
		} else {
			s.Port = p
		}
	}
	if v, _ := get("HOST"); strings.TrimSpace(v) != "" {
		s.Host = strings.TrimSpace(v)
	}
	v, name := get("APP_ENV") // APP_ENV wins over NODE_ENV (DESIGN.md)
	if strings.TrimSpace(v) == "" {
		v, name = get("NODE_ENV")
	}
	if env := strings.TrimSpace(v); env != "" {
		if env != EnvDevelopment && env != EnvProduction {
			bad(name, v, "must be development or production")
		} else {
			s.Env = env
		}
	}
	if v, name := get("LOG_LEVEL"); strings.TrimSpace(v) != "" {
		if l, ok := parseLevel(v); ok {
			s.LogLevel = l
		} else {
			bad(name, v, "must be debug, info, warn or error")
		}
	}
	if v, name := get("REDIS_URL"); strings.TrimSpace(v) != "" {
		if err := redisconn.Validate(strings.TrimSpace(v)); err != nil {
			// The URL may hold a password: name it, never echo it.
			errs = append(errs, fmt.Errorf("%s=%q: %v", name, redisconn.Redacted(v), strings.TrimPrefix(err.Error(), "REDIS_URL: ")))
		} else {
			s.RedisURL = strings.TrimSpace(v)
		}
	}
	return s, errors.Join(errs...)
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
// not made by LoadSettings), and fills what a zero value leaves open: an
// empty Env is development, an empty Host is DefaultHost (never every
// interface by accident). Port 0 stays a free port.
func (s *Settings) check() error {
	var errs []error
	switch s.Env {
	case "":
		s.Env = EnvDevelopment
	case EnvDevelopment, EnvProduction:
	default:
		errs = append(errs, fmt.Errorf("Settings.Env=%q: must be development or production", s.Env))
	}
	if s.Host == "" {
		s.Host = DefaultHost
	}
	if s.Port < 0 || s.Port > 65535 {
		errs = append(errs, fmt.Errorf("Settings.Port=%d: must be from 0 to 65535", s.Port))
	}
	if s.RedisURL != "" {
		if err := redisconn.Validate(s.RedisURL); err != nil {
			errs = append(errs, fmt.Errorf("Settings.RedisURL=%q: %v", redisconn.Redacted(s.RedisURL), err))
		}
	}
	return errors.Join(errs...)
}

// Production reports whether the environment is production.
func (s Settings) Production() bool { return s.Env == EnvProduction }

// LogValue shows the settings in logs with REDIS_URL's secrets masked.
func (s Settings) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("env", s.Env), slog.String("log_level", s.LogLevel.String()),
		slog.String("host", s.Host), slog.Int("port", s.Port),
		slog.String("redis_url", redisconn.Redacted(s.RedisURL)),
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
