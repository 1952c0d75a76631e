// Package config reads the chat service's settings from the environment
// (DESIGN.md), once, at start-up: the common ones through the library's
// rules (apiserver.LoadSettings), then chat's own. Defaults suit a local
// run; every invalid value is reported at once, naming its variable.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/jwtauth"
	"github.com/apistack/platform/libs/apiserver/ratelimit"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/realtime"
	"github.com/apistack/platform/services/chat/internal/webhooks"
)

// DefaultPort is chat's port when PORT is unset (DESIGN.md).
const DefaultPort = 3000

// maxLimit bounds the CHAT_MAX_* variables: a limit is there to stay small.
const maxLimit = 100_000

// placeholderTokens are the CHAT_ADMIN_TOKEN values the repository publishes (compose, the
// Kubernetes base, the docs, the production secrets example): anyone may know them, so
// production refuses them.
var placeholderTokens = []string{"dev-admin-token-change-me", "replace-with-a-long-random-token"}

// placeholderJWTSecrets are the CHAT_JWT_SECRET values the repository
// publishes (compose, the docs): production refuses them.
var placeholderJWTSecrets = []string{"dev-jwt-secret-change-me-0123456789abcdef"}

// maxWriters bounds CHAT_WS_WRITERS: more writers than cores only take
// the Ps the network poller needs.
const maxWriters = 1024

// Config is everything the chat process needs to start, read once: the
// server gets Settings as they are and reads no environment itself. The
// OTEL_* variables are Settings.Tracing, which cmd/chat sets tracing up from.
type Config struct {
	// Settings are the library's variables (apiserver.Settings): PORT,
	// HOST, APP_ENV/NODE_ENV, LOG_LEVEL, REDIS_URL (empty: memory
	// engine), API_TOKEN, RATE_LIMIT_*, METRICS_ENABLED, CORS_ORIGIN,
	// TRUSTED_PROXIES and SHUTDOWN_TIMEOUT.
	Settings   apiserver.Settings
	AdminToken string
	// AdminTokenGenerated is true when AdminToken was made up at start-up
	// (development only) and must be logged for the developer to use.
	AdminTokenGenerated bool
	History             int
	PublicRead          bool
	// OpenChannels is CHAT_OPEN_CHANNELS (default true): a viewer's first
	// message to a new name opens a channel, in a pool of its own (see
	// chat/openchannels.go).
	OpenChannels bool
	// Limits are CHAT_MAX_FILTERS, CHAT_MAX_REGEX_FILTERS, CHAT_MAX_COMMANDS,
	// CHAT_MAX_CHANNELS and CHAT_MAX_CHANNEL_ROLES.
	Limits chat.Limits
	// SendLimit is CHAT_SEND_LIMIT, the per-user message rate (zero: off).
	SendLimit chat.SendLimit
	// Sockets are the CHAT_WS_MAX_*, CHAT_WS_USER_RESERVE_PERCENT and
	// CHAT_WS_IPV*_NET_PREFIX limits (realtime.LimitsFromEnv).
	Sockets realtime.Limits
	// Writers is CHAT_WS_WRITERS, the goroutines that write to sockets
	// (realtime.Options.Writers; zero: realtime.DefaultWriters).
	Writers int
	// JWT is the platform identity: CHAT_JWT_SECRET, CHAT_JWKS_URL,
	// CHAT_JWT_ISSUER and CHAT_JWT_AUDIENCE. Without a secret and a JWKS
	// URL, only chat's own tokens are accepted.
	JWT JWT
	// EmbedOrigins are CHAT_EMBED_ORIGINS: the sites that may frame the
	// chat page and hand it a token by postMessage (web.Options).
	EmbedOrigins []string
	// WebhookAllowPrivate is CHAT_WEBHOOK_ALLOW_PRIVATE: webhooks may
	// reach private, loopback and link-local addresses (default false).
	WebhookAllowPrivate bool
	// SendHook is CHAT_SEND_HOOK_*: the platform's say before a send is
	// stored (URL empty: none).
	SendHook SendHook
}

