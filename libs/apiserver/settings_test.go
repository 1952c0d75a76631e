package apiserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/testkit"
)

// TestLoadSettings holds the one set of rules every variable of the
// library follows, in every service.
func TestLoadSettings(t *testing.T) {
	def := apiserver.Settings{Env: "development", LogLevel: slog.LevelInfo, Host: "127.0.0.1", Port: 3000,
		RateLimitMax: 100, RateLimitWindow: 15 * time.Minute, RateLimitIPv6Prefix: 64, CORSOrigins: []string{"*"}, ShutdownTimeout: 10 * time.Second}
	with := func(f func(*apiserver.Settings)) apiserver.Settings { s := def; f(&s); return s }
	rows := []struct {
		name    string
		env     map[string]string
		d       apiserver.Defaults
		want    apiserver.Settings
		wantErr []string // substrings; none means success
	}{
		{name: "defaults", want: def},
		{name: "service defaults", d: apiserver.Defaults{Port: 3001, Host: "0.0.0.0"}, want: with(func(s *apiserver.Settings) { s.Port, s.Host = 3001, "0.0.0.0" })},
		{name: "PORT beats the service default", env: map[string]string{"PORT": "8080"}, d: apiserver.Defaults{Port: 3001}, want: with(func(s *apiserver.Settings) { s.Port = 8080 })},
		{name: "PORT=0 is a free port", env: map[string]string{"PORT": "0"}, d: apiserver.Defaults{Port: 3001}, want: with(func(s *apiserver.Settings) { s.Port = 0 })},
		{name: "PORT 65535", env: map[string]string{"PORT": "65535"}, want: with(func(s *apiserver.Settings) { s.Port = 65535 })},
		{name: "PORT with spaces", env: map[string]string{"PORT": " 8080 "}, want: with(func(s *apiserver.Settings) { s.Port = 8080 })},
		{name: "PORT not a number", env: map[string]string{"PORT": "http"}, wantErr: []string{`PORT="http"`}},
		{name: "PORT negative", env: map[string]string{"PORT": "-1"}, wantErr: []string{`PORT="-1"`}},
		{name: "PORT too big", env: map[string]string{"PORT": "65536"}, wantErr: []string{`PORT="65536"`}},
		{name: "HOST", env: map[string]string{"HOST": "0.0.0.0"}, want: with(func(s *apiserver.Settings) { s.Host = "0.0.0.0" })},
		{name: "NODE_ENV production", env: map[string]string{"NODE_ENV": "production"}, want: with(func(s *apiserver.Settings) { s.Env = "production" })},
		{name: "APP_ENV production", env: map[string]string{"APP_ENV": "production"}, want: with(func(s *apiserver.Settings) { s.Env = "production" })},
		{name: "APP_ENV wins over NODE_ENV", env: map[string]string{"APP_ENV": "development", "NODE_ENV": "production"}, want: def},
		{name: "APP_ENV wins over a bad NODE_ENV", env: map[string]string{"APP_ENV": "production", "NODE_ENV": "staging"}, want: with(func(s *apiserver.Settings) { s.Env = "production" })},
		{name: "empty APP_ENV leaves NODE_ENV", env: map[string]string{"APP_ENV": " ", "NODE_ENV": "production"}, want: with(func(s *apiserver.Settings) { s.Env = "production" })},
		{name: "bad APP_ENV is named", env: map[string]string{"APP_ENV": "prod", "NODE_ENV": "production"}, wantErr: []string{`APP_ENV="prod"`}},
		{name: "bad NODE_ENV is named", env: map[string]string{"NODE_ENV": "staging"}, wantErr: []string{`NODE_ENV="staging"`}},
		{name: "env is exact", env: map[string]string{"NODE_ENV": "Production"}, wantErr: []string{"NODE_ENV"}},
		{name: "LOG_LEVEL debug", env: map[string]string{"LOG_LEVEL": "debug"}, want: with(func(s *apiserver.Settings) { s.LogLevel = slog.LevelDebug })},
		{name: "LOG_LEVEL warn", env: map[string]string{"LOG_LEVEL": "warn"}, want: with(func(s *apiserver.Settings) { s.LogLevel = slog.LevelWarn })},
		{name: "LOG_LEVEL warning is warn", env: map[string]string{"LOG_LEVEL": "warning"}, want: with(func(s *apiserver.Settings) { s.LogLevel = slog.LevelWarn })},
		{name: "LOG_LEVEL any case", env: map[string]string{"LOG_LEVEL": "ERROR"}, want: with(func(s *apiserver.Settings) { s.LogLevel = slog.LevelError })},
		{name: "LOG_LEVEL unknown", env: map[string]string{"LOG_LEVEL": "loud"}, wantErr: []string{`LOG_LEVEL="loud"`}},
		{name: "LOG_LEVEL offsets are not levels", env: map[string]string{"LOG_LEVEL": "info+2"}, wantErr: []string{"LOG_LEVEL"}},
		{name: "REDIS_URL", env: map[string]string{"REDIS_URL": " redis://h:6379/0 "}, want: with(func(s *apiserver.Settings) { s.RedisURL = "redis://h:6379/0" })},
		{name: "REDIS_URL sentinel", env: map[string]string{"REDIS_URL": "redis+sentinel://s:26379/0?master_name=m"},
			want: with(func(s *apiserver.Settings) { s.RedisURL = "redis+sentinel://s:26379/0?master_name=m" })},
		{name: "REDIS_URL scheme", env: map[string]string{"REDIS_URL": "http://h"}, wantErr: []string{"REDIS_URL", "scheme"}},
		{name: "REDIS_URL error hides the password", env: map[string]string{"REDIS_URL": "redis://:hunter2@h:6379/0?bogus=1"}, wantErr: []string{"REDIS_URL", "***"}},
		{name: "API_TOKEN", env: map[string]string{"API_TOKEN": " a-token\n"}, want: with(func(s *apiserver.Settings) { s.APIToken = "a-token" })},
		{name: "RATE_LIMIT_MAX", env: map[string]string{"RATE_LIMIT_MAX": "5"}, want: with(func(s *apiserver.Settings) { s.RateLimitMax = 5 })},
		{name: "RATE_LIMIT_MAX zero", env: map[string]string{"RATE_LIMIT_MAX": "0"}, wantErr: []string{`RATE_LIMIT_MAX="0": must be a positive integer`}},
		{name: "RATE_LIMIT_MAX not a number", env: map[string]string{"RATE_LIMIT_MAX": "many"}, wantErr: []string{`RATE_LIMIT_MAX="many"`}},
		{name: "RATE_LIMIT_WINDOW", env: map[string]string{"RATE_LIMIT_WINDOW": "30s"}, want: with(func(s *apiserver.Settings) { s.RateLimitWindow = 30 * time.Second })},
		{name: "RATE_LIMIT_WINDOW in days", env: map[string]string{"RATE_LIMIT_WINDOW": "1d"}, want: with(func(s *apiserver.Settings) { s.RateLimitWindow = 24 * time.Hour })},
		{name: "RATE_LIMIT_WINDOW without a unit", env: map[string]string{"RATE_LIMIT_WINDOW": "15"}, wantErr: []string{`RATE_LIMIT_WINDOW="15": must be a number and a unit`}},
		{name: "RATE_LIMIT_IPV6_PREFIX", env: map[string]string{"RATE_LIMIT_IPV6_PREFIX": "/48"}, want: with(func(s *apiserver.Settings) { s.RateLimitIPv6Prefix = 48 })},
		{name: "RATE_LIMIT_IPV6_PREFIX too long", env: map[string]string{"RATE_LIMIT_IPV6_PREFIX": "129"}, wantErr: []string{`RATE_LIMIT_IPV6_PREFIX="129"`}},
		{name: "RATE_LIMIT_ALLOW", env: map[string]string{"RATE_LIMIT_ALLOW": "10.0.0.0/8, 127.0.0.1"}, want: with(func(s *apiserver.Settings) { s.RateLimitAllow = []string{"10.0.0.0/8", "127.0.0.1"} })},
		{name: "RATE_LIMIT_ALLOW bad entry", env: map[string]string{"RATE_LIMIT_ALLOW": "10.0.0.0/8,not-an-ip"}, wantErr: []string{`RATE_LIMIT_ALLOW="10.0.0.0/8,not-an-ip"`, "not-an-ip"}},
		{name: "RATE_LIMIT_FAIL_CLOSED", env: map[string]string{"RATE_LIMIT_FAIL_CLOSED": "yes"}, want: with(func(s *apiserver.Settings) { s.RateLimitFailClosed = true })},
		{name: "RATE_LIMIT_FAIL_CLOSED bad", env: map[string]string{"RATE_LIMIT_FAIL_CLOSED": "t"}, wantErr: []string{`RATE_LIMIT_FAIL_CLOSED="t": must be true or false`}},
		{name: "METRICS_ENABLED false", env: map[string]string{"METRICS_ENABLED": "FALSE"}, want: with(func(s *apiserver.Settings) { s.MetricsDisabled = true })},
		{name: "METRICS_ENABLED true", env: map[string]string{"METRICS_ENABLED": "1"}, want: def},
		{name: "METRICS_ENABLED bad", env: map[string]string{"METRICS_ENABLED": "maybe"}, wantErr: []string{`METRICS_ENABLED="maybe"`}},
		{name: "CORS_ORIGIN", env: map[string]string{"CORS_ORIGIN": "https://a.example, http://b.example:8080"},
			want: with(func(s *apiserver.Settings) { s.CORSOrigins = []string{"https://a.example", "http://b.example:8080"} })},
		{name: "CORS_ORIGIN without a scheme", env: map[string]string{"CORS_ORIGIN": "example.com"}, wantErr: []string{`CORS_ORIGIN="example.com": must be *`}},
		{name: "TRUSTED_PROXIES", env: map[string]string{"TRUSTED_PROXIES": "172.16.0.0/12,::1"}, want: with(func(s *apiserver.Settings) { s.TrustedProxies = []string{"172.16.0.0/12", "::1"} })},
		{name: "TRUSTED_PROXIES bad entry", env: map[string]string{"TRUSTED_PROXIES": "300.1.1.1"}, wantErr: []string{`TRUSTED_PROXIES="300.1.1.1"`}},
		{name: "SHUTDOWN_TIMEOUT", env: map[string]string{"SHUTDOWN_TIMEOUT": "3s"}, want: with(func(s *apiserver.Settings) { s.ShutdownTimeout = 3 * time.Second })},
		{name: "SHUTDOWN_TIMEOUT negative", env: map[string]string{"SHUTDOWN_TIMEOUT": "-3s"}, wantErr: []string{`SHUTDOWN_TIMEOUT="-3s": must be a positive duration`}},
		{name: "every problem at once", env: map[string]string{"PORT": "x", "LOG_LEVEL": "y", "APP_ENV": "z", "REDIS_URL": "ftp://q",
			"RATE_LIMIT_MAX": "x", "RATE_LIMIT_WINDOW": "x", "RATE_LIMIT_IPV6_PREFIX": "x", "RATE_LIMIT_ALLOW": "x", "RATE_LIMIT_FAIL_CLOSED": "x",
			"METRICS_ENABLED": "x", "CORS_ORIGIN": "x", "TRUSTED_PROXIES": "x", "SHUTDOWN_TIMEOUT": "x"},
			wantErr: []string{"PORT", "LOG_LEVEL", "APP_ENV", "REDIS_URL", "RATE_LIMIT_MAX", "RATE_LIMIT_WINDOW", "RATE_LIMIT_IPV6_PREFIX",
				"RATE_LIMIT_ALLOW", "RATE_LIMIT_FAIL_CLOSED", "METRICS_ENABLED", "CORS_ORIGIN", "TRUSTED_PROXIES", "SHUTDOWN_TIMEOUT"}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			got, err := apiserver.LoadSettings(func(k string) string { return r.env[k] }, r.d)
			if len(r.wantErr) > 0 {
				if err == nil {
					t.Fatalf("accepted: %+v", got)
				}
				for _, w := range r.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Errorf("error shows the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, r.want) {
				t.Fatalf("got %+v, want %+v", got, r.want)
			}
		})
	}
}

