package apiserver

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver/clientip"
	"github.com/apistack/platform/libs/apiserver/tracing"
)

// Tag describes a documentation tag (the seed's apiTags entries).
type Tag struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// AuthResult is what a TokenValidator returns (the seed's authentication
// result): Valid, the Error shown when it is not, and the typed Context a
// handler sees as Context.Auth.
type AuthResult[A any] struct {
	Valid   bool
	Error   string
	Context A
	// Err, when set, is answered instead (whatever Valid says): the token
	// could not be checked, e.g. an *Error with status 503 while the user
	// store is down. An error without a status is a 500.
	Err error
}

// TokenValidator checks a bearer token (the seed's apiToken function).
type TokenValidator[A any] func(token string, r *http.Request) AuthResult[A]

// Config configures a Server. Every field is optional.
//
// Each setting of the environment has one value, decided in one order:
// a set Config field beats Settings, which beat the default. Settings
// are Config.Settings when given (a service loaded them with
// LoadSettings, and New reads no environment at all), otherwise New
// loads them itself through Getenv, as a program using the library
// alone wants. Port, Host, Env, LogLevel and RedisURL are only for that
// second case: a service built its logger and connections from its
// Settings, so New refuses them beside Config.Settings, and Getenv too.
type Config[A any] struct {
	// Settings are the settings a service loaded itself with
	// LoadSettings: New uses them as they are (a set field below still
	// beats its setting) and does not read the environment. When nil,
	// New loads them through Getenv.
	Settings *Settings
	Port     int    // PORT, 3000; 0 here means unset (PORT=0 picks a free port)
	Host     string // HOST, 127.0.0.1
	Env      string // APP_ENV or NODE_ENV: development (default) or production
	LogLevel string // LOG_LEVEL: debug, info (default), warn (or warning), error

	APITitle       string // documentation title, "API Documentation"
	APIDescription string
	APIVersion     string // "1.0.0"
	APITags        []Tag

	// APIToken is the static bearer token (API_TOKEN). TokenValidator,
	// when set, is used instead: it is the seed's apiToken function.
	APIToken       string
	TokenValidator TokenValidator[A]
	// AcceptsJWT documents that TokenValidator also takes JWTs (jwtauth):
	// authenticated operations then list a second bearer scheme,
	// platformJWT (bearerFormat JWT), beside bearerAuth.
	AcceptsJWT bool

	RateLimitMax    int      // RATE_LIMIT_MAX, 100 requests ...
	RateLimitWindow string   // RATE_LIMIT_WINDOW, ... per "15m"
	RateLimitAllow  []string // RATE_LIMIT_ALLOW: IPs or CIDRs never limited
	// RateLimitIPv6Prefix is how many leading bits of an IPv6 client's
	// address name it for the limiter (RATE_LIMIT_IPV6_PREFIX, 64): one
	// subscriber usually holds a whole /64, so counting full addresses
	// would give it 2^64 identities. 128 counts each address.
	RateLimitIPv6Prefix int
	// RateLimitFailClosed refuses requests (503) when the Redis limiter
	// cannot be reached; the default lets them through and counts the error.
	RateLimitFailClosed *bool // RATE_LIMIT_FAIL_CLOSED, false
	// IdentityLimit limits every operation per principal (an API key, a JWT
	// subject) instead of per address for the callers it identifies, unless
	// the operation has its own (Operation.IdentityLimit) or no limit.
	IdentityLimit *IdentityLimit

	MetricsEnabled *bool  // METRICS_ENABLED, true
	CORSOrigin     string // CORS_ORIGIN: "*", one origin, or a comma list

	// Redis is the client the rate-limit counters live on, shared by every
	// replica. The caller opened it (redisconn.Open) and closes it after
	// Stop; the library never closes it. Services pass theirs, so one
	// pool serves the service and the limiter.
	Redis redis.UniversalClient
	// RedisURL is REDIS_URL for a server without Config.Redis: New then
	// opens a client of its own for the counters (and closes it on Stop).
	// Ignored when Redis is set.
	RedisURL string
	// ServiceName names the service in shared stores: rate-limit keys are
	// rate:apiserver:<ServiceName>:..., so two services on one Redis
	// database keep separate limits (default "api").
	ServiceName string
	// TrustedProxies are the proxies whose X-Forwarded-For and
	// X-Forwarded-Prefix are believed (TRUSTED_PROXIES).
	TrustedProxies []string

	// Engine is the seed's server_instance: a caller-supplied gin engine.
	// When set, Start only attaches routes and Stop does not close it;
	// port, host and log level are ignored.
	Engine *gin.Engine

	BodyLimit int64 // largest request body, 1 MiB
	// The HTTP server's timeouts (0: the default). Every route keeps them
	// while the rate limiter and its checks run; a WebSocket upgrade (a
	// hijacked connection) and Operation.NoTimeouts lift them after that.
	ReadHeaderTimeout time.Duration // 10s: the request line and headers
	ReadTimeout       time.Duration // 30s: the whole request, body included
	WriteTimeout      time.Duration // 30s: the answer
	IdleTimeout       time.Duration // 120s: between requests on a kept-alive connection
	ShutdownTimeout   time.Duration // SHUTDOWN_TIMEOUT, 10s: drain deadline
	// ValidateResponses checks handler results against the response
	// schema (default true).
	ValidateResponses *bool

	// Tracing sends OpenTelemetry traces (see the tracing package): a span per request
	// and, on Redis, the rate limiter's checks. A service sets tracing up once
	// (tracing.Setup reads the OTEL_* variables) and passes the provider here; nil is
	// tracing off, except without Config.Settings, where New calls tracing.Setup
	// itself through Getenv. Stop flushes and shuts it down, within ShutdownTimeout.
	Tracing *tracing.Provider

	Logger   *slog.Logger         // default: built from Env and LogLevel
	Registry *prometheus.Registry // default: a new registry with Go and process collectors

	// Getenv is what New loads the settings (and tracing's OTEL_*
	// variables) through when Config.Settings is nil (default os.Getenv);
	// tests set it. Set beside Config.Settings, it is an error.
	Getenv func(string) string
}

