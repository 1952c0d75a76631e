package config

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/realtime"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaultsForALocalRun(t *testing.T) {
	c, err := Load(envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Settings.Port != DefaultPort || c.Settings.Host != "127.0.0.1" || c.Settings.Env != "development" || c.History != 1000 || !c.PublicRead || c.Engine() != "memory" {
		t.Fatalf("defaults %+v", c)
	}
	if !c.AdminTokenGenerated || !strings.HasPrefix(c.AdminToken, "chat_") {
		t.Fatalf("development admin token %q", c.AdminToken)
	}
}

func TestWebSocketWriters(t *testing.T) {
	c, err := Load(envOf(map[string]string{"CHAT_WS_WRITERS": "3"}))
	if err != nil || c.Writers != 3 {
		t.Fatalf("CHAT_WS_WRITERS=3: %d %v", c.Writers, err)
	}
	c, err = Load(envOf(nil))
	if err != nil || c.Writers != 0 || c.wsWriters() != realtime.DefaultWriters() {
		t.Fatalf("unset: %d (runs %d) %v", c.Writers, c.wsWriters(), err)
	}
	for _, v := range []string{"x", "1025", "2.5"} {
		if _, err := Load(envOf(map[string]string{"CHAT_WS_WRITERS": v})); err == nil || !strings.Contains(err.Error(), "CHAT_WS_WRITERS") {
			t.Errorf("CHAT_WS_WRITERS=%s: err = %v", v, err)
		}
	}
}

func TestProductionNeedsAnAdminToken(t *testing.T) {
	_, err := Load(envOf(map[string]string{"NODE_ENV": "production"}))
	if err == nil || !strings.Contains(err.Error(), "CHAT_ADMIN_TOKEN") {
		t.Fatalf("err = %v", err)
	}
	c, err := Load(envOf(map[string]string{"NODE_ENV": "development", "APP_ENV": "production", "CHAT_ADMIN_TOKEN": "0123456789abcdef"}))
	if err != nil || !c.Production() || c.AdminTokenGenerated {
		t.Fatalf("APP_ENV wins: %+v %v", c, err)
	}
}

// The repository's placeholder tokens start a development instance but not a production one.
func TestProductionRefusesPlaceholderAdminTokens(t *testing.T) {
	for _, token := range []string{"dev-admin-token-change-me", "replace-with-a-long-random-token"} {
		_, err := Load(envOf(map[string]string{"NODE_ENV": "production", "CHAT_ADMIN_TOKEN": token}))
		if err == nil || !strings.Contains(err.Error(), "CHAT_ADMIN_TOKEN") || !strings.Contains(err.Error(), "placeholder") {
			t.Errorf("production with %q: err = %v", token, err)
		}
		if c, err := Load(envOf(map[string]string{"NODE_ENV": "development", "CHAT_ADMIN_TOKEN": token})); err != nil || c.AdminToken != token {
			t.Errorf("development with %q: %v", token, err)
		}
	}
	if _, err := Load(envOf(map[string]string{"NODE_ENV": "production", "CHAT_ADMIN_TOKEN": "short-prod-token"[:15]})); err == nil ||
		!strings.Contains(err.Error(), "CHAT_ADMIN_TOKEN: want at least 16 characters") {
		t.Errorf("production with a 15-character token: err = %v", err)
	}
}

func TestInvalidValuesNameTheVariable(t *testing.T) {
	for k, v := range map[string]string{
		"PORT": "x", "CHAT_HISTORY": "0", "CHAT_PUBLIC_READ": "maybe", "LOG_LEVEL": "loud",
		"APP_ENV": "staging", "CHAT_ADMIN_TOKEN": "short",
		"CHAT_MAX_FILTERS": "0", "CHAT_MAX_REGEX_FILTERS": "-1", "CHAT_MAX_COMMANDS": "lots", "CHAT_MAX_CHANNELS": "100001",
		"REDIS_URL": "http://x", "CHAT_WS_MAX_SOCKETS": "-1", "NODE_ENV": "test",
		"CHAT_WS_WRITERS": "-1", "CHAT_WS_MAX_SOCKETS_PER_USER": "-1", "CHAT_WS_MAX_SOCKETS_PER_NET": "many",
		"CHAT_WS_USER_RESERVE_PERCENT": "100", "CHAT_WS_IPV4_NET_PREFIX": "33", "CHAT_WS_IPV6_NET_PREFIX": "0",
	} {
		_, err := Load(envOf(map[string]string{k: v}))
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: err = %v", k, v, err)
		}
	}
}