// The library follows the same rules when it reads the variables itself,
// and refuses settings given twice.
func TestNewUsesTheSameRules(t *testing.T) {
	quiet := testkit.Logger()
	for _, level := range []string{"warning", "WARN"} {
		if _, err := apiserver.New(apiserver.Config[struct{}]{Getenv: func(k string) string { return map[string]string{"LOG_LEVEL": level}[k] }, Logger: quiet}); err != nil {
			t.Errorf("LOG_LEVEL=%s: %v", level, err)
		}
	}
	if _, err := apiserver.New(apiserver.Config[struct{}]{LogLevel: "loud", Logger: quiet, Getenv: func(string) string { return "" }}); err == nil || !strings.Contains(err.Error(), `LogLevel="loud"`) {
		t.Errorf("Config.LogLevel loud: %v", err)
	}
	set := apiserver.Settings{Port: 0}
	if _, err := apiserver.New(apiserver.Config[struct{}]{Settings: &set, Port: 8080, Logger: quiet}); err == nil || !strings.Contains(err.Error(), "Config.Settings") {
		t.Errorf("Settings and Port both set: %v", err)
	}
	bad := apiserver.Settings{Env: "staging", Port: 70000}
	if _, err := apiserver.New(apiserver.Config[struct{}]{Settings: &bad, Logger: quiet}); err == nil || !strings.Contains(err.Error(), "Settings.Env") || !strings.Contains(err.Error(), "Settings.Port") {
		t.Errorf("bad Settings: %v", err)
	}
	// Getenv beside Settings would be a second source of the same values.
	if _, err := apiserver.New(apiserver.Config[struct{}]{Settings: &apiserver.Settings{}, Getenv: os.Getenv, Logger: quiet}); err == nil || !strings.Contains(err.Error(), "Getenv") {
		t.Errorf("Settings and Getenv both set: %v", err)
	}
}

