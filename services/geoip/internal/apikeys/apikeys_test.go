package apikeys_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apistack/platform/services/geoip/internal/apikeys"
)

const good = `{"keys": [
	{"key": "k-acme-0123456789abcdef", "name": "acme", "limit": 1000, "window": "1m"},
	{"key": "k-globex-0123456789abcdef", "name": "globex", "limit": 5, "window": "1h"}
]}`

func TestParseAndLookup(t *testing.T) {
	s, err := apikeys.Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 2 {
		t.Fatalf("Len = %d", s.Len())
	}
	k, ok := s.Lookup("k-globex-0123456789abcdef")
	if !ok || k != (apikeys.Key{Name: "globex", Max: 5, Window: time.Hour}) {
		t.Errorf("Lookup = %+v %v", k, ok)
	}
	for _, bad := range []string{"", "k-globex-0123456789abcde", "K-GLOBEX-0123456789ABCDEF", strings.Repeat("x", 10000)} {
		if _, ok := s.Lookup(bad); ok {
			t.Errorf("Lookup(%.20q) found a key", bad)
		}
	}
	if k, ok := s.ByName("acme"); !ok || k.Max != 1000 {
		t.Errorf("ByName = %+v %v", k, ok)
	}
	var none *apikeys.Set
	if _, ok := none.Lookup("k-acme-0123456789abcdef"); ok {
		t.Error("a nil set found a key")
	}
}

// TestParseRefusesWhole: any bad entry refuses the file, with a message that names the
// entry and never shows a key.
func TestParseRefusesWhole(t *testing.T) {
	entry := func(key, name string, limit int, window string) string {
		return fmt.Sprintf(`{"key": %q, "name": %q, "limit": %d, "window": %q}`, key, name, limit, window)
	}
	ok := entry("k-fine-0123456789abcdef", "fine", 10, "1m")
	secret := "s3cr3t-but-short"
	for name, file := range map[string]string{
		"not JSON":        `{"keys": [`,
		"no keys":         `{}`,
		"unknown field":   `{"keys": [], "extra": 1}`,
		"trailing":        `{"keys": []} {}`,
		"short key":       `{"keys": [` + ok + `,` + entry("short", "a", 1, "1m") + `]}`,
		"space in key":    `{"keys": [` + entry("k with spaces 0123456789", "a", 1, "1m") + `]}`,
		"bad name":        `{"keys": [` + entry("k-0123456789abcdef", "a b", 1, "1m") + `]}`,
		"zero limit":      `{"keys": [` + entry("k-0123456789abcdef", "a", 0, "1m") + `]}`,
		"huge limit":      `{"keys": [` + entry("k-0123456789abcdef", "a", apikeys.MaxLimit+1, "1m") + `]}`,
		"bad window":      `{"keys": [` + entry("k-0123456789abcdef", "a", 1, "soon") + `]}`,
		"tiny window":     `{"keys": [` + entry("k-0123456789abcdef", "a", 1, "10ms") + `]}`,
		"duplicate name":  `{"keys": [` + ok + `,` + entry("k-other-0123456789abcdef", "fine", 1, "1m") + `]}`,
		"duplicate key":   `{"keys": [` + ok + `,` + entry("k-fine-0123456789abcdef", "other", 1, "1m") + `]}`,
		"secret in error": `{"keys": [` + entry(secret+"-0123456789", "a", -1, "1m") + `]}`,
		"too large":       `{"keys": [], "x": "` + strings.Repeat("x", apikeys.MaxFileSize) + `"}`,
	} {
		_, err := apikeys.Parse([]byte(file))
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "0123456789abcdef") {
			t.Errorf("%s: error shows a key: %v", name, err)
		}
	}
	var b strings.Builder
	b.WriteString(`{"keys": [`)
	for i := range apikeys.MaxKeys + 1 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(entry(fmt.Sprintf("k-%016d", i), fmt.Sprintf("n%d", i), 1, "1m"))
	}
	b.WriteString(`]}`)
	if _, err := apikeys.Parse([]byte(b.String())); err == nil || !strings.Contains(err.Error(), "keys, more than") {
		t.Errorf("too many keys: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte(`{"keys": []}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := apikeys.Parse(data)
		if err == nil && s.Len() > apikeys.MaxKeys {
			t.Fatal("more keys than allowed")
		}
	})
}
