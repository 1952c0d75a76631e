package chat

import (
	"fmt"
	"strings"
	"testing"
)

func mustFilter(t testing.TB, f Filter) *compiledFilter {
	t.Helper()
	if f.Action == "" {
		f.Action = ActionBlock
	}
	if f.MinRole == "" {
		f.MinRole = RoleModerator
	}
	c, err := compileFilter(f)
	if err != nil {
		t.Fatalf("compile %+v: %v", f, err)
	}
	return c
}

// TestBlockedTermEvasions holds every way issue 13 found to slip "scam"
// past a blocked term, and some that must still pass.
func TestBlockedTermEvasions(t *testing.T) {
	scam := []*compiledFilter{mustFilter(t, Filter{Kind: FilterBlockedTerm, Pattern: "scam"})}
	blocked := map[string]string{
		"Cyrillic с and а":         "s\u0441\u0430m",
		"Cyrillic ѕ, с, а":         "\u0455\u0441\u0430m",
		"Greek alpha":              "sc\u03b1m",
		"small capitals":           "ѕᴄᴀᴍ",
		"Latin small capital s":    "ꜱcam",
		"U+3164 Hangul filler":     "sc\u3164am",
		"U+FFA0 half-width filler": "sc\uffa0am",
		"U+2800 braille blank":     "sc\u2800am",
		"NUL":                      "sc\x00am",
		"zero-width space":         "s\u200bc\u200ca\u200dm",
		"word joiner and BOM":      "sc\u2060am\ufeff",
		"variation selector":       "sca\ufe0fm",
		"U+034F grapheme joiner":   "sc\u034fam",
		"Mongolian separator":      "sc\u180eam",
		"combining marks":          "s\u0327c\u0301a\u0308m",
		"full width":               "ｓｃａｍ",
		"upper case":               "SCAM",
		"mathematical letters":     "𝐬𝐜𝐚𝐦",
		"in a sentence":            "this is a sсаm, honestly",
		"bidi override inside":     "sc\u202eam",
	}
	for name, text := range blocked {
		if out := applyFilters(text, RoleViewer, scam); out.blocked == nil {
			t.Errorf("%s: %q passed the scam filter", name, text)
		}
	}
	for _, text := range []string{"scarf", "scamp", "a scan", "sc am", "escam"} {
		if out := applyFilters(text, RoleViewer, scam); out.blocked != nil {
			t.Errorf("%q blocked, want passed", text)
		}
	}
	// A mask covers what the sender wrote, look-alikes and fillers included.
	mask := []*compiledFilter{mustFilter(t, Filter{Kind: FilterBlockedTerm, Pattern: "scam", Action: ActionMask})}
	if got := applyFilters("a s\u0441\u0430m and sc\u3164am!", RoleViewer, mask).text; got != "a **** and *****!" {
		t.Errorf("masked %q", got)
	}
}

// TestLinkEvasions holds every way issue 13 found past the links filter,
// and ordinary text that must pass.
func TestLinkEvasions(t *testing.T) {
	links := []*compiledFilter{mustFilter(t, Filter{Kind: FilterLinks})}
	blocked := []string{
		"evil\u3002com", "evil\uff0ecom", "evil\uff61com", // IDN full stops
		"evil[.]com", "evil(.)com", "evil{.}com", "evil[dot]com", "evil(dot)com", "EVIL[DOT]COM",
		"1.2.3.4/x", "go to 10.0.0.1:8080 now", "http://3232235777",
		"evil.tk", "evil.ninja", "evil.co.uk", "me.github.io", "xn--80ak6aa92e.com", "example.xn--p1ai", "пример.рф", "例え.みんな",
		"evil.com", "EXAMPLE.COM/path", "(see evil.com)", "ｅｖｉｌ．ｃｏｍ", "evi\u200bl.com",
		"ftp://files", "ftp:evil", "javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,hi", "vbscript:x",
		"mailto:a@b", "chrome-extension://abc", "git+ssh://host/x", "https://a", "www.evil.test",
	}
	for _, text := range blocked {
		if out := applyFilters(text, RoleViewer, links); out.blocked == nil {
			t.Errorf("%q passed the links filter", text)
		}
	}
	for _, text := range []string{"example dot com", "file.txt", "e.g. this", "version 1.2.3", "time: 12:30", "hello:world",
		"ratio 16:9", "node.js rocks", "a.b", "i.e", "...", "3.14159", "wait... what", "lol:D", "1.2.3.4.5"} {
		if out := applyFilters(text, RoleViewer, links); out.blocked != nil {
			t.Errorf("%q blocked as a link, want passed", text)
		}
	}
	mask := []*compiledFilter{mustFilter(t, Filter{Kind: FilterLinks, Action: ActionMask})}
	if got := applyFilters("see evil[.]com/x now", RoleViewer, mask).text; got != "see ************ now" {
		t.Errorf("masked %q", got)
	}
}

