package chat

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNormalizeFoldsEvasions(t *testing.T) {
	cases := []struct{ in, want string }{
		{"Hello", "hello"},
		{"ＨＥＬＬＯ", "hello"},                   // full-width
		{"héllò", "hello"},                   // precomposed accents
		{"he\u0301llo", "hello"},             // combining accent
		{"he\u200bl\u200cl\u200do", "hello"}, // zero-width space, non-joiner, joiner
		{"hel\u00adlo\ufeff", "hello"},       // soft hyphen, BOM
		{"ﬁne", "fine"},                      // ligature (compatibility form)
		{"STRAßE", "strasse"},                // full case folding
		{"ｈｔｔｐｓ：／／", "https://"},
	}
	for _, c := range cases {
		if got := Normalize(c.in); got != c.want {
			t.Errorf("Normalize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzNormalize checks the invariants masking relies on: every folded and
// skeleton rune maps back to an original rune, in order, folding is
// idempotent, and every filter kind runs without panicking.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"", "abc", "ＡＢＣ", "e\u0301", "a\u200bb", "ﬁ", "ß", "\xff\xfe", "日本語", "🙂‍🙂", "ѕᴄᴀᴍ", "evil[.]com", "a:b", "1.2.3.4/x"} {
		f.Add(s)
	}
	links, _ := compileFilter(Filter{Kind: FilterLinks, Action: ActionMask, MinRole: RoleModerator})
	term, _ := compileFilter(Filter{Kind: FilterBlockedTerm, Pattern: "*a*", Action: ActionMask, MinRole: RoleModerator})
	f.Fuzz(func(t *testing.T, s string) {
		nt := normalize(s)
		for name, v := range map[string]*view{"fold": &nt.fold, "skeleton": nt.skeleton(), "link": nt.linkView()} {
			if len(v.runes) != len(v.orig) {
				t.Fatalf("%s: runes %d, orig %d", name, len(v.runes), len(v.orig))
			}
			for i, o := range v.orig {
				if o < 0 || o >= len(nt.src) || i > 0 && o < v.orig[i-1] {
					t.Fatalf("%s: orig[%d] = %d out of order or range (src %d)", name, i, o, len(nt.src))
				}
			}
		}
		once := string(nt.fold.runes)
		if !utf8.ValidString(s) {
			return // invalid bytes become U+FFFD; idempotence holds from there
		}
		if twice := Normalize(once); twice != once {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, once, twice)
		}
		// A mask never panics and keeps the rune count.
		for _, w := range nt.skeletonWords() {
			sp := nt.srcSpan(nt.skel, w.from, w.to)
			if sp.from < 0 || sp.to > len(nt.src) || sp.from >= sp.to {
				t.Fatalf("span %+v of %q", sp, s)
			}
		}
		out := applyFilters(s, RoleViewer, []*compiledFilter{links, term})
		if utf8.RuneCountInString(out.text) != len(nt.src) {
			t.Fatalf("mask changed the length: %q -> %q", s, out.text)
		}
	})
}

func TestBlockedTermMatchesWholeWords(t *testing.T) {
	cases := []struct {
		pattern, text string
		want          bool
	}{
		{"ass", "class", false},
		{"ass", "an ass!", true},
		{"*ass", "class", true},
		{"ass*", "assets", true},
		{"ass*", "class", false},
		{"*ass*", "classes", true},
		{"bad word", "such a BAD   word", true},
		{"bad word", "bad words", false},
		{"bad word*", "bad words", true},
		{"naïve", "NAIVE", true},
	}
	for _, c := range cases {
		m, err := compileTerm(c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		nt := normalize(c.text)
		if got := len(m(&nt)) > 0; got != c.want {
			t.Errorf("term %q on %q = %v, want %v", c.pattern, c.text, got, c.want)
		}
	}
}

func TestMaskKeepsTheRestOfTheMessage(t *testing.T) {
	c, err := compileFilter(Filter{Kind: FilterBlockedTerm, Pattern: "darn", Action: ActionMask, MinRole: RoleModerator})
	if err != nil {
		t.Fatal(err)
	}
	out := applyFilters("oh Ｄａｒｎ, d\u200barn and dárn!", RoleViewer, []*compiledFilter{c})
	if out.text != "oh ****, ***** and ****!" || out.blocked != nil {
		t.Fatalf("masked %q", out.text)
	}
	r, _ := compileFilter(Filter{Kind: FilterRegex, Pattern: `\d{3}-\d{4}`, Action: ActionMask, MinRole: RoleModerator})
	if got := applyFilters("call 555-1234 now", RoleViewer, []*compiledFilter{r}).text; got != "call ******** now" {
		t.Fatalf("regex mask %q", got)
	}
}

func TestCapsNeedsRatioAndLength(t *testing.T) {
	cases := []struct {
		text string
		want bool
	}{
		{"HELLO THERE FRIENDS", true},
		{"Hello There Friends", false},
		{"HELLO", false}, // under 10 letters
		{"ＨＥＬＬＯ ＴＨＥＲＥ ＦＲＩＥＮＤＳ", true},
		{"1234567890!!", false},
	}
	for _, c := range cases {
		nt := normalize(c.text)
		if got := len(capsSpans(&nt, 70, 10)) > 0; got != c.want {
			t.Errorf("caps %q = %v", c.text, got)
		}
	}
}

func TestNormalizeTrigger(t *testing.T) {
	for in, want := range map[string]string{"hello": "!hello", "!Hello": "!hello", " !HELLO ": "!hello", "so-me_1": "!so-me_1"} {
		got, err := NormalizeTrigger(in)
		if err != nil || got != want {
			t.Errorf("NormalizeTrigger(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "!", "two words", "!!x", "émoji", strings.Repeat("a", 33)} {
		if _, err := NormalizeTrigger(in); KindOf(err) != KindInvalid {
			t.Errorf("NormalizeTrigger(%q) err = %v", in, err)
		}
	}
}

func TestRenderResponse(t *testing.T) {
	v := RenderVars{User: "ann", Args: []string{"@bob", "x"}, Count: 7, Channel: "general"}
	got := RenderResponse("${user}>${touser} [${args}] #${count} in ${channel} ${nope}", v)
	if got != "ann>bob [@bob x] #7 in general ${nope}" {
		t.Fatalf("got %q", got)
	}
	if got := RenderResponse("${touser}", RenderVars{User: "ann"}); got != "ann" {
		t.Fatalf("touser without args = %q", got)
	}
	long := RenderResponse(strings.Repeat("${args}", 10), RenderVars{Args: []string{strings.Repeat("y", 100)}})
	if utf8.RuneCountInString(long) != MaxMessageRunes {
		t.Fatalf("long reply has %d runes", utf8.RuneCountInString(long))
	}
}

func TestCursorRoundTrip(t *testing.T) {
	for _, s := range []string{"0", "12", "12-3", "12.9f2c01a4", "12-3.1"} {
		c, err := ParseCursor(s)
		if err != nil || c.String() != s {
			t.Errorf("ParseCursor(%q) = %v, %v", s, c, err)
		}
	}
	if c, _ := ParseCursor("12-3.ffffffff"); c != (Cursor{ID: 12, Seq: 3, Epoch: 0xffffffff}) {
		t.Errorf("epoch: %+v", c)
	}
	for _, s := range []string{"x", "-1", "1-", "1-x", "1--2", "1.", "1.0", "1.123456789", "1.xyz", "1.-1", "1-2.3.4"} {
		if _, err := ParseCursor(s); KindOf(err) != KindInvalid {
			t.Errorf("ParseCursor(%q) err = %v", s, err)
		}
	}
	if !(Cursor{ID: 1, Seq: 5}).Less(Cursor{ID: 2}) || (Cursor{ID: 2}).Less(Cursor{ID: 1, Seq: 9}) || !(Cursor{ID: 2}).Less(Cursor{ID: 2, Seq: 1}) {
		t.Fatal("order")
	}
	if (Cursor{ID: 2, Epoch: 1}).Less(Cursor{ID: 2, Epoch: 2}) || !(Cursor{ID: 2, Epoch: 1}).At(Cursor{ID: 2}) {
		t.Fatal("the epoch is no place in the order")
	}
}

func TestNormalizeChannel(t *testing.T) {
	for in, want := range map[string]string{"": "general", " Games ": "games", "a-b_c": "a-b_c", "9lives": "9lives"} {
		if got, err := NormalizeChannel(in); err != nil || got != want {
			t.Errorf("NormalizeChannel(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"-x", "_x", "a b", "a:b", "{x}", strings.Repeat("a", 33), "ünï"} {
		if _, err := NormalizeChannel(in); KindOf(err) != KindInvalid {
			t.Errorf("NormalizeChannel(%q) accepted", in)
		}
	}
}

func TestPermissionTableIsComplete(t *testing.T) {
	seen := map[Action]bool{}
	for _, p := range PermissionTable {
		if seen[p.Action] {
			t.Errorf("%s listed twice", p.Action)
		}
		seen[p.Action] = true
		if !p.MinRole.Valid() {
			t.Errorf("%s: invalid role %q", p.Action, p.MinRole)
		}
	}
	md := PermissionsMarkdown()
	for _, p := range PermissionTable {
		if !strings.Contains(md, "`"+string(p.Action)+"`") {
			t.Errorf("markdown misses %s", p.Action)
		}
	}
	if Allowed(RoleBroadcaster, Action("nonexistent")) {
		t.Error("unknown actions must be denied")
	}
	if AllowedOn(RoleModerator, ActionBanUsers, RoleModerator) || AllowedOn(RoleBroadcaster, ActionBanUsers, RoleBroadcaster) || !AllowedOn(RoleBroadcaster, ActionBanUsers, RoleModerator) {
		t.Error("target rule")
	}
}

func TestPageRange(t *testing.T) {
	cases := []struct {
		p              Page
		last, trimmed  int64
		wantLo, wantHi int64
	}{
		{Page{Limit: 50}, 0, 0, 1, 0},
		{Page{Limit: 3}, 10, 0, 8, 10},
		{Page{Limit: 3, Before: 5}, 10, 0, 2, 4},
		{Page{Limit: 3, After: 5}, 10, 0, 6, 8},
		{Page{Limit: 3, After: 1}, 10, 4, 5, 7},
		{Page{Limit: 50, Before: 3}, 10, 4, 5, 2},
		{Page{Limit: 50, After: 2, Before: 5}, 10, 0, 3, 4},
		{Page{Limit: 3, FromStart: true}, 10, 0, 1, 3},
		{Page{Limit: 3, FromStart: true}, 10, 4, 5, 7}, // from the oldest kept message
		{Page{Limit: 3}, 10, 4, 8, 10},
	}
	for _, c := range cases {
		lo, hi := PageRange(c.p, c.last, c.trimmed)
		if lo > hi && c.wantLo > c.wantHi {
			continue
		}
		if lo != c.wantLo || hi != c.wantHi {
			t.Errorf("PageRange(%+v, %d, %d) = %d..%d, want %d..%d", c.p, c.last, c.trimmed, lo, hi, c.wantLo, c.wantHi)
		}
	}
}

func TestErrorsMatchByKind(t *testing.T) {
	err := NotFound("user")
	if !errorsIs(err, ErrNotFound) || errorsIs(err, ErrConflict) {
		t.Fatal("kind matching")
	}
	wrapped := Unavailable("ping", errString("connection refused"))
	if KindOf(wrapped) != KindUnavailable || !strings.Contains(wrapped.Error(), "connection refused") {
		t.Fatalf("unavailable: %v", wrapped)
	}
}
