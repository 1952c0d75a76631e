package chat

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"time"
	"unicode"
)

// FilterKind says how a filter matches.
type FilterKind string

// Filter kinds.
const (
	FilterBlockedTerm FilterKind = "blocked_term"
	FilterRegex       FilterKind = "regex"
	FilterLinks       FilterKind = "links"
	FilterCaps        FilterKind = "caps"
)

// FilterAction says what happens to a matching message.
type FilterAction string

// Filter actions.
const (
	ActionBlock FilterAction = "block"
	ActionMask  FilterAction = "mask"
)

// Filter limits.
const (
	maxTermRunes       = 100
	maxRegexBytes      = 256
	maxRegexInsts      = 2000
	DefaultCapsPercent = 70
	DefaultCapsMinLen  = 10
)

// Filter checks messages from senders below MinRole.
type Filter struct {
	ID      string       `json:"id"`
	Kind    FilterKind   `json:"kind"`
	Pattern string       `json:"pattern,omitempty"`
	Action  FilterAction `json:"action"`
	// MinRole is the lowest role the filter does not apply to.
	MinRole Role `json:"min_role"`
	// Threshold (caps) is the percentage of capitals, 1..100, above which
	// a message matches.
	Threshold int `json:"threshold,omitempty"`
	// MinLength (caps) is the number of letters below which a message is
	// never checked: "OK" is not shouting.
	MinLength int       `json:"min_length,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// FilterInput creates a filter; zero values take their defaults.
type FilterInput struct {
	Kind      FilterKind   `json:"kind"`
	Pattern   string       `json:"pattern,omitempty"`
	Action    FilterAction `json:"action,omitempty"`
	MinRole   Role         `json:"min_role,omitempty"`
	Threshold int          `json:"threshold,omitempty"`
	MinLength int          `json:"min_length,omitempty"`
}

// compiledFilter is a filter ready to run; compiled once per filter.
type compiledFilter struct {
	Filter
	match func(nt *normText) []span
}

// compileFilter validates f and prepares its matcher. Regular expressions
// are RE2 (linear time) and size-limited, so a moderator cannot make every
// send slow.
func compileFilter(f Filter) (*compiledFilter, error) {
	c := &compiledFilter{Filter: f}
	switch f.Kind {
	case FilterBlockedTerm:
		m, err := compileTerm(f.Pattern)
		if err != nil {
			return nil, err
		}
		c.match = m
	case FilterRegex:
		re, err := compileRegex(f.Pattern)
		if err != nil {
			return nil, err
		}
		c.match = func(nt *normText) []span { return regexSpans(re, nt) }
	case FilterLinks:
		c.match = func(nt *normText) []span { return regexSpans(linkRE, nt) }
	case FilterCaps:
		c.match = func(nt *normText) []span { return capsSpans(nt, f.Threshold, f.MinLength) }
	default:
		return nil, Invalid("kind", "must be blocked_term, regex, links or caps")
	}
	return c, nil
}

// compileTerm builds a matcher for a blocked term: one or more words, with
// '*' allowed only at the start (any word ending) or the end (any word
// beginning). Terms match whole folded words, so "ass" does not block "class".
func compileTerm(pattern string) (func(*normText) []span, error) {
	p := strings.TrimSpace(pattern)
	if n := runeLen(p); n < 1 || n > maxTermRunes {
		return nil, Invalid("pattern", fmt.Sprintf("a blocked term is 1..%d characters", maxTermRunes))
	}
	anyStart := strings.HasPrefix(p, "*")
	anyEnd := strings.HasSuffix(p, "*")
	core := strings.TrimSuffix(strings.TrimPrefix(p, "*"), "*")
	if strings.Contains(core, "*") {
		return nil, Invalid("pattern", "'*' is allowed only at the start or the end of a term")
	}
	nt := normalize(core)
	var words []string
	for _, w := range nt.words() {
		words = append(words, string(nt.runes[w.from:w.to]))
	}
	if len(words) == 0 {
		return nil, Invalid("pattern", "a blocked term needs at least one letter or digit")
	}
	return func(msg *normText) []span {
		ws := msg.words()
		var out []span
		for i := 0; i+len(words) <= len(ws); i++ {
			ok := true
			for j, w := range words {
				got := string(msg.runes[ws[i+j].from:ws[i+j].to])
				first, last := j == 0, j == len(words)-1
				switch {
				case first && last && anyStart && anyEnd:
					ok = strings.Contains(got, w)
				case first && anyStart:
					ok = strings.HasSuffix(got, w)
				case last && anyEnd:
					ok = strings.HasPrefix(got, w)
				default:
					ok = got == w
				}
				if !ok {
					break
				}
			}
			if ok {
				out = append(out, msg.srcSpan(ws[i].from, ws[i+len(words)-1].to))
			}
		}
		return out
	}, nil
}

func compileRegex(pattern string) (*regexp.Regexp, error) {
	if pattern == "" || len(pattern) > maxRegexBytes {
		return nil, Invalid("pattern", fmt.Sprintf("a regular expression is 1..%d bytes", maxRegexBytes))
	}
	// Matching runs on folded text (lower case, no accents), so the pattern
	// is case-insensitive too.
	src := "(?i)" + pattern
	parsed, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil, Invalid("pattern", "not a valid RE2 expression: "+err.Error())
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return nil, Invalid("pattern", "not a valid RE2 expression: "+err.Error())
	}
	if len(prog.Inst) > maxRegexInsts {
		// Repetition counts like (a{100}){100} blow up the program; refuse
		// them instead of making every message slow to check.
		return nil, Invalid("pattern", "expression too large")
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, Invalid("pattern", "not a valid RE2 expression: "+err.Error())
	}
	if re.MatchString("") {
		return nil, Invalid("pattern", "expression matches the empty text, so it would match every message")
	}
	return re, nil
}

// linkRE finds URLs and bare domains with a common top-level domain, run on
// folded text so full-width "ｈｔｔｐｓ" or "EXAMPLE.COM" are found too.
var linkRE = regexp.MustCompile(`(?:https?://|www\.)[^\s]+|\b[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\.(?:com|net|org|io|gg|tv|co|me|ly|xyz|info|biz|app|dev|ru|de|uk|fr|eu|link|live|stream|shop|site|online|club|gl|be|to|cc)\b(?:/[^\s]*)?`)

func regexSpans(re *regexp.Regexp, nt *normText) []span {
	if len(nt.runes) == 0 {
		return nil
	}
	s := string(nt.runes)
	// byte offset in s -> index of the folded rune
	idx := make([]int, len(s)+1)
	ri := 0
	// Matches of a valid UTF-8 text start and end on rune boundaries, so
	// only those offsets need an entry.
	for bi := range s {
		idx[bi] = ri
		ri++
	}
	idx[len(s)] = ri
	var out []span
	for _, m := range re.FindAllStringIndex(s, -1) {
		from, to := idx[m[0]], idx[m[1]]
		if to > from {
			out = append(out, nt.srcSpan(from, to))
		}
	}
	return out
}

// capsSpans matches the whole message when more than threshold percent of
// its letters are capitals and it has at least minLen letters.
func capsSpans(nt *normText, threshold, minLen int) []span {
	letters, upper := 0, 0
	for _, r := range nt.src {
		if unicode.IsLetter(r) {
			letters++
			if unicode.IsUpper(r) {
				upper++
			}
		}
	}
	if letters == 0 || letters < minLen || upper*100 <= threshold*letters {
		return nil
	}
	return []span{{0, len(nt.src)}}
}

// filterOutcome is what the filters made of a message.
type filterOutcome struct {
	text    string
	blocked *Filter
}

// applyFilters runs every filter that applies to role, in order. A block
// wins at once; masks accumulate. Caps masking lowers the case instead of
// starring the whole message out.
func applyFilters(text string, role Role, filters []*compiledFilter) filterOutcome {
	for _, f := range filters {
		if role.AtLeast(f.MinRole) {
			continue
		}
		nt := normalize(text)
		spans := f.match(&nt)
		if len(spans) == 0 {
			continue
		}
		if f.Action == ActionBlock {
			ff := f.Filter
			return filterOutcome{text: text, blocked: &ff}
		}
		if f.Kind == FilterCaps {
			text = strings.ToLower(text)
			continue
		}
		src := nt.src
		for _, s := range spans {
			for i := s.from; i < s.to; i++ {
				if !unicode.IsSpace(src[i]) {
					src[i] = '*'
				}
			}
		}
		text = string(src)
	}
	return filterOutcome{text: text}
}

// newFilter validates in and fills the defaults from the permission table.
func newFilter(in FilterInput, now time.Time) (Filter, *compiledFilter, error) {
	f := Filter{Kind: in.Kind, Pattern: strings.TrimSpace(in.Pattern), Action: in.Action, MinRole: in.MinRole, CreatedAt: now}
	var v validation
	if f.Action == "" {
		f.Action = ActionBlock
	}
	if f.Action != ActionBlock && f.Action != ActionMask {
		v.add("action", "must be block or mask")
	}
	if f.MinRole == "" {
		f.MinRole = MinRoleFor(ActionBypassFilters)
		if f.Kind == FilterLinks {
			f.MinRole = MinRoleFor(ActionPostLinks)
		}
	}
	if !f.MinRole.Valid() {
		v.add("min_role", "must be one of broadcaster, moderator, vip, subscriber, viewer")
	}
	switch f.Kind {
	case FilterCaps:
		f.Threshold, f.MinLength = in.Threshold, in.MinLength
		if f.Threshold == 0 {
			f.Threshold = DefaultCapsPercent
		}
		if f.MinLength == 0 {
			f.MinLength = DefaultCapsMinLen
		}
		if f.Threshold < 1 || f.Threshold > 100 {
			v.add("threshold", "must be 1..100 (percent of capital letters)")
		}
		if f.MinLength < 1 || f.MinLength > MaxMessageRunes {
			v.add("min_length", "must be 1..%d letters", MaxMessageRunes)
		}
		f.Pattern = ""
	case FilterLinks:
		f.Pattern = ""
	}
	if err := v.err(); err != nil {
		return Filter{}, nil, err
	}
	c, err := compileFilter(f)
	if err != nil {
		return Filter{}, nil, err
	}
	return f, c, nil
}
