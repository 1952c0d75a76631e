package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"

	"github.com/apistack/platform/libs/apiserver"

	"github.com/apistack/platform/libs/apiserver/testkit"
	"github.com/apistack/platform/services/geoip/internal/config"
	"github.com/apistack/platform/services/geoip/internal/dbfile"
	"github.com/apistack/platform/services/geoip/internal/sample"
)

// writeASN writes a GeoLite2-ASN-shaped database naming org for 8.8.8.0/24.
func writeASN(t *testing.T, path, org string) {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "GeoLite2-ASN", RecordSize: 24})
	if err != nil {
		t.Fatal(err)
	}
	_, n, _ := net.ParseCIDR("8.8.8.0/24")
	if err := tree.Insert(n, mmdbtype.Map{
		"autonomous_system_number":       mmdbtype.Uint32(15169),
		"autonomous_system_organization": mmdbtype.String(org),
	}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tree.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// GEOIP_ASN_DB fills asn and org, in every format, and a new file is answered after a
// reload; without it the fields are empty and /docs says why.
func TestASNDatabase(t *testing.T) {
	log := testkit.Logger()
	reg := apiserver.NewRegistry() // one registry, as serve makes: both databases' metrics on /metrics
	db, err := dbfile.New(dbfile.Config{Fallback: sample.Open, PollInterval: -1, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	path := filepath.Join(t.TempDir(), "asn.mmdb")
	writeASN(t, path, "Google LLC")
	asnDB, err := openASN(config.Config{ASNPath: path, WatchInterval: time.Hour}, log, reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { asnDB.Close() })

	get := func(h http.Handler, path string) string {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		b, _ := io.ReadAll(w.Body)
		return string(b)
	}
	srv, _, err := newHTTPServer(config.Config{}, db, asnDB, httpDeps{Log: log, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	if got := get(h, "/8.8.8.8/asn/"); got != "AS15169" {
		t.Errorf("/8.8.8.8/asn/ = %q", got)
	}
	if got := get(h, "/8.8.8.8/org/"); got != "Google LLC" {
		t.Errorf("/8.8.8.8/org/ = %q", got)
	}
	if got := get(h, "/8.8.8.8/json/"); !strings.Contains(got, `"asn":"AS15169","org":"Google LLC"`) {
		t.Errorf("/8.8.8.8/json/ = %s", got)
	}
	if got := get(h, "/1.1.1.1/asn/"); got != "" {
		t.Errorf("an address the ASN database lacks: asn %q", got)
	}
	if doc := get(h, "/openapi.json"); strings.Contains(doc, "asn and org are empty") {
		t.Error("/docs says asn is empty though an ASN database serves")
	}

	writeASN(t, path, "Google LLC (renamed)")
	if err := asnDB.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := get(h, "/8.8.8.8/org/"); got != "Google LLC (renamed)" {
		t.Errorf("after reload org = %q (a cached answer of the old ASN database?)", got)
	}

	// A refused file keeps the old database serving and is counted, as the city database's.
	if err := os.WriteFile(path, []byte("not a database"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := asnDB.Reload(); err == nil {
		t.Error("a garbage ASN file was accepted")
	}
	metrics := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	metrics.RemoteAddr = "127.0.0.1:1"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, metrics)
	for _, line := range []string{
		"geoip_asn_database_reloads_total 1",
		`geoip_asn_database_reload_failures_total{reason="format"} 1`,
		`geoip_asn_database_reload_failures_total{reason="lookup"} 0`,
		"geoip_asn_database_build_timestamp_seconds ",
		`geoip_asn_database_info{build_date=`,
		"geoip_asn_database_records ",
		"geoip_database_reloads_total 0", // the city database's, apart
	} {
		if !strings.Contains(w.Body.String(), line) {
			t.Errorf("/metrics lacks %q", line)
		}
	}

	if _, err := openASN(config.Config{ASNPath: filepath.Join(t.TempDir(), "missing.mmdb")}, log, nil); err == nil || !strings.Contains(err.Error(), "GEOIP_ASN_DB") {
		t.Errorf("a missing ASN file: %v", err)
	}

	plain, _, err := newHTTPServer(config.Config{}, db, nil, httpDeps{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	if got := get(plain.Handler(), "/8.8.8.8/asn/"); got != "" {
		t.Errorf("without an ASN database asn = %q", got)
	}
	if doc := get(plain.Handler(), "/openapi.json"); !strings.Contains(doc, "asn and org are empty") || !strings.Contains(doc, "GEOIP_ASN_DB") {
		t.Error("/docs does not say why asn and org are empty")
	}
}
