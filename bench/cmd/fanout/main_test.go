package main

import (
	"bytes"
	"encoding/json"
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

func TestParseTargetChannels(t *testing.T) {
	got, err := parseTarget(compare.Target{Name: "many", Value: "http://127.0.0.1:1|http://127.0.0.1:2#1000"})
	if err != nil || got.Channels != 1000 || len(got.Send) != 1 || got.Send[0] != "http://127.0.0.1:2" {
		t.Fatalf("got %+v, %v", got, err)
	}
	if _, err := parseTarget(compare.Target{Name: "bad", Value: "http://127.0.0.1:1#0"}); err == nil {
		t.Error("zero channels accepted")
	}
}

// TestManyChannelsAccountPerChannel: with subscribers spread over channels,
// each expects only its channel's messages: nothing counts as lost.
func TestManyChannelsAccountPerChannel(t *testing.T) {
	a := httptest.NewServer(wsfloor.New(wsfloor.Options{Buffer: 1024}).Handler())
	defer a.Close()
	var out bytes.Buffer
	err := run([]string{
		"-target", "few=" + a.URL + "#2", "-target", "many=" + a.URL + "#20",
		"-subs", "40", "-rate", "100", "-d", "300ms", "-grace", "10s", "-rounds", "1", "-pause", "0", "-json", "-",
	}, &out)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Targets []struct {
			Channels int `json:"channels"`
			Rounds   []struct {
				Sent, Expected, Delivered, Lost, Duplicated int64
			} `json:"rounds"`
		} `json:"targets"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, tr := range rep.Targets {
		r := tr.Rounds[0]
		// 40 subscribers over N channels: each message reaches 40/N of them.
		if r.Sent == 0 || r.Expected != r.Sent*40/int64(tr.Channels) || r.Delivered != r.Expected || r.Lost != 0 || r.Duplicated != 0 {
			t.Fatalf("%d channels: %+v", tr.Channels, r)
		}
	}
}
