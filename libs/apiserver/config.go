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
	"github.com/apistack/platform/libs/apiserver/ratelimit"
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

// Config configures a Server. Every field is optional: a set field beats
// the environment, which beats the default (see the README table).
type Config[A any] struct {
	// Settings are the common settings a service loaded itself with
	// LoadSettings (PORT, HOST, APP_ENV/NODE_ENV, LOG_LEVEL, REDIS_URL):
	// New uses them as they are and does not read those variables. When
	// nil, New loads them, and the four fields below and RedisURL
	// override them.
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
	// and, on Redis, the rate limiter's checks. When nil, New reads the OTEL_* variables
	// itself (tracing.Setup); a service that also traces its own Redis client sets up
	// first and passes the provider here. Stop flushes and shuts it down, within
	// ShutdownTimeout.
	Tracing *tracing.Provider

	Logger   *slog.Logger         // default: built from Env and LogLevel
	Registry *prometheus.Registry // default: a new registry with Go and process collectors

	// Getenv reads the environment (default os.Getenv); tests set it.
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

// resolve merges config, environment and defaults, and reports every
// invalid value at once, each naming its variable.
func resolve[A any](c *Config[A]) (settings, error) {
	getenv := c.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	var errs []error
	bad := func(name, value, want string) {
		errs = append(errs, fmt.Errorf("%s=%q: %s", name, value, want))
	}
	s := settings{}

	if c.Settings != nil {
		if c.Port != 0 || c.Host != "" || c.Env != "" || c.LogLevel != "" || c.RedisURL != "" {
			errs = append(errs, errors.New("Config.Settings is set, and so is one of Port, Host, Env, LogLevel, RedisURL: set one or the other"))
		}
		s.common = *c.Settings
		if err := s.common.check(); err != nil {
			errs = append(errs, err)
		}
	} else {
		// The fields beat the environment: they answer for their variable.
		over := map[string]string{"PORT": "", "HOST": c.Host, "APP_ENV": c.Env, "LOG_LEVEL": c.LogLevel, "REDIS_URL": c.RedisURL}
		if c.Port != 0 {
			over["PORT"] = strconv.Itoa(c.Port)
		}
		field := map[string]string{"PORT": "Port", "HOST": "Host", "APP_ENV": "Env", "LOG_LEVEL": "LogLevel", "REDIS_URL": "RedisURL"}
		common, err := loadSettings(func(key string) (string, string) {
			if v := over[key]; v != "" {
				return v, field[key]
			}
			return getenv(key), key
		}, Defaults{})
		if err != nil {
			errs = append(errs, err)
		}
		s.common = common
	}
	s.production = s.common.Production()

	s.title = firstNonEmpty(c.APITitle, "API Documentation")
	s.desc = c.APIDescription
	s.version = firstNonEmpty(c.APIVersion, "1.0.0")
	s.jwt = c.AcceptsJWT
	s.tags = c.APITags

	s.rateMax = DefaultRateLimitMax
	if c.RateLimitMax != 0 {
		s.rateMax = c.RateLimitMax
	} else if v := getenv("RATE_LIMIT_MAX"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			bad("RATE_LIMIT_MAX", v, "must be a positive integer")
		} else {
			s.rateMax = n
		}
	}
	if s.rateMax < 1 {
		bad("RateLimitMax", strconv.Itoa(s.rateMax), "must be a positive integer")
	}
	windowName, window := "RateLimitWindow", c.RateLimitWindow
	if window == "" {
		windowName, window = "RATE_LIMIT_WINDOW", getenv("RATE_LIMIT_WINDOW")
	}
	if window == "" {
		window = DefaultRateLimitWindow
	}
	if d, err := ratelimit.ParseWindow(window); err != nil {
		bad(windowName, window, "must be a number and a unit (ms, s, m, h, d), like 15m or 30s")
	} else {
		s.rateWindow = d
	}
	s.rateIPv6Bits = DefaultRateLimitIPv6
	if c.RateLimitIPv6Prefix != 0 {
		s.rateIPv6Bits = c.RateLimitIPv6Prefix
	} else if v := getenv("RATE_LIMIT_IPV6_PREFIX"); v != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(v, "/"))
		if err != nil || n < 1 || n > 128 {
			bad("RATE_LIMIT_IPV6_PREFIX", v, "must be a prefix length from 1 to 128, like 64")
		} else {
			s.rateIPv6Bits = n
		}
	}
	if s.rateIPv6Bits < 1 || s.rateIPv6Bits > 128 {
		bad("RateLimitIPv6Prefix", strconv.Itoa(s.rateIPv6Bits), "must be a prefix length from 1 to 128")
	}
	allow := c.RateLimitAllow
	if allow == nil {
		allow = splitList(getenv("RATE_LIMIT_ALLOW"))
	}
	if set, err := clientip.NewSet(allow); err != nil {
		bad("RATE_LIMIT_ALLOW", strings.Join(allow, ","), err.Error())
	} else {
		s.rateAllow = set
	}
	s.failClosed = boolSetting(c.RateLimitFailClosed, "RATE_LIMIT_FAIL_CLOSED", false, getenv, bad)
	s.metrics = boolSetting(c.MetricsEnabled, "METRICS_ENABLED", true, getenv, bad)

	origin := firstNonEmpty(c.CORSOrigin, getenv("CORS_ORIGIN"), "*")
	s.corsOrigins = splitList(origin)
	for _, o := range s.corsOrigins {
		if o != "*" && !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") {
			bad("CORS_ORIGIN", origin, "must be *, or origins like https://example.com separated by commas")
			break
		}
	}

	trusted := c.TrustedProxies
	if trusted == nil {
		trusted = splitList(getenv("TRUSTED_PROXIES"))
	}
	if set, err := clientip.NewSet(trusted); err != nil {
		bad("TRUSTED_PROXIES", strings.Join(trusted, ","), err.Error())
	} else {
		s.trusted = set
	}

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
	s.shutdownTimeout = c.ShutdownTimeout
	if s.shutdownTimeout == 0 {
		s.shutdownTimeout = DefaultShutdownTimeout
		if v := getenv("SHUTDOWN_TIMEOUT"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				bad("SHUTDOWN_TIMEOUT", v, "must be a positive duration like 10s")
			} else {
				s.shutdownTimeout = d
			}
		}
	}
	s.validateResults = c.ValidateResponses == nil || *c.ValidateResponses

	if s.production && c.TokenValidator == nil {
		tok := firstNonEmpty(c.APIToken, getenv("API_TOKEN"))
		if tok != "" && len(tok) < 16 {
			bad("API_TOKEN", "***", "is shorter than 16 characters, too guessable for production")
		}
	}
	return s, errors.Join(errs...)
}

func boolSetting(v *bool, name string, def bool, getenv func(string) string, bad func(string, string, string)) bool {
	if v != nil {
		return *v
	}
	raw := getenv(name)
	if raw == "" {
		return def
	}
	b, err := ParseBool(raw)
	if err != nil {
		bad(name, raw, err.Error())
		return def
	}
	return b
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
