package main

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apistack/platform/bench/internal/compare"
	"github.com/apistack/platform/bench/internal/wsfloor"
)

func TestParseTarget(t *testing.T) {
	got, err := parseTarget(compare.Target{Name: "redis", Value: "http://127.0.0.1:1,http://127.0.0.1:2|http://127.0.0.1:3"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Subscribe) != 2 || len(got.Send) != 1 || got.Send[0] != "http://127.0.0.1:3" {
		t.Fatalf("got %+v", got)
	}
	got, _ = parseTarget(compare.Target{Name: "m", Value: "http://127.0.0.1:1"})
	if len(got.Send) != 1 || got.Send[0] != got.Subscribe[0] {
		t.Fatalf("sends do not default to subscribers: %+v", got)
	}
	if _, err := parseTarget(compare.Target{Name: "e", Value: "|http://127.0.0.1:1"}); err == nil {
		t.Error("target without subscriber bases accepted")
	}
}

func TestTwoTargetsInterleavedWithRatios(t *testing.T) {
	a := httptest.NewServer(wsfloor.New(wsfloor.Options{Buffer: 1024}).Handler())
	defer a.Close()
	b := httptest.NewServer(wsfloor.New(wsfloor.Options{Buffer: 1024}).Handler())
	defer b.Close()
	// "two" is one server reached as two replicas; b is measured on its own
	var out bytes.Buffer
	err := run([]string{
		"-target", "floor=" + a.URL,
		"-target", "two=" + a.URL + "," + a.URL + "|" + a.URL,
		"-target", "other=" + b.URL,
		"-subs", "10", "-rate", "50", "-d", "200ms", "-grace", "10s", "-rounds", "2", "-pause", "0",
	}, &out)
	if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"round 2", "ratio to floor", "delivered/s", "other"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
}