func TestRegexRunsOnFoldedText(t *testing.T) {
	cases := []struct {
		pattern, text string
		want          bool
	}{
		{"SCAM", "ｓｃａｍ", true},
		{`sc[a@]m\d+`, "SC@M99", true},
		{`free\s+v-?bucks`, "get FREE   V-Bucks", true},
		{`(?:buy|sell) followers`, "BUY FOLLOWERS", true},
		{`(?:buy|sell) followers`, "buy likes", false},
		{`\d{3}-\d{4}`, "call 555-1234", true},
		{"straße", "STRASSE", true},
	}
	for _, c := range cases {
		f := []*compiledFilter{mustFilter(t, Filter{Kind: FilterRegex, Pattern: c.pattern})}
		if got := applyFilters(c.text, RoleViewer, f).blocked != nil; got != c.want {
			t.Errorf("regex %q on %q = %v, want %v", c.pattern, c.text, got, c.want)
		}
	}
	for pattern, want := range map[string][]string{
		`sc[a@]m\d+`:             {"sc"},
		`(?:buy|sell) followers`: {" followers"},
		`free\s+v-?bucks`:        {"bucks"},
		`\d{3}-\d{4}`:            {"-"},
		`[a-z]+\d{3}`:            nil,
		`(?:scam|spam)+`:         {"cam", "pam"},
		`x*`:                     nil,
		`SCAM`:                   {"scam"},
	} {
		parsed, err := parseFolded(pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := requiredLiterals(parsed); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("requiredLiterals(%q) = %q, want %q", pattern, got, want)
		}
	}
}

func TestMessageTextRefusesControlsAndInvisibleText(t *testing.T) {
	for _, text := range []string{"a\x00b", "bell\a", "esc\x1b[31m", "del\x7f", "cr\rlf", "tab\there", "c1\u0085x\u0085y", "rlo\u202eevil", "iso\u2066x"} {
		if _, err := checkMessageText(text); KindOf(err) != KindInvalid {
			t.Errorf("%q accepted, want refused", text)
		}
	}
	for _, text := range []string{"\u200b", "\u200b\u200c\u200d\u2060", "\u3164", "\uffa0\u2800", "\u0301\u0302", "\ufe0f", " \u200b \n "} {
		_, err := checkMessageText(text)
		if e, ok := AsError(err); !ok || e.Kind != KindInvalid || !strings.Contains(e.Fields[0].Message, "visible") && !strings.Contains(e.Fields[0].Message, "1..") {
			t.Errorf("%q: err = %v, want invisible refused", text, err)
		}
	}
	for _, text := range []string{"hello", "two\nlines", "👨\u200d👩\u200d👧 family", "مرحبا\u200f", "e\u0301"} {
		got, err := checkMessageText(text)
		if err != nil || got != text {
			t.Errorf("%q: %q, %v", text, got, err)
		}
	}
}
