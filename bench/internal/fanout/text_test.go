package fanout

import (
	"testing"
	"time"
)

func TestTextRoundTrip(t *testing.T) {
	at := time.Unix(1700000000, 123456789)
	got, ok := ParseText(FormatText("r1a2", 42, at))
	if !ok || got != (Text{RunID: "r1a2", Seq: 42, SentNano: at.UnixNano()}) {
		t.Errorf("measured: %+v %v", got, ok)
	}
	got, ok = ParseText(FormatWarmup("r1a2", 3, at))
	if !ok || !got.Warmup || got.Seq != -1 || got.RunID != "r1a2" {
		t.Errorf("warm-up: %+v %v", got, ok)
	}
}

func TestParseTextRejectsOtherTexts(t *testing.T) {
	for _, s := range []string{
		"", "hello", "bench", "bench r1", "bench r1 5", "bench r1 x 5", "bench r1 -1 5",
		"bench r1 5 0", "bench r1 5 abc", "bench  5 6", "bench r1 wx 5", "!bench r1 1 2",
	} {
		if p, ok := ParseText(s); ok {
			t.Errorf("ParseText(%q) = %+v, want rejection", s, p)
		}
	}
}

func FuzzParseText(f *testing.F) {
	f.Add("bench r 1 2")
	f.Add("bench r w1 2")
	f.Fuzz(func(t *testing.T, s string) {
		p, ok := ParseText(s)
		if !ok {
			return
		}
		if p.Warmup != (p.Seq == -1) || p.SentNano <= 0 || p.RunID == "" {
			t.Fatalf("inconsistent parse of %q: %+v", s, p)
		}
	})
}
