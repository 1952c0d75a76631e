// Package config reads the chat service's settings from the environment
// (DESIGN.md): defaults for a local run, and a start-up error naming the
// variable for any invalid value.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/apistack/platform/libs/apiserver/ratelimit"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// maxLimit bounds the CHAT_MAX_* variables: a limit is there to stay small.
const maxLimit = 100_000

// Config is everything the chat process needs to start.
type Config struct {
	Host       string
	Port       int
	Env        string // development or production
	LogLevel   slog.Level
	RedisURL   string // empty: memory engine
	AdminToken string
	// AdminTokenGenerated is true when AdminToken was made up at start-up
	// (development only) and must be logged for the developer to use.
	AdminTokenGenerated bool
	History             int
	PublicRead          bool
	CORSOrigin          string
	// Limits are CHAT_MAX_FILTERS, CHAT_MAX_REGEX_FILTERS, CHAT_MAX_COMMANDS
	// and CHAT_MAX_CHANNELS.
	Limits chat.Limits
	// SendLimit is CHAT_SEND_LIMIT, the per-user message rate (zero: off).
	SendLimit chat.SendLimit
}

// Production reports whether NODE_ENV/APP_ENV say production.
func (c Config) Production() bool { return c.Env == "production" }

// Engine names the storage engine for logs.
func (c Config) Engine() string {
	if c.RedisURL != "" {
		return "redis"
	}
	return "memory"
}

// LogValue prints the config with secrets masked.
func (c Config) LogValue() slog.Value {
	redisURL := c.RedisURL
	if i := strings.Index(redisURL, "@"); i >= 0 {
		if j := strings.Index(redisURL, "://"); j >= 0 && j < i {
			redisURL = redisURL[:j+3] + "***" + redisURL[i:]
		}
	}
	return slog.GroupValue(
		slog.String("host", c.Host), slog.Int("port", c.Port), slog.String("env", c.Env),
		slog.String("log_level", c.LogLevel.String()), slog.String("engine", c.Engine()),
		slog.String("redis_url", redisURL), slog.String("admin_token", "***"),
		slog.Int("history", c.History), slog.Bool("public_read", c.PublicRead),
		slog.String("cors_origin", c.CORSOrigin),
		slog.Int("max_filters", c.Limits.Filters), slog.Int("max_regex_filters", c.Limits.RegexFilters),
		slog.Int("max_commands", c.Limits.Commands), slog.Int("max_channels", c.Limits.Channels),
		slog.String("send_limit", c.SendLimit.String()),
	)
}

// Load reads the configuration from getenv (os.Getenv in production, a map
// in tests).
func Load(getenv func(string) string) (Config, error) {
	c := Config{Host: "127.0.0.1", Port: 3000, Env: "development", History: chat.DefaultHistory, PublicRead: true, CORSOrigin: "*",
		Limits: chat.Limits{}.WithDefaults(), SendLimit: chat.DefaultSendLimit}
	var errs []string
	bad := func(name, value, want string) { errs = append(errs, fmt.Sprintf("%s=%q: %s", name, value, want)) }

	if v := getenv("HOST"); v != "" {
		c.Host = v
	}
	if v := getenv("PORT"); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 1 || p > 65535 {
			bad("PORT", v, "want a port number 1..65535")
		}
		c.Port = p
	}
	env := getenv("NODE_ENV")
	if v := getenv("APP_ENV"); v != "" { // APP_ENV wins (DESIGN.md)
		env = v
	}
	switch env {
	case "", "development":
	case "production":
		c.Env = "production"
	default:
		bad("APP_ENV/NODE_ENV", env, "want development or production")
	}
	if v := getenv("LOG_LEVEL"); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			bad("LOG_LEVEL", v, "want debug, info, warn or error")
		}
	}
	c.RedisURL = strings.TrimSpace(getenv("REDIS_URL"))
	if v := getenv("CHAT_HISTORY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1_000_000 {
			bad("CHAT_HISTORY", v, "want a number of messages 1..1000000")
		}
		c.History = n
	}
	for _, l := range []struct {
		name string
		to   *int
	}{
		{"CHAT_MAX_FILTERS", &c.Limits.Filters},
		{"CHAT_MAX_REGEX_FILTERS", &c.Limits.RegexFilters},
		{"CHAT_MAX_COMMANDS", &c.Limits.Commands},
		{"CHAT_MAX_CHANNELS", &c.Limits.Channels},
	} {
		if v := getenv(l.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxLimit {
				bad(l.name, v, fmt.Sprintf("want a number 1..%d", maxLimit))
			}
			*l.to = n
		}
	}
	if c.Limits.RegexFilters > c.Limits.Filters {
		c.Limits.RegexFilters = c.Limits.Filters
	}
	if v := getenv("CHAT_SEND_LIMIT"); v != "" {
		l, err := ParseSendLimit(v)
		if err != nil {
			bad("CHAT_SEND_LIMIT", v, err.Error())
		}
		c.SendLimit = l
	}
	if v := getenv("CHAT_PUBLIC_READ"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad("CHAT_PUBLIC_READ", v, "want true or false")
		}
		c.PublicRead = b
	}
	if v := getenv("CORS_ORIGIN"); v != "" {
		c.CORSOrigin = v
	}
	c.AdminToken = getenv("CHAT_ADMIN_TOKEN")
	switch {
	case c.AdminToken == "" && c.Production():
		errs = append(errs, "CHAT_ADMIN_TOKEN is required in production")
	case c.AdminToken == "":
		t, err := chat.NewToken()
		if err != nil {
			return Config{}, fmt.Errorf("config: %w", err)
		}
		c.AdminToken, c.AdminTokenGenerated = t, true
	case len(c.AdminToken) < 16:
		errs = append(errs, "CHAT_ADMIN_TOKEN: want at least 16 characters")
	}
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("config: %s", strings.Join(errs, "; "))
	}
	return c, nil
}

// ParseSendLimit reads CHAT_SEND_LIMIT: "<max>/<window>" like "20/30s" or
// "100/1m", or "off" (also "0" and "false") for no limit, which is the zero
// SendLimit; empty is the default, 20/30s.
func ParseSendLimit(s string) (chat.SendLimit, error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "":
		return chat.DefaultSendLimit, nil
	case "off", "0", "false":
		return chat.SendLimit{}, nil
	}
	maxText, windowText, ok := strings.Cut(s, "/")
	if !ok {
		return chat.SendLimit{}, errors.New("want <max>/<window> like 20/30s, or off")
	}
	n, err := strconv.Atoi(strings.TrimSpace(maxText))
	if err != nil || n < 1 {
		return chat.SendLimit{}, errors.New("the max must be a positive integer")
	}
	w, err := ratelimit.ParseWindow(strings.TrimSpace(windowText))
	if err != nil {
		return chat.SendLimit{}, errors.New("the window must be a number and a unit (ms, s, m, h, d)")
	}
	l := chat.SendLimit{Max: n, Window: w}
	if err := l.Validate(); err != nil {
		return chat.SendLimit{}, err
	}
	return l, nil
}
