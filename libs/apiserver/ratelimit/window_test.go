package ratelimit

import (
	"strings"
	"testing"
	"time"
)

func TestParseWindow(t *testing.T) {
	valid := []struct {
		in   string
		want time.Duration
	}{
		{"15m", 15 * time.Minute},
		{"1m", time.Minute},
		{"30s", 30 * time.Second},
		{"1h", time.Hour},
		{"500ms", 500 * time.Millisecond},
		{"1d", 24 * time.Hour},
		{"007s", 7 * time.Second},
		{"106751d", 106751 * 24 * time.Hour}, // the largest whole number of days a Duration holds
	}
	for _, tt := range valid {
		got, err := ParseWindow(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseWindow(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}

	invalid := []struct {
		in, why string
	}{
		{"", "unit"},
		{"soon", "unit"},
		{"15", "unit"},
		{"m", "unit"},
		{"1.5m", `unknown unit ".5m"`},
		{"-1m", "unit"},
		{"+1m", "unit"},
		{"0s", "greater than zero"},
		{"0ms", "greater than zero"},
		{" 1m", "unit"},
		{"1m ", `unknown unit "m "`},
		{"1 m", `unknown unit " m"`},
		{"1M", `unknown unit "M"`},
		{"1us", `unknown unit "us"`},
		{"1w", `unknown unit "w"`},
		{"1h30m", `unknown unit "h30m"`},
		{"106752d", "too large"},
		{"9223372036854775808ms", "too large"},
		{"99999999999999999999999s", "too large"},
	}
	for _, tt := range invalid {
		got, err := ParseWindow(tt.in)
		if err == nil {
			t.Errorf("ParseWindow(%q) = %v, want an error", tt.in, got)
			continue
		}
		if !strings.Contains(err.Error(), tt.why) || !strings.Contains(err.Error(), `"`+tt.in+`"`) {
			t.Errorf("ParseWindow(%q) error %q: want it to quote the input and mention %q", tt.in, err, tt.why)
		}
	}
}

func FuzzParseWindow(f *testing.F) {
	for _, s := range []string{"15m", "500ms", "1d", "0s", "1.5m", "-1m", "", "9223372036854775807ms"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseWindow(s)
		if err != nil {
			return
		}
		if d <= 0 {
			t.Fatalf("ParseWindow(%q) = %v, want positive", s, d)
		}
		// Whatever is accepted must also mean the same to time.ParseDuration
		// (which has no "d"), so operators are never surprised.
		if strings.HasSuffix(s, "d") {
			return
		}
		want, perr := time.ParseDuration(s)
		if perr != nil || want != d {
			t.Fatalf("ParseWindow(%q) = %v, time.ParseDuration = %v, %v", s, d, want, perr)
		}
	})
}