// SendHook configures the send hook (sendhook.Client).
type SendHook struct {
	URL string
	// Secret is CHAT_SEND_HOOK_SECRET, the whsec_ key requests are signed with.
	Secret  string
	Timeout time.Duration
	// FailOpen is CHAT_SEND_HOOK_FAIL=open: a hook that does not answer
	// lets the message through (closed, the default, refuses it: 503).
	FailOpen bool
}

// DefaultSendHookTimeout is CHAT_SEND_HOOK_TIMEOUT's default.
const DefaultSendHookTimeout = 300 * time.Millisecond

// maxSendHookTimeout bounds CHAT_SEND_HOOK_TIMEOUT: a send waits for it.
const maxSendHookTimeout = 5 * time.Second

// loadSendHook reads the CHAT_SEND_HOOK_* settings; bad reports each wrong one.
func loadSendHook(getenv func(string) string, production bool, bad func(name, value, want string)) SendHook {
	h := SendHook{URL: strings.TrimSpace(getenv("CHAT_SEND_HOOK_URL")), Secret: getenv("CHAT_SEND_HOOK_SECRET"), Timeout: DefaultSendHookTimeout}
	if v := getenv("CHAT_SEND_HOOK_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > maxSendHookTimeout {
			bad("CHAT_SEND_HOOK_TIMEOUT", v, "want a duration like 300ms, at most 5s")
		}
		h.Timeout = d
	}
	switch v := strings.ToLower(strings.TrimSpace(getenv("CHAT_SEND_HOOK_FAIL"))); v {
	case "", "closed":
	case "open":
		h.FailOpen = true
	default:
		bad("CHAT_SEND_HOOK_FAIL", v, "want open or closed")
	}
	if h.URL == "" {
		return h
	}
	u, err := url.Parse(h.URL)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil:
		bad("CHAT_SEND_HOOK_URL", h.URL, "want an http(s) URL without credentials")
	case production && u.Scheme != "https" && !privateHost(u.Hostname()):
		bad("CHAT_SEND_HOOK_URL", h.URL, "want https in production for a public host")
	}
	if _, err := webhooks.SecretKey(h.Secret); err != nil {
		bad("CHAT_SEND_HOOK_SECRET", mask(h.Secret), "want the whsec_ secret the hook verifies requests with (CHAT_SEND_HOOK_URL is set): "+err.Error())
	}
	return h
}

// privateHost reports whether host is a literal non-public address or a
// name without dots (a service name on the platform's own network).
func privateHost(host string) bool {
	if a, err := netip.ParseAddr(host); err == nil {
		return !webhooks.Public(a)
	}
	return !strings.Contains(host, ".")
}

// JWT configures platform tokens (jwtauth).
type JWT struct {
	Secret   string
	JWKSURL  string
	Issuer   string
	Audience string
}

// Enabled reports whether platform tokens are accepted.
func (j JWT) Enabled() bool { return j.Secret != "" || j.JWKSURL != "" }

// Verifier returns the verifier of these settings, nil when disabled.
func (j JWT) Verifier() (*jwtauth.Verifier, error) {
	if !j.Enabled() {
		return nil, nil
	}
	return jwtauth.New(jwtauth.Config{Secret: []byte(j.Secret), JWKSURL: j.JWKSURL, Issuer: j.Issuer, Audience: j.Audience})
}

