package apiserver_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/testkit"
)

// TestLoadSettings holds the one set of rules every service's PORT, HOST,
// APP_ENV/NODE_ENV, LOG_LEVEL and REDIS_URL follow.
func TestLoadSettings(t *testing.T) {
	def := apiserver.Settings{Env: "development", LogLevel: slog.LevelInfo, Host: "127.0.0.1", Port: 3000}
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
		{name: "every problem at once", env: map[string]string{"PORT": "x", "LOG_LEVEL": "y", "APP_ENV": "z", "REDIS_URL": "ftp://q"},
			wantErr: []string{"PORT", "LOG_LEVEL", "APP_ENV", "REDIS_URL"}},
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
	// Given settings are used as they are: the environment is not read
	// for them (a PORT the getenv would refuse does not matter).
	s, err := apiserver.New(apiserver.Config[struct{}]{Settings: &apiserver.Settings{Env: "production"}, Logger: quiet,
		Getenv: func(k string) string { return map[string]string{"PORT": "nope", "APP_ENV": "nope"}[k] }})
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
