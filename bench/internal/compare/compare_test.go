package compare

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestRatiosAreToTheFirstTarget(t *testing.T) {
	tb := Table{
		Metrics: []Metric{{Name: "req/s"}, {Name: "p99", Duration: true}, {Name: "errors", NoRatio: true}},
		Targets: []string{"floor", "geoip"},
		Rounds: [][]map[string]float64{
			{{"req/s": 100, "p99": 1e6}, {"req/s": 80, "p99": 2e6}},
			{{"req/s": 100, "p99": 1e6}, {"req/s": 90, "p99": 1e6}},
		},
		Total: []map[string]float64{{"req/s": 100, "p99": 1e6}, {"req/s": 85, "p99": 2e6}},
	}
	if r := tb.Ratio(1, "req/s"); r != 0.85 {
		t.Errorf("ratio = %v", r)
	}
	if rr := tb.RoundRatios(1, "req/s"); len(rr) != 2 || rr[0] != 0.8 || rr[1] != 0.9 {
		t.Errorf("round ratios = %v", rr)
	}
	rs := tb.Ratios()
	if _, ok := rs[1]["errors"]; ok {
		t.Error("NoRatio metric has a ratio")
	}
	if rs[1]["p99"] != 2 {
		t.Errorf("p99 ratio = %v", rs[1]["p99"])
	}
	if m := tb.MedianRatios(); math.Abs(m[1]["req/s"]-0.85) > 1e-9 || m[1]["p99"] != 1.5 {
		t.Errorf("median ratios %v", m[1])
	}
	if median([]float64{3, math.NaN(), 1, 2}) != 2 || !math.IsNaN(median(nil)) {
		t.Error("median wrong")
	}
	var buf bytes.Buffer
	if err := tb.Write(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"round 2", "ratio to floor", "0.85x med 0.85 [0.80..0.90]", "2.00x med 1.50 [1.00..2.00]", "2.00ms"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	tb.Total[0]["req/s"] = 0
	if !math.IsNaN(tb.Ratio(1, "req/s")) {
		t.Error("ratio to zero floor is not NaN")
	}
}

func TestParseTargets(t *testing.T) {
	got, err := ParseTargets([]string{"floor=http://127.0.0.1:1/{ip}", "http://127.0.0.1:2/"})
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != (Target{"floor", "http://127.0.0.1:1/{ip}"}) || got[1] != (Target{"t2", "http://127.0.0.1:2/"}) {
		t.Errorf("got %+v", got)
	}
	if _, err := ParseTargets([]string{"a=x", "a=y"}); err == nil {
		t.Error("duplicate names accepted")
	}
	if _, err := ParseTargets(nil); err == nil {
		t.Error("no targets accepted")
	}
	// a URL whose query holds '=' is not split as NAME=VALUE
	got, _ = ParseTargets([]string{"http://127.0.0.1:3/x?a=b"})
	if got[0].Value != "http://127.0.0.1:3/x?a=b" {
		t.Errorf("got %+v", got)
	}
}

func TestOrder(t *testing.T) {
	if got := Order(1, 3, false); got[0] != 0 || got[2] != 2 {
		t.Errorf("plain order %v", got)
	}
	if got := Order(0, 3, true); got[0] != 0 || got[2] != 2 {
		t.Errorf("alternate round 0 %v", got)
	}
	if got := Order(1, 3, true); got[0] != 2 || got[2] != 0 {
		t.Errorf("alternate round 1 %v", got)
	}
}