// settings is the resolved configuration: every value known and valid.
type settings struct {
	common          Settings
	production      bool // common.Production()
	title, desc     string
	version         string
	jwt             bool // Config.AcceptsJWT
	tags            []Tag
	rateMax         int
	rateWindow      time.Duration
	rateAllow       clientip.Set
	rateIPv6Bits    int
	failClosed      bool
	metrics         bool
	corsOrigins     []string
	trusted         clientip.Set
	bodyLimit       int64
	timeouts        timeouts
	shutdownTimeout time.Duration
	validateResults bool
}

// Defaults of the seed and of DESIGN.md.
const (
	DefaultPort            = 3000
	DefaultHost            = "127.0.0.1"
	DefaultRateLimitMax    = 100
	DefaultRateLimitWindow = "15m"
	DefaultRateLimitIPv6   = 64
	DefaultBodyLimit       = 1 << 20
	DefaultShutdownTimeout = 10 * time.Second

	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
)

type timeouts struct{ readHeader, read, write, idle time.Duration }

// resolve decides every setting (Config field, then Settings, then the
// default; see Config) and reports every invalid value at once, each
// naming its variable or field.
func resolve[A any](c *Config[A]) (settings, error) {
	var errs []error
	bad := func(name, value, want string) {
		errs = append(errs, fmt.Errorf("%s=%q: %s", name, value, want))
	}
	s := settings{}

	fields := c.fieldOverrides()
	var common Settings
	var err error
	if c.Settings != nil {
		if c.Port != 0 || c.Host != "" || c.Env != "" || c.LogLevel != "" || c.RedisURL != "" {
			errs = append(errs, errors.New("Config.Settings is set, and so is one of Port, Host, Env, LogLevel, RedisURL: set one or the other"))
		}
		if c.Getenv != nil {
			errs = append(errs, errors.New("Config.Settings is set, and so is Getenv: New reads no environment when given Settings; load them with LoadSettings(getenv, ...)"))
		}
		given := *c.Settings
		if err := given.check(); err != nil {
			errs = append(errs, err)
		}
		common, err = loadSettings(given, func(key string) (string, string, bool) {
			f, ok := fields[key]
			return f.value, f.name, ok
		})
	} else {
		getenv := c.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		common, err = loadSettings(defaultSettings(Defaults{}), func(key string) (string, string, bool) {
			if f, ok := fields[key]; ok {
				return f.value, f.name, true
			}
			v := getenv(key)
			return v, key, strings.TrimSpace(v) != ""
		})
		var terr error
		common.Tracing, terr = tracing.LoadConfig(getenv)
		err = errors.Join(err, terr)
	}
	if err != nil {
		errs = append(errs, err)
	}
	s.common = common
	s.production = common.Production()

	s.title = firstNonEmpty(c.APITitle, "API Documentation")
	s.desc = c.APIDescription
	s.version = firstNonEmpty(c.APIVersion, "1.0.0")
	s.jwt = c.AcceptsJWT
	s.tags = c.APITags

	s.rateMax = common.RateLimitMax
	s.rateWindow = common.RateLimitWindow
	s.rateIPv6Bits = common.RateLimitIPv6Prefix
	s.failClosed = common.RateLimitFailClosed
	s.metrics = !common.MetricsDisabled
	s.corsOrigins = common.CORSOrigins
	s.shutdownTimeout = common.ShutdownTimeout
	// Both lists were checked when loaded: an error here is one already reported.
	s.rateAllow, _ = clientip.NewSet(common.RateLimitAllow)
	s.trusted, _ = clientip.NewSet(common.TrustedProxies)

	s.bodyLimit = c.BodyLimit
	if s.bodyLimit == 0 {
		s.bodyLimit = DefaultBodyLimit
	}
	if s.bodyLimit < 0 {
		bad("BodyLimit", strconv.FormatInt(s.bodyLimit, 10), "must be positive")
	}
	for _, t := range []struct {
		name     string
		dst      *time.Duration
		set, def time.Duration
	}{
		{"ReadHeaderTimeout", &s.timeouts.readHeader, c.ReadHeaderTimeout, DefaultReadHeaderTimeout},
		{"ReadTimeout", &s.timeouts.read, c.ReadTimeout, DefaultReadTimeout},
		{"WriteTimeout", &s.timeouts.write, c.WriteTimeout, DefaultWriteTimeout},
		{"IdleTimeout", &s.timeouts.idle, c.IdleTimeout, DefaultIdleTimeout},
	} {
		*t.dst = cmp.Or(t.set, t.def)
		if t.set < 0 {
			bad(t.name, t.set.String(), "must be positive")
		}
	}
	s.validateResults = c.ValidateResponses == nil || *c.ValidateResponses

	if tok := common.APIToken; s.production && c.TokenValidator == nil && tok != "" && len(tok) < 16 {
		name := "API_TOKEN"
		if c.APIToken != "" {
			name = "APIToken"
		} else if c.Settings != nil {
			name = "Settings.APIToken"
		}
		bad(name, "***", "is shorter than 16 characters, too guessable for production")
	}
	return s, errors.Join(errs...)
}

