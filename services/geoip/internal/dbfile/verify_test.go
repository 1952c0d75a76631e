package dbfile_test

import (
	"bytes"
	"encoding/binary"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/apistack/platform/services/geoip/internal/dbfile"
)

// corruptBody damages a BIN behind a valid header: the first IPv4 row's city points past
// the end of the file (finding 5 of issue 13).
func corruptBody(good []byte) []byte {
	data := append([]byte(nil), good...)
	base4 := int(binary.LittleEndian.Uint32(data[9:])) - 1
	binary.LittleEndian.PutUint32(data[base4+4+2*4:], uint32(len(data)+4096))
	return data
}

// TestRefusalsSayWhy: every refused reload is logged with its reason and counted under
// it, and the previous database keeps serving.
func TestRefusalsSayWhy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.BIN")
	good := binWithCity(t, "Old Town")
	writeAtomically(t, path, good)
	var logs bytes.Buffer
	m, err := dbfile.New(dbfile.Config{Path: path, PollInterval: -1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	reg := prometheus.NewRegistry()
	if err := m.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		name   string
		data   []byte // nil: the file is removed
		reason string
		says   string
	}{
		{"body-corrupt", corruptBody(good), "corrupt", "corrupt bin: ipv4 row 0 column 4 points at byte"},
		{"truncated", good[:len(good)-len(good)/4], "corrupt", "outside the"},
		{"garbage", bytes.Repeat([]byte("not a database "), 10), "format", "not an IP2Location type"},
		{"missing", nil, "file", "no such file"},
	}
	for _, r := range rows {
		logs.Reset()
		if r.data == nil {
			os.Remove(path)
		} else {
			writeAtomically(t, path, r.data)
		}
		if err := m.Reload(); err == nil || !strings.Contains(err.Error(), r.says) {
			t.Fatalf("%s: reload error %v, want one saying %q", r.name, err, r.says)
		}
		line := logs.String()
		if !strings.Contains(line, "database reload refused") || !strings.Contains(line, "reason="+r.reason) || !strings.Contains(line, r.says) {
			t.Errorf("%s: log %q lacks the reason", r.name, line)
		}
		if got := city(t, m, "8.8.8.8"); got != "Old Town" {
			t.Errorf("%s: serving %q after a refused reload", r.name, got)
		}
	}
	want := `
# HELP geoip_database_reload_failures_total Database files refused because they did not open or verify, by reason: file, format, corrupt or lookup.
# TYPE geoip_database_reload_failures_total counter
geoip_database_reload_failures_total{reason="corrupt"} 2
geoip_database_reload_failures_total{reason="file"} 1
geoip_database_reload_failures_total{reason="format"} 1
geoip_database_reload_failures_total{reason="lookup"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "geoip_database_reload_failures_total"); err != nil {
		t.Error(err)
	}
}

// TestCorruptFileIsRefusedAtStart: New refuses a body-corrupt file instead of serving it.
func TestCorruptFileIsRefusedAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.BIN")
	writeAtomically(t, path, corruptBody(binWithCity(t, "Old Town")))
	if m, err := dbfile.New(dbfile.Config{Path: path, PollInterval: -1, Logger: quiet}); err == nil {
		m.Close()
		t.Fatal("a corrupt database was loaded at start")
	} else if !strings.Contains(err.Error(), "corrupt bin") {
		t.Fatalf("error %v does not say why", err)
	}
}