// loadJWT reads the CHAT_JWT_* settings; bad reports each wrong one.
func loadJWT(getenv func(string) string, production bool, bad func(name, value, want string)) JWT {
	j := JWT{Secret: getenv("CHAT_JWT_SECRET"), JWKSURL: strings.TrimSpace(getenv("CHAT_JWKS_URL")),
		Issuer: strings.TrimSpace(getenv("CHAT_JWT_ISSUER")), Audience: strings.TrimSpace(getenv("CHAT_JWT_AUDIENCE"))}
	switch {
	case j.Secret == "":
	case len(j.Secret) < jwtauth.MinSecretBytes:
		bad("CHAT_JWT_SECRET", "***", fmt.Sprintf("want at least %d bytes (openssl rand -hex 32)", jwtauth.MinSecretBytes))
	case production && slices.Contains(placeholderJWTSecrets, j.Secret):
		bad("CHAT_JWT_SECRET", "***", "a placeholder published in this repository: set a random secret in production (openssl rand -hex 32)")
	}
	if j.JWKSURL != "" {
		u, err := url.Parse(j.JWKSURL)
		switch {
		case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
			bad("CHAT_JWKS_URL", j.JWKSURL, "want an http(s) URL")
		case production && u.Scheme != "https":
			bad("CHAT_JWKS_URL", j.JWKSURL, "want https in production: keys fetched in clear text can be swapped")
		}
	}
	if !j.Enabled() && (j.Issuer != "" || j.Audience != "") {
		errName := "CHAT_JWT_ISSUER"
		if j.Issuer == "" {
			errName = "CHAT_JWT_AUDIENCE"
		}
		bad(errName, getenv(errName), "set CHAT_JWT_SECRET or CHAT_JWKS_URL too, or nothing checks it")
	}
	return j
}

// Production reports whether NODE_ENV/APP_ENV say production.
func (c Config) Production() bool { return c.Settings.Production() }

// Engine names the storage engine for logs.
func (c Config) Engine() string {
	if c.Settings.RedisURL != "" {
		return "redis"
	}
	return "memory"
}

// LogValue prints the config with secrets masked: the admin token never
// appears (a generated one is logged on its own line, in development
// only), nor does REDIS_URL's password.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Any("settings", c.Settings), slog.String("engine", c.Engine()),
		slog.String("admin_token", "***"), slog.Bool("admin_token_generated", c.AdminTokenGenerated),
		slog.Int("history", c.History), slog.Bool("public_read", c.PublicRead),
		slog.Int("max_filters", c.Limits.Filters), slog.Int("max_regex_filters", c.Limits.RegexFilters),
		slog.Int("max_commands", c.Limits.Commands), slog.Int("max_channels", c.Limits.Channels),
		slog.Int("max_channel_roles", c.Limits.ChannelRoles),
		slog.String("send_limit", c.SendLimit.String()),
		slog.Int("ws_max_sockets", c.Sockets.MaxSockets), slog.Int("ws_user_reserve_percent", c.Sockets.UserReservePercent),
		slog.Int("ws_max_sockets_per_user", c.Sockets.MaxSocketsPerUser), slog.Int("ws_max_sockets_per_ip", c.Sockets.MaxSocketsPerIP),
		slog.Int("ws_max_sockets_per_net", c.Sockets.MaxSocketsPerNet),
		slog.Int("ws_ipv4_net_prefix", c.Sockets.IPv4NetPrefix), slog.Int("ws_ipv6_net_prefix", c.Sockets.IPv6NetPrefix),
		slog.Int("ws_max_channels_per_ip", c.Sockets.MaxChannelsPerIP), slog.Int("ws_writers", c.wsWriters()),
		slog.String("jwt_secret", mask(c.JWT.Secret)), slog.String("jwks_url", c.JWT.JWKSURL),
		slog.String("jwt_issuer", c.JWT.Issuer), slog.String("jwt_audience", c.JWT.Audience),
		slog.Any("embed_origins", c.EmbedOrigins),
		slog.Bool("webhook_allow_private", c.WebhookAllowPrivate),
		slog.String("send_hook_url", c.SendHook.URL), slog.String("send_hook_secret", mask(c.SendHook.Secret)),
		slog.Duration("send_hook_timeout", c.SendHook.Timeout), slog.Bool("send_hook_fail_open", c.SendHook.FailOpen),
	)
}

// parseOrigins reads a comma list of web origins: scheme://host[:port],
// nothing more, as browsers report event.origin.
func parseOrigins(v string) ([]string, error) {
	var out []string
	for o := range strings.SplitSeq(v, ",") {
		o = strings.TrimSpace(o)
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return nil, fmt.Errorf("want a comma list of origins like https://example.com, got %q", o)
		}
		out = append(out, o)
	}
	return out, nil
}