// field is a Config field's value as its variable would spell it.
type field struct{ value, name string }

// fieldOverrides are the set Config fields that stand for a variable, by
// variable: loadSettings parses them by the variable's rules and reports
// a bad one under the field's name.
func (c *Config[A]) fieldOverrides() map[string]field {
	f := map[string]field{}
	str := func(key, name, v string) {
		if v != "" {
			f[key] = field{v, name}
		}
	}
	list := func(key, name string, v []string) {
		if v != nil { // an empty list is set: it clears the setting
			f[key] = field{strings.Join(v, ","), name}
		}
	}
	boolean := func(key, name string, v *bool) {
		if v != nil {
			f[key] = field{strconv.FormatBool(*v), name}
		}
	}
	if c.Port != 0 {
		str("PORT", "Port", strconv.Itoa(c.Port))
	}
	str("HOST", "Host", c.Host)
	str("APP_ENV", "Env", c.Env)
	str("LOG_LEVEL", "LogLevel", c.LogLevel)
	str("REDIS_URL", "RedisURL", c.RedisURL)
	str("API_TOKEN", "APIToken", c.APIToken)
	if c.RateLimitMax != 0 {
		str("RATE_LIMIT_MAX", "RateLimitMax", strconv.Itoa(c.RateLimitMax))
	}
	str("RATE_LIMIT_WINDOW", "RateLimitWindow", c.RateLimitWindow)
	if c.RateLimitIPv6Prefix != 0 {
		str("RATE_LIMIT_IPV6_PREFIX", "RateLimitIPv6Prefix", strconv.Itoa(c.RateLimitIPv6Prefix))
	}
	list("RATE_LIMIT_ALLOW", "RateLimitAllow", c.RateLimitAllow)
	boolean("RATE_LIMIT_FAIL_CLOSED", "RateLimitFailClosed", c.RateLimitFailClosed)
	boolean("METRICS_ENABLED", "MetricsEnabled", c.MetricsEnabled)
	str("CORS_ORIGIN", "CORSOrigin", c.CORSOrigin)
	list("TRUSTED_PROXIES", "TrustedProxies", c.TrustedProxies)
	if c.ShutdownTimeout != 0 {
		str("SHUTDOWN_TIMEOUT", "ShutdownTimeout", c.ShutdownTimeout.String())
	}
	return f
}

// ParseBool is the one rule for boolean variables, the library's and the
// services' own: true, 1, yes or false, 0, no, in any case. It is narrower
// than strconv.ParseBool (no t or f) and wider (yes, no), and the same
// for every variable so that a value means one thing everywhere.
func ParseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "true", "1", "yes":
		return true, nil
	case "false", "0", "no":
		return false, nil
	}
	return false, errors.New("must be true or false (also 1 or 0, yes or no)")
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if p := strings.TrimSpace(part); p != "" {
			out = append(out, p)
		}
	}
	return out
}
