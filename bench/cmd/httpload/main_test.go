package main

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apistack/platform/bench/internal/geoipfloor"
)

func TestTwoTargetsInterleavedWithRatios(t *testing.T) {
	a := httptest.NewServer(geoipfloor.New(geoipfloor.Options{}))
	defer a.Close()
	b := httptest.NewServer(geoipfloor.New(geoipfloor.Options{}))
	defer b.Close()
	jsonPath := filepath.Join(t.TempDir(), "out.json")
	var out bytes.Buffer
	err := run([]string{
		"-target", "floor=" + a.URL + "/{ip}/json/",
		"-target", "other=" + b.URL + "/{ip}/json/",
		"-c", "2", "-n", "50", "-d", "30s", "-rounds", "2", "-warmup", "0", "-pause", "0",
		"-json", jsonPath,
	}, &out)
	if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"round 1", "round 2", "all rounds", "ratio to floor", "other"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Targets) != 2 || len(rep.Targets[1].Rounds) != 2 || rep.Targets[0].Total.OK != 100 {
		t.Fatalf("json report %s", raw)
	}
	if _, ok := rep.Targets[1].Ratio["req/s"]; !ok {
		t.Errorf("no req/s ratio in %v", rep.Targets[1].Ratio)
	}
}

func TestRefusesNonLoopbackTarget(t *testing.T) {
	err := run([]string{"-target", "x=http://203.0.113.5/{ip}/json/", "-d", "1s"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("err = %v", err)
	}
}
