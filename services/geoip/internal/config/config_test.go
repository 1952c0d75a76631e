package config

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// loadCase loads env; when wantErr is set it checks that loading failed with an error
// naming wantErr and reports done, the case being checked.
func loadCase(t *testing.T, env map[string]string, wantErr string) (c Config, done bool, err error) {
	t.Helper()
	c, err = Load(envOf(env))
	if wantErr == "" {
		return c, false, err
	}
	if err == nil || !strings.Contains(err.Error(), wantErr) {
		t.Errorf("%v: error %v, want one naming %s", env, err, wantErr)
	}
	return c, true, err
}

func TestDefaults(t *testing.T) {
	c, err := Load(envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Settings.Port != DefaultPort || c.Settings.Host != "127.0.0.1" || c.Settings.Production() || c.Settings.RedisURL != "" ||
		c.WatchInterval != 5*time.Second || c.UpdateInterval != 24*time.Hour || c.CacheMaxAge != 0 || c.CacheSize != 0 {
		t.Fatalf("defaults %+v", c)
	}
}

func TestCacheSettings(t *testing.T) {
	tests := []struct {
		env     map[string]string
		maxAge  time.Duration
		size    int
		wantErr string
	}{
		{env: nil},
		{env: map[string]string{"GEOIP_CACHE_MAX_AGE": "10m", "GEOIP_CACHE_SIZE": "1000"}, maxAge: 10 * time.Minute, size: 1000},
		{env: map[string]string{"GEOIP_CACHE_SIZE": "0"}, size: -1},
		{env: map[string]string{"GEOIP_CACHE_MAX_AGE": "soon"}, wantErr: "GEOIP_CACHE_MAX_AGE"},
		{env: map[string]string{"GEOIP_CACHE_MAX_AGE": "10ms"}, wantErr: "GEOIP_CACHE_MAX_AGE"},
		{env: map[string]string{"GEOIP_CACHE_SIZE": "-5"}, wantErr: "GEOIP_CACHE_SIZE"},
		{env: map[string]string{"GEOIP_CACHE_SIZE": "many"}, wantErr: "GEOIP_CACHE_SIZE"},
	}
	for _, tt := range tests {
		c, done, err := loadCase(t, tt.env, tt.wantErr)
		if done {
			continue
		}
		if err != nil || c.CacheMaxAge != tt.maxAge || c.CacheSize != tt.size {
			t.Errorf("%v: %+v, %v; want max-age %s, size %d", tt.env, c, err, tt.maxAge, tt.size)
		}
	}
}

// Every invalid value is named, all at once; the common ones follow the library's rules.
func TestInvalidValuesNameTheVariable(t *testing.T) {
	env := map[string]string{
		"PORT": "http", "LOG_LEVEL": "loud", "APP_ENV": "staging", "REDIS_URL": "http://x",
		"GEOIP_WATCH_INTERVAL": "-1s", "GEOIP_UPDATE_INTERVAL": "daily", "IP2LOCATION_TOKEN": "t",
		"RATE_LIMIT_MAX": "0", "TRUSTED_PROXIES": "x", "CORS_ORIGIN": "x", "SHUTDOWN_TIMEOUT": "x", "METRICS_ENABLED": "x",
	}
	_, err := Load(envOf(env))
	for k := range env {
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("error %v does not name %s", err, k)
		}
	}
	c, err := Load(envOf(map[string]string{"LOG_LEVEL": "warning", "PORT": "0", "NODE_ENV": "production"}))
	if err != nil || c.Settings.LogLevel != slog.LevelWarn || c.Settings.Port != 0 || !c.Settings.Production() {
		t.Fatalf("library rules: %+v %v", c.Settings, err)
	}
}

// Load reads the library's variables too, once: the server is given them
// (Config.Settings) and reads none itself.
func TestLibrarySettingsAreLoadedHere(t *testing.T) {
	c, err := Load(envOf(map[string]string{"RATE_LIMIT_MAX": "7", "RATE_LIMIT_IPV6_PREFIX": "48", "RATE_LIMIT_ALLOW": "192.0.2.1",
		"RATE_LIMIT_FAIL_CLOSED": "true", "TRUSTED_PROXIES": "10.0.0.0/8", "CORS_ORIGIN": "https://a.example", "SHUTDOWN_TIMEOUT": "3s"}))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Settings
	if s.RateLimitMax != 7 || s.RateLimitIPv6Prefix != 48 || !slices.Equal(s.RateLimitAllow, []string{"192.0.2.1"}) || !s.RateLimitFailClosed ||
		!slices.Equal(s.TrustedProxies, []string{"10.0.0.0/8"}) || !slices.Equal(s.CORSOrigins, []string{"https://a.example"}) || s.ShutdownTimeout != 3*time.Second {
		t.Fatalf("settings %+v", s)
	}
}

