package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apistack/platform/libs/apiserver/testkit"
	"github.com/apistack/platform/services/geoip/internal/config"
	"github.com/apistack/platform/services/geoip/internal/sample"
	"github.com/apistack/platform/services/geoip/internal/tz"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestHealthcheck(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	env := envOf(map[string]string{"PORT": port})
	if err := run(context.Background(), []string{"healthcheck"}, env, io.Discard, io.Discard); err != nil {
		t.Errorf("healthy server: %v", err)
	}
	status = http.StatusServiceUnavailable
	if err := run(context.Background(), []string{"healthcheck"}, env, io.Discard, io.Discard); err == nil {
		t.Error("unhealthy server passed")
	}
	srv.Close()
	if err := run(context.Background(), []string{"healthcheck"}, env, io.Discard, io.Discard); err == nil {
		t.Error("no server passed")
	}
	if err := run(context.Background(), []string{"healthcheck"}, envOf(map[string]string{"PORT": "http"}), io.Discard, io.Discard); err == nil {
		t.Error("bad PORT passed")
	}
}

func TestConvertSubcommand(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "db1.csv")
	os.WriteFile(in, []byte("\"134744064\",\"134744319\",\"US\",\"United States of America\"\n"), 0o644)
	out := filepath.Join(dir, "out.BIN")
	if err := run(context.Background(), []string{"convert", "-o", out, "-date", "2026-06-05", in}, envOf(nil), io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(out); err != nil || st.Size() == 0 {
		t.Fatalf("no output: %v", err)
	}
	for _, args := range [][]string{{"convert", in}, {"convert", "-o", out}, {"convert", "-o", out, "-date", "june", in}} {
		if err := run(context.Background(), args, envOf(nil), io.Discard, io.Discard); err == nil {
			t.Errorf("%v succeeded", args)
		}
	}
}

func TestServeLoadsAndStops(t *testing.T) {
	for name, env := range map[string]map[string]string{
		// PORT 0: serve listens now, and a fixed port may be taken on a shared machine.
		"sample":   {"GEOIP_WATCH_INTERVAL": "1h", "PORT": "0"},
		"GEOIP_DB": {"GEOIP_DB": sampleFile(t), "NODE_ENV": "production", "PORT": "0"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			if err := run(ctx, nil, envOf(env), io.Discard, io.Discard); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// sampleFile writes the embedded sample as a BIN file in the test's directory.
func sampleFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sample.BIN")
	if err := os.WriteFile(path, sample.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestServeRefusesBadConfig(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"missing db":      {"GEOIP_DB": "/nonexistent/x.BIN"},
		"bad interval":    {"GEOIP_UPDATE_INTERVAL": "daily"},
		"short interval":  {"GEOIP_UPDATE_INTERVAL": "10s"},
		"bad watch":       {"GEOIP_WATCH_INTERVAL": "-1s"},
		"token only":      {"IP2LOCATION_TOKEN": "t"},
		"bad log level":   {"LOG_LEVEL": "loud"},
		"bad environment": {"APP_ENV": "staging"},
		"bad collector":   {"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"},
	} {
		err := run(context.Background(), []string{"serve"}, envOf(env), io.Discard, io.Discard)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		for k := range env {
			if name != "missing db" && !strings.Contains(err.Error(), k) && !strings.Contains(err.Error(), "IP2LOCATION") {
				t.Errorf("%s: error %q does not name %s", name, err, k)
			}
		}
	}
	if err := run(context.Background(), []string{"frobnicate"}, envOf(nil), io.Discard, io.Discard); err == nil {
		t.Error("unknown subcommand accepted")
	}
}

func TestOpenDatabaseRegistersMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg, err := config.Load(envOf(map[string]string{"IP2LOCATION_TOKEN": "t", "IP2LOCATION_PRODUCT": "DB11LITEBINIPV6",
		"GEOIP_UPDATE_DIR": t.TempDir(), "GEOIP_UPDATE_INTERVAL": "24h",
		"IP2LOCATION_DOWNLOAD_URL": "http://127.0.0.1:1/download/"})) // never the real service from a test
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	db, err := openDatabase(cfg, testkit.Logger(), reg, tz.New())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	up, err := newUpdater(cfg, testkit.Logger(), reg, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel, deferred later
	wg.Go(func() { up.Run(ctx) })
	defer cancel()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, n := range []string{"geoip_database_info", "geoip_database_reloads_total", "geoip_database_update_failures_total"} {
		if !names[n] {
			t.Errorf("metric %s not registered", n)
		}
	}
	// The updater's first attempt starts at once (no earlier download) and
	// writes in GEOIP_UPDATE_DIR: wait until it has failed (nothing answers
	// on port 1) and cleaned up, or removing the directory at the end of
	// the test races with it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if updateFailures(t, reg) >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the updater's first attempt did not fail within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// updateFailures reads geoip_database_update_failures_total from reg.
func updateFailures(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "geoip_database_update_failures_total" {
			total := 0.0
			for _, m := range mf.GetMetric() {
				total += m.GetCounter().GetValue()
			}
			return total
		}
	}
	return 0
}

func TestApplyGCSetsTheCollector(t *testing.T) {
	oldPercent := debug.SetGCPercent(100)
	oldLimit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	})
	applyGC(config.GC{Percent: 400, MemoryLimit: 192 << 20})
	if p := debug.SetGCPercent(100); p != 400 {
		t.Errorf("GOGC %d, want 400", p)
	}
	if l := debug.SetMemoryLimit(-1); l != 192<<20 {
		t.Errorf("memory limit %d, want %d", l, 192<<20)
	}
	// GOMEMLIMIT set: the runtime's value stays.
	debug.SetMemoryLimit(1 << 30)
	applyGC(config.GC{Percent: -1, PercentFromEnv: true, MemoryLimitEnv: "1GiB"})
	if p := debug.SetGCPercent(100); p != -1 {
		t.Errorf("GOGC %d, want -1 (off)", p)
	}
	if l := debug.SetMemoryLimit(-1); l != 1<<30 {
		t.Errorf("memory limit %d, want GOMEMLIMIT's %d", l, 1<<30)
	}
}

// Help names every subcommand, the convert flags and the environment serve reads, on
// stdout, and succeeds: however it is asked for.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}, {"-help"}, {"serve", "--help"}, {"serve", "-h"}} {
		var stdout, stderr strings.Builder
		if err := run(context.Background(), args, envOf(nil), &stdout, &stderr); err != nil {
			t.Errorf("%v: %v", args, err)
			continue
		}
		out := stdout.String()
		for _, want := range []string{"geoip [serve]", "geoip convert", "geoip healthcheck", "geoip help",
			"-o FILE", "-sample", "-date", "GEOIP_DB", "GEOIP_ASN_DB", "GEOIP_WATCH_INTERVAL", "IP2LOCATION_TOKEN",
			"IP2LOCATION_PRODUCT", "GEOIP_UPDATE_INTERVAL", "IP2LOCATION_DOWNLOAD_URL", "GEOIP_UPDATE_DIR",
			"GEOIP_CACHE_MAX_AGE", "GEOIP_CACHE_SIZE", "GOGC", "GOMEMLIMIT", "PORT", "HOST", "APP_ENV", "LOG_LEVEL",
			"REDIS_URL", "RATE_LIMIT_MAX", "TRUSTED_PROXIES", "CORS_ORIGIN", "SIGHUP"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: the help lacks %q", args, want)
			}
		}
		if strings.Contains(stderr.String(), "flag: help requested") || strings.Contains(out, "Usage of serve") {
			t.Errorf("%v: the flag package's text: %q %q", args, out, stderr.String())
		}
	}
	var stdout strings.Builder
	if err := run(context.Background(), []string{"convert", "-h"}, envOf(nil), &stdout, io.Discard); err != nil {
		t.Errorf("convert -h: %v", err)
	}
	// The subcommands the environment configures take no argument, and say so.
	for _, args := range [][]string{{"serve", "extra"}, {"serve", "-x"}, {"healthcheck", "now"}, {"update", "-h", "extra"}} {
		err := run(context.Background(), args, envOf(nil), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), args[0]+" takes no arguments") {
			t.Errorf("%v: %v, want %q", args, err, args[0]+" takes no arguments")
		}
	}
}

