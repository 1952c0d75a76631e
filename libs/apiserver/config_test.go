package apiserver_test

import (
	"strings"
	"testing"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/testkit"
)

func TestConfigFromEnvironment(t *testing.T) {
	rows := []struct {
		name    string
		env     map[string]string
		cfg     apiserver.Config[struct{}]
		wantErr []string // substrings; none means success
	}{
		{name: "defaults are valid"},
		{name: "every variable valid", env: map[string]string{
			"PORT": "8080", "HOST": "0.0.0.0", "NODE_ENV": "production", "LOG_LEVEL": "debug", "API_TOKEN": "a-long-enough-token",
			"RATE_LIMIT_MAX": "5", "RATE_LIMIT_WINDOW": "30s", "RATE_LIMIT_ALLOW": "10.0.0.0/8, 127.0.0.1", "METRICS_ENABLED": "false",
			"CORS_ORIGIN": "https://a.example,https://b.example", "TRUSTED_PROXIES": "172.16.0.0/12", "SHUTDOWN_TIMEOUT": "3s"}},
		{name: "PORT must be a number", env: map[string]string{"PORT": "abc"}, wantErr: []string{`PORT="abc"`}},
		{name: "PORT must be in range", env: map[string]string{"PORT": "70000"}, wantErr: []string{`PORT="70000"`}},
		{name: "window needs a unit", env: map[string]string{"RATE_LIMIT_WINDOW": "soon"}, wantErr: []string{`RATE_LIMIT_WINDOW="soon"`}},
		{name: "window without unit", env: map[string]string{"RATE_LIMIT_WINDOW": "15"}, wantErr: []string{"RATE_LIMIT_WINDOW"}},
		{name: "max must be positive", env: map[string]string{"RATE_LIMIT_MAX": "0"}, wantErr: []string{"RATE_LIMIT_MAX"}},
		{name: "max must be a number", env: map[string]string{"RATE_LIMIT_MAX": "x"}, wantErr: []string{"RATE_LIMIT_MAX"}},
		{name: "env must be known", env: map[string]string{"NODE_ENV": "staging"}, wantErr: []string{`NODE_ENV="staging"`}},
		{name: "APP_ENV wins over NODE_ENV", env: map[string]string{"NODE_ENV": "staging", "APP_ENV": "production"}},
		{name: "bad APP_ENV is named", env: map[string]string{"APP_ENV": "prod"}, wantErr: []string{`APP_ENV="prod"`}},
		{name: "log level", env: map[string]string{"LOG_LEVEL": "loud"}, wantErr: []string{"LOG_LEVEL"}},
		{name: "metrics flag", env: map[string]string{"METRICS_ENABLED": "maybe"}, wantErr: []string{"METRICS_ENABLED"}},
		{name: "allow list entries", env: map[string]string{"RATE_LIMIT_ALLOW": "10.0.0.0/8,not-an-ip"}, wantErr: []string{"RATE_LIMIT_ALLOW", "not-an-ip"}},
		{name: "trusted proxies", env: map[string]string{"TRUSTED_PROXIES": "300.1.1.1"}, wantErr: []string{"TRUSTED_PROXIES"}},
		{name: "cors origins", env: map[string]string{"CORS_ORIGIN": "example.com"}, wantErr: []string{"CORS_ORIGIN"}},
		{name: "short token in production", env: map[string]string{"NODE_ENV": "production", "API_TOKEN": "abc"}, wantErr: []string{"API_TOKEN"}},
		{name: "several problems are reported together", env: map[string]string{"PORT": "x", "RATE_LIMIT_WINDOW": "y"}, wantErr: []string{"PORT", "RATE_LIMIT_WINDOW"}},
		{name: "config beats environment", env: map[string]string{"PORT": "abc", "RATE_LIMIT_WINDOW": "soon"},
			cfg: apiserver.Config[struct{}]{Port: 8080, RateLimitWindow: "1m"}},
		{name: "bad config value is named", cfg: apiserver.Config[struct{}]{RateLimitWindow: "1x"}, wantErr: []string{"RateLimitWindow"}},
		{name: "bad config values are named by field, all at once", env: map[string]string{"RATE_LIMIT_MAX": "5"},
			cfg:     apiserver.Config[struct{}]{RateLimitMax: -2, RateLimitIPv6Prefix: 200, TrustedProxies: []string{"x"}, CORSOrigin: "a.example"},
			wantErr: []string{`RateLimitMax="-2"`, `RateLimitIPv6Prefix="200"`, `TrustedProxies="x"`, `CORSOrigin="a.example"`}},
		{name: "an empty list field clears the variable", env: map[string]string{"TRUSTED_PROXIES": "not-an-ip", "RATE_LIMIT_ALLOW": "not-an-ip"},
			cfg: apiserver.Config[struct{}]{TrustedProxies: []string{}, RateLimitAllow: []string{}}},
		{name: "redis url scheme", env: map[string]string{"REDIS_URL": "http://x"}, wantErr: []string{"REDIS_URL"}},
		{name: "shutdown timeout", env: map[string]string{"SHUTDOWN_TIMEOUT": "later"}, wantErr: []string{"SHUTDOWN_TIMEOUT"}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			cfg := r.cfg
			cfg.Getenv = func(k string) string { return r.env[k] }
			cfg.Logger = testkit.Logger()
			_, err := apiserver.New(cfg)
			if len(r.wantErr) == 0 {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("New succeeded, want an error naming %v", r.wantErr)
			}
			for _, w := range r.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestRegisterRejectsBadDeclarations(t *testing.T) {
	type noField struct{}
	type badTag struct {
		N int `query:"n" minimum:"x"`
	}
	type lenOnInt struct {
		N int `query:"n" maxLength:"3"`
	}
	type getBody struct{ Body struct{ A int } }
	type untagged struct{ N int }
	rows := []struct {
		name string
		reg  func(s *apiserver.Server[struct{}])
		want string
	}{
		{"path parameter without a field", func(s *apiserver.Server[struct{}]) {
			apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/x/:id"}, func(*apiserver.Context[struct{}], *noField) (string, error) { return "", nil })
		}, ":id has no field"},
		{"bad number in a tag", func(s *apiserver.Server[struct{}]) {
			apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/x"}, func(*apiserver.Context[struct{}], *badTag) (string, error) { return "", nil })
		}, "minimum"},
		{"string constraint on a number", func(s *apiserver.Server[struct{}]) {
			apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/x"}, func(*apiserver.Context[struct{}], *lenOnInt) (string, error) { return "", nil })
		}, "maxLength apply to strings"},
		{"body on GET", func(s *apiserver.Server[struct{}]) {
			apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/x"}, func(*apiserver.Context[struct{}], *getBody) (string, error) { return "", nil })
		}, "GET endpoint cannot take a body"},
		{"field without a tag", func(s *apiserver.Server[struct{}]) {
			apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/x"}, func(*apiserver.Context[struct{}], *untagged) (string, error) { return "", nil })
		}, "needs a path, query or header tag"},
		{"unknown method", func(s *apiserver.Server[struct{}]) {
			apiserver.Register(s, apiserver.Operation{Method: "FETCH", URL: "/x"}, func(*apiserver.Context[struct{}], *noField) (string, error) { return "", nil })
		}, "must be GET, POST"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			s, err := apiserver.New(apiserver.Config[struct{}]{Getenv: func(string) string { return "" }, Logger: testkit.Logger()})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				p := recover()
				if p == nil {
					t.Fatalf("Register did not refuse the declaration")
				}
				if !strings.Contains(p.(string), r.want) {
					t.Errorf("panic %q does not mention %q", p, r.want)
				}
			}()
			r.reg(s)
		})
	}
}

// TestParseBool pins the one boolean rule every variable follows.
func TestParseBool(t *testing.T) {
	for v, want := range map[string]bool{"true": true, "TRUE": true, "1": true, "yes": true, "Yes": true, "false": false, "False": false, "0": false, "no": false, "NO": false} {
		if got, err := apiserver.ParseBool(v); err != nil || got != want {
			t.Errorf("ParseBool(%q) = %v, %v; want %v", v, got, err, want)
		}
	}
	for _, v := range []string{"", "t", "f", "on", "off", "maybe", " true"} {
		if _, err := apiserver.ParseBool(v); err == nil {
			t.Errorf("ParseBool(%q) accepted", v)
		}
	}
}