// mask shows whether a secret is set, never the secret.
func mask(secret string) string {
	if secret == "" {
		return ""
	}
	return "***"
}

// wsWriters is the number of socket writers the process runs.
func (c Config) wsWriters() int {
	if c.Writers > 0 {
		return c.Writers
	}
	return realtime.DefaultWriters()
}

// LoadSettings reads only the library's settings with chat's defaults:
// Load's first step, and what `chat healthcheck` needs to find the server.
func LoadSettings(getenv func(string) string) (apiserver.Settings, error) {
	return apiserver.LoadSettings(getenv, apiserver.Defaults{Port: DefaultPort})
}

// Load reads the configuration from getenv (os.Getenv in production, a map
// in tests).
func Load(getenv func(string) string) (Config, error) {
	c := Config{History: chat.DefaultHistory, PublicRead: true, OpenChannels: true, Limits: chat.Limits{}.WithDefaults(), SendLimit: chat.DefaultSendLimit}
	var errs []error
	bad := func(name, value, want string) { errs = append(errs, fmt.Errorf("%s=%q: %s", name, value, want)) }

	settings, err := LoadSettings(getenv)
	if err != nil {
		errs = append(errs, err)
	}
	c.Settings = settings
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
		{"CHAT_MAX_CHANNEL_ROLES", &c.Limits.ChannelRoles},
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
	if v := getenv("CHAT_OPEN_CHANNELS"); v != "" {
		b, err := apiserver.ParseBool(v)
		if err != nil {
			bad("CHAT_OPEN_CHANNELS", v, err.Error())
		}
		c.OpenChannels = b
	}
	if v := getenv("CHAT_PUBLIC_READ"); v != "" {
		b, err := apiserver.ParseBool(v)
		if err != nil {
			bad("CHAT_PUBLIC_READ", v, err.Error())
		}
		c.PublicRead = b
	}
	if c.Sockets, err = realtime.LimitsFromEnv(getenv); err != nil {
		errs = append(errs, err)
	}
	if v := getenv("CHAT_WS_WRITERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxWriters {
			bad("CHAT_WS_WRITERS", v, fmt.Sprintf("want a number of socket writers 1..%d, or 0 for the default (GOMAXPROCS-1, at least 1)", maxWriters))
		}
		c.Writers = n
	}
	c.JWT = loadJWT(getenv, c.Production(), bad)
	if v := getenv("CHAT_EMBED_ORIGINS"); v != "" {
		origins, err := parseOrigins(v)
		if err != nil {
			bad("CHAT_EMBED_ORIGINS", v, err.Error())
		}
		c.EmbedOrigins = origins
	}
	if v := getenv("CHAT_WEBHOOK_ALLOW_PRIVATE"); v != "" {
		b, err := apiserver.ParseBool(v)
		if err != nil {
			bad("CHAT_WEBHOOK_ALLOW_PRIVATE", v, err.Error())
		}
		c.WebhookAllowPrivate = b
	}
	c.SendHook = loadSendHook(getenv, c.Production(), bad)
	c.AdminToken = getenv("CHAT_ADMIN_TOKEN")
	switch {
	case c.AdminToken == "" && c.Production():
		errs = append(errs, errors.New("CHAT_ADMIN_TOKEN is required in production"))
	case c.AdminToken == "":
		t, err := chat.NewToken()
		if err != nil {
			return Config{}, fmt.Errorf("config: %w", err)
		}
		c.AdminToken, c.AdminTokenGenerated = t, true
	case len(c.AdminToken) < 16:
		errs = append(errs, errors.New("CHAT_ADMIN_TOKEN: want at least 16 characters"))
	case c.Production() && slices.Contains(placeholderTokens, c.AdminToken):
		errs = append(errs, fmt.Errorf("CHAT_ADMIN_TOKEN is %q, a placeholder published in this repository: set a random token in production (openssl rand -hex 32)", c.AdminToken))
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
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