func TestLogValueMasksSecrets(t *testing.T) {
	c, err := Load(envOf(map[string]string{
		"API_TOKEN": "api-secret-token-0123456789", "TRUSTED_PROXIES": "10.0.0.0/8",
		"IP2LOCATION_TOKEN": "tok-secret", "IP2LOCATION_PRODUCT": "DB1LITEBIN",
		"IP2LOCATION_DOWNLOAD_URL": "https://mirror:pw-secret@example.com/dl?key=key-secret",
		"REDIS_URL":                "redis://:redis-secret@h:6379/0", "GEOIP_UPDATE_DIR": "/tmp/x",
	}))
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("geoip starting", "config", c)
	out := buf.String()
	if strings.Contains(out, "secret") {
		t.Fatalf("a secret reached the log: %s", out)
	}
	for _, want := range []string{`"ip2location_token":"***"`, `"redis_url":"redis://***@h:6379/0"`, `"ip2location_download_url":"https://***@example.com/dl?***"`, `"port":3001`,
		`"api_token":"set"`, `"trusted_proxies":"10.0.0.0/8"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s: %s", want, out)
		}
	}
}

func TestGCSettings(t *testing.T) {
	tests := []struct {
		env     map[string]string
		want    GC
		wantErr string
	}{
		{env: nil, want: GC{Percent: DefaultGCPercent, MemoryLimit: 192 << 20}},
		{env: map[string]string{"GEOIP_CACHE_SIZE": "0"}, want: GC{Percent: DefaultGCPercent, MemoryLimit: 64 << 20}},
		{env: map[string]string{"GEOIP_CACHE_SIZE": "1000"}, want: GC{Percent: DefaultGCPercent, MemoryLimit: 64 << 20}},
		{env: map[string]string{"GEOIP_CACHE_SIZE": "1000000"}, want: GC{Percent: DefaultGCPercent, MemoryLimit: 1000000 * 3072}},
		{env: map[string]string{"GOGC": "100"}, want: GC{Percent: 100, PercentFromEnv: true, MemoryLimit: 192 << 20}},
		{env: map[string]string{"GOGC": "off", "GOMEMLIMIT": "1GiB"}, want: GC{Percent: -1, PercentFromEnv: true, MemoryLimitEnv: "1GiB"}},
		{env: map[string]string{"GOGC": "lots"}, wantErr: "GOGC"},
		{env: map[string]string{"GOGC": "-5"}, wantErr: "GOGC"},
	}
	for _, tt := range tests {
		c, done, err := loadCase(t, tt.env, tt.wantErr)
		if done {
			continue
		}
		if err != nil || c.GC != tt.want {
			t.Errorf("%v: %+v, %v; want %+v", tt.env, c.GC, err, tt.want)
		}
	}
}

func TestGCLogValue(t *testing.T) {
	for _, tt := range []struct {
		gc   GC
		want string
	}{
		{GC{Percent: 400, MemoryLimit: 192 << 20}, "gogc=400 gogc_from=\"geoip default\" memory_limit=192MiB memory_limit_from=\"geoip default\""},
		{GC{Percent: -1, PercentFromEnv: true, MemoryLimitEnv: "1GiB"}, "gogc=off gogc_from=GOGC memory_limit=1GiB memory_limit_from=GOMEMLIMIT"},
	} {
		var b strings.Builder
		slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey {
				return slog.Attr{}
			}
			return a
		}})).Info("", "gc", tt.gc)
		got := strings.TrimSpace(strings.ReplaceAll(b.String(), "gc.", ""))
		if got != tt.want {
			t.Errorf("%+v logs %q, want %q", tt.gc, got, tt.want)
		}
	}
}

func TestUpdateSources(t *testing.T) {
	for _, tc := range []struct {
		name                string
		env                 map[string]string
		source, city, asn   string
		cityTarget, asnPath string
		wantErr             string
	}{
		{name: "off by default", env: map[string]string{}},
		{name: "ip2location from its token, as before", env: map[string]string{"IP2LOCATION_TOKEN": "t", "IP2LOCATION_PRODUCT": "DB11LITEBINIPV6", "GEOIP_UPDATE_DIR": "/d"},
			source: "ip2location", city: "DB11LITEBINIPV6", cityTarget: "/d/DB11LITEBINIPV6.BIN"},
		{name: "ip2location MMDB product", env: map[string]string{"IP2LOCATION_TOKEN": "t", "IP2LOCATION_PRODUCT": "DB11LITEMMDB", "GEOIP_UPDATE_DIR": "/d"},
			source: "ip2location", city: "DB11LITEMMDB", cityTarget: "/d/DB11LITEMMDB.mmdb"},
		{name: "maxmind from its account", env: map[string]string{"MAXMIND_ACCOUNT_ID": "1", "MAXMIND_LICENSE_KEY": "k", "GEOIP_UPDATE_DIR": "/d", "GEOIP_ASN_DB": "/a/asn.mmdb"},
			source: "maxmind", city: "GeoLite2-City", asn: "GeoLite2-ASN", cityTarget: "/d/GeoLite2-City.mmdb", asnPath: "/a/asn.mmdb"},
		{name: "maxmind editions", env: map[string]string{"GEOIP_UPDATE_SOURCE": "maxmind", "MAXMIND_ACCOUNT_ID": "1", "MAXMIND_LICENSE_KEY": "k",
			"GEOIP_UPDATE_CITY": "GeoIP2-City", "GEOIP_UPDATE_ASN": "none", "GEOIP_DB": "/x/city.mmdb"},
			source: "maxmind", city: "GeoIP2-City", cityTarget: "/x/city.mmdb"},
		{name: "dbip needs no key", env: map[string]string{"GEOIP_UPDATE_SOURCE": "DBIP", "GEOIP_UPDATE_DIR": "/d"},
			source: "dbip", city: "dbip-city-lite", asn: "dbip-asn-lite", cityTarget: "/d/dbip-city-lite.mmdb", asnPath: "/d/dbip-asn-lite.mmdb"},
		{name: "none turns a token's updates off", env: map[string]string{"GEOIP_UPDATE_SOURCE": "none", "IP2LOCATION_TOKEN": "t", "IP2LOCATION_PRODUCT": "p"}},
		{name: "unknown source", env: map[string]string{"GEOIP_UPDATE_SOURCE": "geoipify"}, wantErr: "GEOIP_UPDATE_SOURCE"},
		{name: "maxmind without a key", env: map[string]string{"MAXMIND_ACCOUNT_ID": "1"}, wantErr: "MAXMIND_LICENSE_KEY"},
		{name: "ip2location without a token", env: map[string]string{"GEOIP_UPDATE_SOURCE": "ip2location"}, wantErr: "IP2LOCATION_TOKEN"},
		{name: "edition with a path", env: map[string]string{"GEOIP_UPDATE_SOURCE": "dbip", "GEOIP_UPDATE_CITY": "../etc/x"}, wantErr: "GEOIP_UPDATE_CITY"},
		{name: "nothing to update", env: map[string]string{"GEOIP_UPDATE_SOURCE": "dbip", "GEOIP_UPDATE_CITY": "none", "GEOIP_UPDATE_ASN": "none"}, wantErr: "nothing to update"},
		{name: "mirror URL", env: map[string]string{"GEOIP_UPDATE_SOURCE": "dbip", "GEOIP_UPDATE_URL": "ftp://x"}, wantErr: "GEOIP_UPDATE_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, done, err := loadCase(t, tc.env, tc.wantErr)
			if done {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.UpdateSource != tc.source || c.UpdateCity != tc.city || c.UpdateASN != tc.asn {
				t.Errorf("source %q city %q asn %q", c.UpdateSource, c.UpdateCity, c.UpdateASN)
			}
			if tc.cityTarget != "" && c.UpdateTarget() != tc.cityTarget {
				t.Errorf("city target %q", c.UpdateTarget())
			}
			if tc.asnPath != "" && c.ASNUpdateTarget() != tc.asnPath {
				t.Errorf("asn target %q", c.ASNUpdateTarget())
			}
		})
	}
}

func TestDBMaxAge(t *testing.T) {
	for v, want := range map[string]time.Duration{"": DefaultDBMaxAge, "30d": 30 * 24 * time.Hour, "36h": 36 * time.Hour} {
		c, err := Load(envOf(map[string]string{"GEOIP_DB_MAX_AGE": v}))
		if err != nil || c.DBMaxAge != want {
			t.Errorf("%q: %v %v", v, c.DBMaxAge, err)
		}
	}
	for _, v := range []string{"0", "-1d", "xd", "soon"} {
		loadCase(t, map[string]string{"GEOIP_DB_MAX_AGE": v}, "GEOIP_DB_MAX_AGE")
	}
}

func TestLogValueMasksTheLicenseKey(t *testing.T) {
	c, err := Load(envOf(map[string]string{"MAXMIND_ACCOUNT_ID": "4242", "MAXMIND_LICENSE_KEY": "lic-secret", "GEOIP_UPDATE_DIR": "/d"}))
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("geoip starting", "config", c)
	if strings.Contains(buf.String(), "secret") || !strings.Contains(buf.String(), `"maxmind_license_key":"***"`) || !strings.Contains(buf.String(), `"update_source":"maxmind"`) {
		t.Errorf("%s", buf.String())
	}
}
