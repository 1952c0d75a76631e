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

// Filter actions. Every action but mask refuses the message; timeout,
// ban and strike also act on the sender (automod.go), hold puts the
// message in the review queue (held.go).
const (
	ActionBlock   FilterAction = "block"
	ActionMask    FilterAction = "mask"
	ActionTimeout FilterAction = "timeout"
	ActionBan     FilterAction = "ban"
	ActionHold    FilterAction = "hold"
	ActionStrike  FilterAction = "strike"
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
	ID string `json:"id"`
	// Channel is the channel whose filter this is; "" is platform-wide.
	Channel string       `json:"channel,omitempty"`
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
	MinLength int `json:"min_length,omitempty"`
	// TimeoutSeconds (timeout) is how long a sender is timed out.
	TimeoutSeconds int       `json:"timeout_seconds,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
}

// FilterInput creates a filter; zero values take their defaults.
type FilterInput struct {
	// Channel makes it that channel's own filter; "" platform-wide.
	Channel   string       `json:"channel,omitempty"`
	Kind      FilterKind   `json:"kind"`
	Pattern   string       `json:"pattern,omitempty"`
	Action    FilterAction `json:"action,omitempty"`
	MinRole   Role         `json:"min_role,omitempty"`
	Threshold int          `json:"threshold,omitempty"`
	MinLength int          `json:"min_length,omitempty"`
	// TimeoutSeconds (action timeout): 1..MaxTimeoutSeconds, default
	// DefaultFilterTimeoutSeconds.
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
}

// compiledFilter is a filter ready to run; compiled once per filter.
type compiledFilter struct {
	Filter
	// match returns the spans of original runes that match.
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
		m, err := compileRegex(f.Pattern)
		if err != nil {
			return nil, err
		}
		c.match = m
	case FilterLinks:
		c.match = linkSpans
	case FilterCaps:
		c.match = func(nt *normText) []span { return capsSpans(nt, f.Threshold, f.MinLength) }
	default:
		return nil, Invalid("kind", "must be blocked_term, regex, links or caps")
	}
	return c, nil
}

// compileTerm builds a matcher for a blocked term: one or more words, with
// '*' allowed only at the start (any word ending) or the end (any word
// beginning). Terms match whole words of the confusable skeleton, so "ass"
// does not block "class" and "sсаm" in Cyrillic is "scam".
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
	nt.skeletonWords()
	words := nt.wordStr
	if len(words) == 0 {
		return nil, Invalid("pattern", "a blocked term needs at least one letter or digit")
	}
	// A term whose first word must match exactly looks that word up;
	// the others ("*scam", "scam*") compare with every word.
	exactFirst := !anyStart && !(anyEnd && len(words) == 1)
	return func(msg *normText) []span {
		ws := msg.skeletonWords()
		got := msg.wordStr
		var out []span
		try := func(i int) {
			if i+len(words) > len(ws) {
				return
			}
			ok := true
			for j, w := range words {
				g := got[i+j]
				first, last := j == 0, j == len(words)-1
				switch {
				case first && last && anyStart && anyEnd:
					ok = strings.Contains(g, w)
				case first && anyStart:
					ok = strings.HasSuffix(g, w)
				case last && anyEnd:
					ok = strings.HasPrefix(g, w)
				default:
					ok = g == w
				}
				if !ok {
					break
				}
			}
			if ok {
				out = append(out, msg.srcSpan(msg.skel, ws[i].from, ws[i+len(words)-1].to))
			}
		}
		if exactFirst {
			for i := msg.wordAt(words[0], 0); i >= 0; i = msg.wordAt(words[0], i+1) {
				try(i)
			}
			return out
		}
		for i := range ws {
			try(i)
		}
		return out
	}, nil
}

// compileRegex compiles a moderator's expression to run on the folded
// text. Its literals are folded the way the text is (so "SCAM" matches
// "ｓｃａｍ") instead of matching case-insensitively at run time, which
// costs Go's matcher its literal fast path (about 100x on a 500-character
// message). The literals every match must contain are kept as a
// prefilter: a message without any of them never runs the expression.
func compileRegex(pattern string) (func(*normText) []span, error) {
	if pattern == "" || len(pattern) > maxRegexBytes {
		return nil, Invalid("pattern", fmt.Sprintf("a regular expression is 1..%d bytes", maxRegexBytes))
	}
	parsed, err := parseFolded(pattern)
	if err != nil {
		return nil, Invalid("pattern", "not a valid RE2 expression: "+err.Error())
	}
	prog, err := syntax.Compile(parsed)
	if err != nil {
		return nil, Invalid("pattern", "not a valid RE2 expression: "+err.Error())
	}
	if len(prog.Inst) > maxRegexInsts {
		// Repetition counts like (a{100}){100} blow up the program; refuse
		// them instead of making every message slow to check.
		return nil, Invalid("pattern", "expression too large")
	}
	re, err := regexp.Compile(parsed.String())
	if err != nil {
		return nil, Invalid("pattern", "not a valid RE2 expression: "+err.Error())
	}
	if re.MatchString("") {
		return nil, Invalid("pattern", "expression matches the empty text, so it would match every message")
	}
	need := requiredLiterals(parsed)
	return func(nt *normText) []span {
		s, idx := nt.foldString()
		if need != nil && !containsAny(s, need) {
			return nil
		}
		var out []span
		for _, m := range re.FindAllStringIndex(s, -1) {
			if from, to := idx[m[0]], idx[m[1]]; to > from {
				out = append(out, nt.srcSpan(&nt.fold, from, to))
			}
		}
		return out
	}, nil
}

// parseFolded parses a pattern case-insensitively and folds its literals.
func parseFolded(pattern string) (*syntax.Regexp, error) {
	parsed, err := syntax.Parse(pattern, syntax.Perl|syntax.FoldCase)
	if err != nil {
		return nil, err
	}
	foldLiterals(parsed)
	return parsed.Simplify(), nil
}

// foldLiterals folds the literal runes of a case-insensitive parse the
// way messages are folded, and makes them case-sensitive: the text they
// meet is already folded. Character classes were already widened to every
// case by the parser.
func foldLiterals(re *syntax.Regexp) {
	if re.Op == syntax.OpLiteral && re.Flags&syntax.FoldCase != 0 {
		var v view
		for _, r := range re.Rune {
			foldRune(&v, r, 0)
		}
		re.Rune = v.runes
		re.Flags &^= syntax.FoldCase
		if len(re.Rune) == 0 {
			re.Op = syntax.OpEmptyMatch
		}
	}
	for _, sub := range re.Sub {
		foldLiterals(sub)
	}
}

// requiredLiterals returns strings at least one of which every match of re
// contains, or nil when there is no such set worth checking.
func requiredLiterals(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 || len(re.Rune) == 0 {
			return nil
		}
		return []string{string(re.Rune)}
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiterals(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiterals(re.Sub[0])
		}
	case syntax.OpConcat:
		var best []string
		for _, sub := range re.Sub {
			if l := requiredLiterals(sub); l != nil && (best == nil || shortest(l) > shortest(best)) {
				best = l
			}
		}
		return best
	case syntax.OpAlternate:
		var all []string
		for _, sub := range re.Sub {
			l := requiredLiterals(sub)
			if l == nil {
				return nil
			}
			all = append(all, l...)
		}
		if len(all) > 16 {
			return nil
		}
		return all
	}
	return nil
}

func shortest(ss []string) int {
	n := -1
	for _, s := range ss {
		if n < 0 || len(s) < n {
			n = len(s)
		}
	}
	return n
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
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
	text string
	// blocked is the first matching filter whose action refuses the
	// message (every action but mask).
	blocked *Filter
}

// applyFilters folds the text once and runs every filter that applies to
// role, in order, on that one folding: each filter sees the message as
// sent. A refusing action (block, timeout, ban, hold, strike) wins at
// once; masks accumulate. Caps masking lowers the
// case instead of starring the whole message out.
func applyFilters(text string, role Role, filters []*compiledFilter) filterOutcome {
	var nt *normText
	var masked []rune
	lower := false
	for _, f := range filters {
		if role.AtLeast(f.MinRole) {
			continue
		}
		if nt == nil {
			n := normalize(text)
			nt = &n
		}
		spans := f.match(nt)
		if len(spans) == 0 {
			continue
		}
		if f.Action != ActionMask {
			ff := f.Filter
			return filterOutcome{text: text, blocked: &ff}
		}
		if f.Kind == FilterCaps {
			lower = true
			continue
		}
		if masked == nil {
			masked = append([]rune(nil), nt.src...)
		}
		for _, s := range spans {
			for i := s.from; i < s.to; i++ {
				if !unicode.IsSpace(masked[i]) {
					masked[i] = '*'
				}
			}
		}
	}
	if masked != nil {
		text = string(masked)
	}
	if lower {
		text = strings.ToLower(text)
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
	switch f.Action {
	case ActionTimeout:
		f.TimeoutSeconds = in.TimeoutSeconds
		if f.TimeoutSeconds == 0 {
			f.TimeoutSeconds = DefaultFilterTimeoutSeconds
		}
		if f.TimeoutSeconds < 1 || f.TimeoutSeconds > MaxTimeoutSeconds {
			v.add("timeout_seconds", "must be 1..%d", MaxTimeoutSeconds)
		}
	case ActionBlock, ActionMask, ActionBan, ActionHold, ActionStrike:
		if in.TimeoutSeconds != 0 {
			v.add("timeout_seconds", "only for action timeout")
		}
	default:
		v.add("action", "must be block, mask, timeout, ban, hold or strike")
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