// The library's rules hold for chat too (LOG_LEVEL=warning, PORT=0), and
// every problem is reported at once.
func TestCommonSettingsFollowTheLibrary(t *testing.T) {
	c, err := Load(envOf(map[string]string{"LOG_LEVEL": "warning", "PORT": "0", "APP_ENV": "production", "CHAT_ADMIN_TOKEN": "0123456789abcdef"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Settings.LogLevel != slog.LevelWarn || c.Settings.Port != 0 || !c.Production() {
		t.Fatalf("settings %+v", c.Settings)
	}
	_, err = Load(envOf(map[string]string{"PORT": "x", "CHAT_HISTORY": "0", "LOG_LEVEL": "loud", "RATE_LIMIT_WINDOW": "soon", "TRUSTED_PROXIES": "x", "CORS_ORIGIN": "x"}))
	for _, k := range []string{"PORT", "CHAT_HISTORY", "LOG_LEVEL", "RATE_LIMIT_WINDOW", "TRUSTED_PROXIES", "CORS_ORIGIN"} {
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("error %v does not name %s", err, k)
		}
	}
}

// Load reads the library's variables too, once: the server is given them
// (Config.Settings) and reads none itself.
func TestLibrarySettingsAreLoadedHere(t *testing.T) {
	c, err := Load(envOf(map[string]string{"RATE_LIMIT_MAX": "7", "RATE_LIMIT_WINDOW": "1m", "TRUSTED_PROXIES": "10.0.0.0/8",
		"CORS_ORIGIN": "https://a.example", "METRICS_ENABLED": "false", "SHUTDOWN_TIMEOUT": "3s", "API_TOKEN": "an-api-token-0123456789"}))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Settings
	if s.RateLimitMax != 7 || s.RateLimitWindow != time.Minute || !slices.Equal(s.TrustedProxies, []string{"10.0.0.0/8"}) ||
		!slices.Equal(s.CORSOrigins, []string{"https://a.example"}) || !s.MetricsDisabled || s.ShutdownTimeout != 3*time.Second || s.APIToken != "an-api-token-0123456789" {
		t.Fatalf("settings %+v", s)
	}
}

func TestLogValueMasksSecrets(t *testing.T) {
	c, err := Load(envOf(map[string]string{"CHAT_ADMIN_TOKEN": "super-secret-token-1", "REDIS_URL": "redis://user:pw-secret@host:6379/0",
		"API_TOKEN": "api-secret-token-0123456789", "CHAT_JWT_SECRET": "jwt-secret-0123456789abcdef0123456789", "RATE_LIMIT_MAX": "7"}))
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("chat starting", "config", c)
	s := buf.String()
	for _, secret := range []string{"super-secret", "pw-secret", "api-secret", "jwt-secret"} {
		if strings.Contains(s, secret) {
			t.Errorf("the log shows %s: %s", secret, s)
		}
	}
	for _, want := range []string{`"redis_url":"redis://***@host:6379/0"`, `"api_token":"set"`, `"jwt_secret":"***"`, `"admin_token":"***"`, `"rate_limit_max":7`} {
		if !strings.Contains(s, want) {
			t.Errorf("log line lacks %s: %s", want, s)
		}
	}
}

func TestLimits(t *testing.T) {
	c, err := Load(envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Limits != (chat.Limits{Filters: 300, RegexFilters: 10, Commands: 500, Channels: 1000, ChannelRoles: 1000}) {
		t.Fatalf("default limits %+v", c.Limits)
	}
	c, err = Load(envOf(map[string]string{"CHAT_MAX_FILTERS": "5", "CHAT_MAX_REGEX_FILTERS": "9", "CHAT_MAX_COMMANDS": "7", "CHAT_MAX_CHANNELS": "3", "CHAT_MAX_CHANNEL_ROLES": "4"}))
	if err != nil {
		t.Fatal(err)
	}
	// The regex limit is part of the filter limit, so it never exceeds it.
	if c.Limits != (chat.Limits{Filters: 5, RegexFilters: 5, Commands: 7, Channels: 3, ChannelRoles: 4}) {
		t.Fatalf("limits %+v", c.Limits)
	}
}

func TestParseSendLimit(t *testing.T) {
	for in, want := range map[string]string{"": "20 req/30s", "20/30s": "20 req/30s", "100/1m": "100 req/1m0s", " 5 / 1h ": "5 req/1h0m0s"} {
		l, err := ParseSendLimit(in)
		if err != nil || l.String() != want {
			t.Errorf("%q: %v %v, want %s", in, l, err, want)
		}
	}
	for _, off := range []string{"off", "OFF", "0", "false"} {
		if l, err := ParseSendLimit(off); err != nil || l.Max != 0 {
			t.Errorf("%q: %v %v", off, l, err)
		}
	}
	for _, bad := range []string{"20", "x/30s", "0/30s", "-1/30s", "20/", "20/30", "20/xs"} {
		if _, err := ParseSendLimit(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestSendLimitIsReadOnce(t *testing.T) {
	c, err := Load(envOf(nil))
	if err != nil || c.SendLimit != chat.DefaultSendLimit {
		t.Fatalf("default: %v %v", c.SendLimit, err)
	}
	c, err = Load(envOf(map[string]string{"CHAT_SEND_LIMIT": "off"}))
	if err != nil || !c.SendLimit.Off() {
		t.Fatalf("off: %v %v", c.SendLimit, err)
	}
	if _, err := Load(envOf(map[string]string{"CHAT_SEND_LIMIT": "lots"})); err == nil || !strings.Contains(err.Error(), "CHAT_SEND_LIMIT") {
		t.Fatalf("lots: %v", err)
	}
}

// CHAT_PUBLIC_READ reads booleans as the library's variables do
// (METRICS_ENABLED): the same words mean the same everywhere.
func TestPublicReadUsesTheLibraryBooleans(t *testing.T) {
	for v, want := range map[string]bool{"true": true, "YES": true, "1": true, "false": false, "no": false, "No": false, "0": false} {
		c, err := Load(envOf(map[string]string{"CHAT_PUBLIC_READ": v}))
		if err != nil || c.PublicRead != want {
			t.Errorf("CHAT_PUBLIC_READ=%s: %v (%v), want %v", v, c.PublicRead, err, want)
		}
		lib, err := apiserver.ParseBool(v)
		if err != nil || lib != want {
			t.Errorf("the library reads %s as %v (%v)", v, lib, err)
		}
	}
	for _, v := range []string{"t", "F", "on", "maybe"} {
		_, err := Load(envOf(map[string]string{"CHAT_PUBLIC_READ": v}))
		if _, libErr := apiserver.ParseBool(v); err == nil || libErr == nil || !strings.Contains(err.Error(), "CHAT_PUBLIC_READ") || !strings.Contains(err.Error(), libErr.Error()) {
			t.Errorf("CHAT_PUBLIC_READ=%s: err %v, want the library's refusal (%v)", v, err, libErr)
		}
	}
}

// Each socket limit is read by its name, with its default when unset, and
// every invalid one stops start-up naming its variable: nothing silently
// becomes zero (which would mean no limit).
func TestSocketLimits(t *testing.T) {
	c, err := Load(envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if want := (realtime.Limits{MaxSockets: 10000, UserReservePercent: 20, MaxSocketsPerUser: 20, MaxSocketsPerIP: 100,
		MaxSocketsPerNet: 1000, IPv4NetPrefix: 24, IPv6NetPrefix: 48, MaxChannelsPerIP: 20}); c.Sockets != want {
		t.Fatalf("default socket limits %+v, want %+v", c.Sockets, want)
	}
	c, err = Load(envOf(map[string]string{
		"CHAT_WS_MAX_SOCKETS": "500", "CHAT_WS_USER_RESERVE_PERCENT": "0", "CHAT_WS_MAX_SOCKETS_PER_USER": "5",
		"CHAT_WS_MAX_SOCKETS_PER_IP": "0", "CHAT_WS_MAX_SOCKETS_PER_NET": "50", "CHAT_WS_IPV4_NET_PREFIX": "/16",
		"CHAT_WS_IPV6_NET_PREFIX": " 56 ", "CHAT_WS_MAX_CHANNELS_PER_IP": "3",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if want := (realtime.Limits{MaxSockets: 500, UserReservePercent: 0, MaxSocketsPerUser: 5, MaxSocketsPerIP: 0,
		MaxSocketsPerNet: 50, IPv4NetPrefix: 16, IPv6NetPrefix: 56, MaxChannelsPerIP: 3}); c.Sockets != want {
		t.Fatalf("socket limits %+v, want %+v", c.Sockets, want)
	}
	bad := map[string][]string{
		"CHAT_WS_MAX_SOCKETS":          {"-1", "x", "1.5"},
		"CHAT_WS_USER_RESERVE_PERCENT": {"-1", "100", "20%"},
		"CHAT_WS_MAX_SOCKETS_PER_USER": {"-1", "twenty", "/20"},
		"CHAT_WS_MAX_SOCKETS_PER_IP":   {"-5"},
		"CHAT_WS_MAX_SOCKETS_PER_NET":  {"-1", "1e3"},
		"CHAT_WS_IPV4_NET_PREFIX":      {"0", "33", "24.0", "//24"},
		"CHAT_WS_IPV6_NET_PREFIX":      {"0", "129", "x"},
		"CHAT_WS_MAX_CHANNELS_PER_IP":  {"-1"},
	}
	for name, values := range bad {
		for _, v := range values {
			if _, err := Load(envOf(map[string]string{name: v})); err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s=%s: err = %v, want one naming %s", name, v, err, name)
			}
		}
	}
	// All at once: each is reported.
	env := map[string]string{}
	for name, values := range bad {
		env[name] = values[0]
	}
	_, err = Load(envOf(env))
	for name := range bad {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("error %v does not name %s", err, name)
		}
	}
}

func TestJWTSettings(t *testing.T) {
	const secret = "0123456789abcdef0123456789abcdef"
	c, err := Load(envOf(map[string]string{"CHAT_JWT_SECRET": secret, "CHAT_JWKS_URL": "https://id.example/jwks.json", "CHAT_JWT_ISSUER": "https://id.example", "CHAT_JWT_AUDIENCE": "chat"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.JWT != (JWT{Secret: secret, JWKSURL: "https://id.example/jwks.json", Issuer: "https://id.example", Audience: "chat"}) {
		t.Fatalf("JWT %+v", c.JWT)
	}
	if v, err := c.JWT.Verifier(); v == nil || err != nil {
		t.Fatalf("verifier %v %v", v, err)
	}
	if c, err := Load(envOf(nil)); err != nil || c.JWT.Enabled() {
		t.Fatalf("unset: %+v %v", c.JWT, err)
	}
	for _, env := range []map[string]string{
		{"CHAT_JWT_SECRET": secret[:31]},
		{"CHAT_JWKS_URL": "ftp://id.example/keys"},
		{"CHAT_JWKS_URL": "not a url"},
		{"CHAT_JWT_ISSUER": "https://id.example"},
		{"CHAT_JWT_AUDIENCE": "chat"},
		{"NODE_ENV": "production", "CHAT_ADMIN_TOKEN": "0123456789abcdef", "CHAT_JWKS_URL": "http://id.example/keys"},
		{"NODE_ENV": "production", "CHAT_ADMIN_TOKEN": "0123456789abcdef", "CHAT_JWT_SECRET": placeholderJWTSecrets[0]},
	} {
		var name string
		for k := range env {
			if strings.HasPrefix(k, "CHAT_J") {
				name = k
			}
		}
		_, err := Load(envOf(env))
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%v: err = %v; want it to name %s", env, err, name)
		}
		if err != nil && strings.Contains(err.Error(), "0123456789abcdef0123") {
			t.Errorf("the error shows the secret: %v", err)
		}
	}
	if _, err := Load(envOf(map[string]string{"CHAT_JWT_SECRET": placeholderJWTSecrets[0]})); err != nil {
		t.Errorf("the placeholder in development: %v", err)
	}
	c, _ = Load(envOf(map[string]string{"CHAT_JWT_SECRET": secret}))
	var buf strings.Builder
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("chat starting", "config", c)
	if strings.Contains(buf.String(), secret) || !strings.Contains(buf.String(), `"jwt_secret":"***"`) {
		t.Errorf("log line %s", buf.String())
	}
}

func TestEmbedOrigins(t *testing.T) {
	c, err := Load(envOf(map[string]string{"CHAT_EMBED_ORIGINS": "https://a.example, http://localhost:8080"}))
	if err != nil || len(c.EmbedOrigins) != 2 || c.EmbedOrigins[1] != "http://localhost:8080" {
		t.Fatalf("%v %v", c.EmbedOrigins, err)
	}
	for _, v := range []string{"a.example", "https://a.example/path", "https://a.example,", "javascript:x", "https://u@a.example"} {
		if _, err := Load(envOf(map[string]string{"CHAT_EMBED_ORIGINS": v})); err == nil || !strings.Contains(err.Error(), "CHAT_EMBED_ORIGINS") {
			t.Errorf("%q: %v", v, err)
		}
	}
}