// New with Settings reads no environment: every variable set to a value
// LoadSettings would refuse (or to one that would change the server) is
// ignored, tracing's OTEL_* included, and the given settings apply.
func TestNewWithSettingsReadsNoEnvironment(t *testing.T) {
	for _, k := range []string{"PORT", "HOST", "APP_ENV", "NODE_ENV", "LOG_LEVEL", "REDIS_URL", "RATE_LIMIT_MAX", "RATE_LIMIT_WINDOW",
		"RATE_LIMIT_IPV6_PREFIX", "RATE_LIMIT_ALLOW", "RATE_LIMIT_FAIL_CLOSED", "METRICS_ENABLED", "CORS_ORIGIN", "TRUSTED_PROXIES",
		"SHUTDOWN_TIMEOUT", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_TRACES_SAMPLER"} {
		t.Setenv(k, "nope")
	}
	t.Setenv("API_TOKEN", "an-environment-token-0123456789")
	var logs bytes.Buffer
	s, err := apiserver.New(apiserver.Config[struct{}]{Settings: &apiserver.Settings{Env: "production", Port: 0}, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Production() {
		t.Error("Settings.Env production not applied")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Stop(context.Background())
	if host, _, _ := net.SplitHostPort(s.Addr()); host != "127.0.0.1" {
		t.Errorf("an empty Settings.Host listens on %s, want 127.0.0.1", s.Addr())
	}
	got := startSettings(t, logs.String())
	want := map[string]any{"env": "production", "redis_url": "", "api_token": "unset", "rate_limit_max": 100.0, "rate_limit_window": "15m0s",
		"rate_limit_ipv6_prefix": 64.0, "metrics_enabled": true, "cors_origin": "*", "trusted_proxies": "", "shutdown_timeout": "10s"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (the default, not the environment's)", k, got[k], v)
		}
	}
	if line := startLine(t, logs.String()); line["tracing"] != "off" {
		t.Errorf("tracing %v: New set it up from the environment", line["tracing"])
	}
}

// A set Config field beats Settings, which beat the default: the resolved
// value is the one the start-up line shows and the server uses.
func TestConfigFieldBeatsSettings(t *testing.T) {
	off := false
	var logs bytes.Buffer
	set := apiserver.Settings{RateLimitMax: 5, RateLimitWindow: time.Minute, CORSOrigins: []string{"https://a.example"},
		TrustedProxies: []string{"10.0.0.0/8"}, RateLimitAllow: []string{"192.0.2.1"}}
	s, err := apiserver.New(apiserver.Config[struct{}]{
		Settings: &set, RateLimitMax: 7, CORSOrigin: "https://b.example", TrustedProxies: []string{}, MetricsEnabled: &off,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Stop(context.Background())
	got := startSettings(t, logs.String())
	want := map[string]any{
		"rate_limit_max": 7.0, "cors_origin": "https://b.example", "trusted_proxies": "", "metrics_enabled": false, // fields
		"rate_limit_window": "1m0s", "rate_limit_allow": "192.0.2.1", // Settings
		"rate_limit_ipv6_prefix": 64.0, "shutdown_timeout": "10s", // defaults
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if o := s.CORSOrigins(); !reflect.DeepEqual(o, []string{"https://b.example"}) {
		t.Errorf("CORSOrigins() = %v", o)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("/metrics with MetricsEnabled false: %d", rec.Code)
	}
	if set.RateLimitMax != 5 || set.CORSOrigins[0] != "https://a.example" {
		t.Errorf("New changed the caller's Settings: %+v", set)
	}
	// A bad field is named as the field, even over valid Settings.
	if _, err := apiserver.New(apiserver.Config[struct{}]{Settings: &set, RateLimitMax: -1, ShutdownTimeout: -time.Second,
		Logger: slog.New(slog.DiscardHandler)}); err == nil || !strings.Contains(err.Error(), `RateLimitMax="-1"`) || !strings.Contains(err.Error(), `ShutdownTimeout="-1s"`) {
		t.Errorf("bad fields over Settings: %v", err)
	}
}

// Settings built by hand are checked like the environment's, each
// problem named by its field, and their zero values are the defaults.
func TestSettingsBuiltByHand(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	bad := apiserver.Settings{RateLimitMax: -1, RateLimitWindow: time.Microsecond, RateLimitIPv6Prefix: 129, RateLimitAllow: []string{"x"},
		TrustedProxies: []string{"300.0.0.1"}, CORSOrigins: []string{"example.com"}, ShutdownTimeout: -time.Second, RedisURL: "ftp://h"}
	_, err := apiserver.New(apiserver.Config[struct{}]{Settings: &bad, Logger: quiet})
	for _, w := range []string{"Settings.RateLimitMax=-1", "Settings.RateLimitWindow=1µs", "Settings.RateLimitIPv6Prefix=129", `Settings.RateLimitAllow="x"`,
		`Settings.TrustedProxies="300.0.0.1"`, `Settings.CORSOrigins="example.com"`, "Settings.ShutdownTimeout=-1s", "Settings.RedisURL"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not name %s", err, w)
		}
	}
	var logs bytes.Buffer
	s, err := apiserver.New(apiserver.Config[struct{}]{Settings: &apiserver.Settings{}, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Stop(context.Background())
	want, err := apiserver.LoadSettings(func(string) string { return "" }, apiserver.Defaults{})
	if err != nil {
		t.Fatal(err)
	}
	want.Port = 0 // a zero Port is a free port, not the default
	var line bytes.Buffer
	slog.New(slog.NewJSONHandler(&line, nil)).Info("server listening", "settings", want)
	if got, w := startSettings(t, logs.String()), startSettings(t, line.String()); !reflect.DeepEqual(got, w) {
		t.Errorf("zero Settings resolve to\n%v\nwant the defaults\n%v", got, w)
	}
}

// The start-up line holds every setting, each field of Settings under its
// variable's name, and no secret: not REDIS_URL's user or password, not
// the API token.
func TestStartupLogsEverySettingMasked(t *testing.T) {
	keys := map[string]string{ // Settings field: key in the settings group
		"Env": "env", "LogLevel": "log_level", "Host": "host", "Port": "port", "RedisURL": "redis_url", "APIToken": "api_token",
		"RateLimitMax": "rate_limit_max", "RateLimitWindow": "rate_limit_window", "RateLimitIPv6Prefix": "rate_limit_ipv6_prefix",
		"RateLimitAllow": "rate_limit_allow", "RateLimitFailClosed": "rate_limit_fail_closed", "MetricsDisabled": "metrics_enabled",
		"CORSOrigins": "cors_origin", "TrustedProxies": "trusted_proxies", "ShutdownTimeout": "shutdown_timeout",
		"Tracing": "tracing",
	}
	const password, token, otlpKey = "hunter2-redis-password", "s3cret-api-token-0123456789", "otlp-ingest-key-9876"
	env := map[string]string{"NODE_ENV": "production", "PORT": "0", "LOG_LEVEL": "debug", "API_TOKEN": token,
		"REDIS_URL": "redis://admin:" + password + "@127.0.0.1:1/0", "RATE_LIMIT_MAX": "9", "RATE_LIMIT_WINDOW": "2m",
		"RATE_LIMIT_IPV6_PREFIX": "56", "RATE_LIMIT_ALLOW": "192.0.2.0/24", "RATE_LIMIT_FAIL_CLOSED": "false", "METRICS_ENABLED": "false",
		"CORS_ORIGIN": "https://a.example", "TRUSTED_PROXIES": "10.0.0.0/8", "SHUTDOWN_TIMEOUT": "4s",
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=" + otlpKey}
	set, err := apiserver.LoadSettings(func(k string) string { return env[k] }, apiserver.Defaults{})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	s, err := apiserver.New(apiserver.Config[struct{}]{Settings: &set, Logger: apiserver.NewLogger(set, &logs)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	_ = s.Stop(context.Background())
	got := startSettings(t, logs.String())
	fields := reflect.TypeFor[apiserver.Settings]()
	for i := range fields.NumField() {
		name := fields.Field(i).Name
		key, ok := keys[name]
		if !ok {
			t.Errorf("Settings.%s has no key in this test: add it, and to Settings.LogValue", name)
			continue
		}
		if _, ok := got[key]; !ok {
			t.Errorf("Settings.%s (%s) not logged: %v", name, key, got)
		}
	}
	if len(got) != fields.NumField() {
		t.Errorf("settings group has %d entries, Settings %d fields: %v", len(got), fields.NumField(), got)
	}
	want := map[string]any{"env": "production", "log_level": "DEBUG", "port": 0.0, "redis_url": "redis://***@127.0.0.1:1/0", "api_token": "set",
		"rate_limit_max": 9.0, "rate_limit_window": "2m0s", "rate_limit_ipv6_prefix": 56.0, "rate_limit_allow": "192.0.2.0/24",
		"rate_limit_fail_closed": false, "metrics_enabled": false, "cors_origin": "https://a.example", "trusted_proxies": "10.0.0.0/8", "shutdown_timeout": "4s"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	tr, _ := got["tracing"].(map[string]any)
	if tr["endpoint"] != "http://127.0.0.1:1/v1/traces" || tr["headers"] != "x-api-key=***" || tr["bsp_schedule_delay"] != "5s" {
		t.Errorf("tracing = %v, want the OTEL_* in force, the header's value masked", got["tracing"])
	}
	for _, secret := range []string{password, "admin", token, otlpKey} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log shows %q:\n%s", secret, logs.String())
		}
	}
}

// startLine is the "server listening" line of JSON logs.
func startLine(t *testing.T, logs string) map[string]any {
	t.Helper()
	for line := range strings.Lines(logs) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err == nil && m["msg"] == "server listening" {
			return m
		}
	}
	t.Fatalf("no start-up line in\n%s", logs)
	return nil
}

// startSettings is the settings group of the start-up line.
func startSettings(t *testing.T, logs string) map[string]any {
	t.Helper()
	m, ok := startLine(t, logs)["settings"].(map[string]any)
	if !ok {
		t.Fatalf("no settings group in\n%s", logs)
	}
	return m
}

func TestSettingsLogValueMasksRedisSecrets(t *testing.T) {
	s, err := apiserver.LoadSettings(func(k string) string {
		return map[string]string{"REDIS_URL": "redis://admin:hunter2@h:6379/0", "NODE_ENV": "production"}[k]
	}, apiserver.Defaults{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	apiserver.NewLogger(s, &buf).Info("starting", "settings", s)
	out := buf.String()
	if strings.Contains(out, "hunter2") || strings.Contains(out, "admin") {
		t.Fatalf("secret logged: %s", out)
	}
	if !strings.HasPrefix(out, "{") || !strings.Contains(out, `"redis_url":"redis://***@h:6379/0"`) || !strings.Contains(out, `"env":"production"`) {
		t.Fatalf("production log line %s", out)
	}
}

func TestNewLoggerLevelAndFormat(t *testing.T) {
	var buf bytes.Buffer
	log := apiserver.NewLogger(apiserver.Settings{Env: "development", LogLevel: slog.LevelWarn}, &buf)
	log.Info("hidden")
	log.Warn("shown")
	if out := buf.String(); strings.Contains(out, "hidden") || !strings.Contains(out, "level=WARN msg=shown") {
		t.Fatalf("development log %q", out)
	}
}

func TestCheckHealth(t *testing.T) {
	status := http.StatusOK
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
	}))
	defer ts.Close()
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	s, err := apiserver.LoadSettings(func(k string) string { return map[string]string{"PORT": port, "HOST": "0.0.0.0"}[k] }, apiserver.Defaults{})
	if err != nil {
		t.Fatal(err)
	}
	if err := apiserver.CheckHealth(context.Background(), s); err != nil {
		t.Errorf("healthy server (HOST 0.0.0.0 asked on loopback): %v", err)
	}
	status = http.StatusServiceUnavailable
	if err := apiserver.CheckHealth(context.Background(), s); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("unhealthy server: %v", err)
	}
	ts.Close()
	if err := apiserver.CheckHealth(context.Background(), s); err == nil {
		t.Error("closed server passed")
	}
	s.Port = 0
	if err := apiserver.CheckHealth(context.Background(), s); err == nil || !strings.Contains(err.Error(), "PORT=0") {
		t.Errorf("PORT=0: %v", err)
	}
}