// Every subcommand the help lists answers --help and -h with its help on stdout and
// succeeds (scripts and people try it before running the real thing). The subcommands
// are read from the help itself, so one added later is covered.
func TestEverySubcommandHelpSucceeds(t *testing.T) {
	var subs []string
	for _, line := range strings.Split(usage, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "geoip" && !strings.HasPrefix(f[1], "-") {
			subs = append(subs, strings.Trim(f[1], "[]"))
		}
	}
	if len(subs) < 4 {
		t.Fatalf("found only %v in the help", subs)
	}
	for _, sub := range subs {
		for _, flag := range []string{"--help", "-h"} {
			var stdout, stderr strings.Builder
			if err := run(context.Background(), []string{sub, flag}, envOf(nil), &stdout, &stderr); err != nil {
				t.Errorf("geoip %s %s: %v (stderr %q)", sub, flag, err, stderr.String())
				continue
			}
			if !strings.Contains(stdout.String()+stderr.String(), "geoip") {
				t.Errorf("geoip %s %s printed no help: %q", sub, flag, stdout.String())
			}
		}
	}
}

// backgroundFuncs are functions only serve's background goroutines run.
var backgroundFuncs = []string{"main.(*App).Background", "dbfile.(*Manager).Watch", "main.warmZones", "updater.(*Updater).Run"}

// serve returns only once every goroutine it started has: none of them is left running
// the moment run returns, with both databases, the updater and the signal fan-out started.
func TestServeWaitsForItsGoroutines(t *testing.T) {
	dir := t.TempDir()
	asnPath := filepath.Join(dir, "asn.mmdb")
	writeASN(t, asnPath, "Google LLC")
	env := envOf(map[string]string{"PORT": "0", "GEOIP_WATCH_INTERVAL": "10ms", "GEOIP_ASN_DB": asnPath,
		"IP2LOCATION_TOKEN": "t", "IP2LOCATION_PRODUCT": "DB11LITEBINIPV6", "GEOIP_UPDATE_DIR": dir,
		"IP2LOCATION_DOWNLOAD_URL": "http://127.0.0.1:1/download/"}) // never the real service from a test
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, nil, env, io.Discard, io.Discard) }()
	deadline := time.Now().Add(20 * time.Second)
	for !goroutinesRunning(backgroundFuncs...) {
		if time.Now().After(deadline) {
			t.Fatal("serve's background work did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the watchers poll, the updater tries once
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if goroutinesRunning(backgroundFuncs...) {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines left after serve returned:\n%s", buf[:runtime.Stack(buf, true)])
	}
}

// goroutinesRunning reports whether a goroutine's stack holds any of funcs.
func goroutinesRunning(funcs ...string) bool {
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	for _, f := range funcs {
		if strings.Contains(stacks, f) {
			return true
		}
	}
	return false
}
