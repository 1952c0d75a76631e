package chat

import (
	"strings"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
	"golang.org/x/text/width"
)

// normText is a message folded for matching, with a map back to the
// original runes so that a masking filter masks what the sender wrote.
type normText struct {
	src   []rune // the original text
	runes []rune // the folded text
	orig  []int  // orig[i] is the index in src that produced runes[i]
}

// invisible are runes dropped before matching: combining marks (accents
// once NFKD has split them off) and format characters (zero-width space,
// joiners, soft hyphen, BOM), which senders insert to break up a word.
var invisible = runes.Predicate(isInvisible)

func isInvisible(r rune) bool { return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf) }

// normalize folds s so that letter case, full-width or other compatibility
// forms, accents and zero-width characters cannot hide a term: NFKD
// decomposes (and maps full-width and compatibility letters to their plain
// forms), marks and format characters are removed, widths are folded and
// case is folded. Each original rune is folded on its own so the result
// maps back to it.
func normalize(s string) normText {
	src := []rune(s)
	nt := normText{src: src, runes: make([]rune, 0, len(src)), orig: make([]int, 0, len(src))}
	var chain transform.Transformer
	for i, r := range src {
		if r < 0x80 { // ASCII needs only lower-casing; keep the hot path cheap
			if 'A' <= r && r <= 'Z' {
				r += 'a' - 'A'
			}
			nt.runes = append(nt.runes, r)
			nt.orig = append(nt.orig, i)
			continue
		}
		if chain == nil {
			chain = transform.Chain(norm.NFKD, runes.Remove(invisible), width.Fold, cases.Fold())
		}
		out, _, err := transform.String(chain, string(r))
		if err != nil {
			out = strings.ToLower(string(r))
		}
		for _, o := range out {
			nt.runes = append(nt.runes, o)
			nt.orig = append(nt.orig, i)
		}
	}
	return nt
}

// Normalize exposes the folding used by filters, for documentation and tests.
func Normalize(s string) string { return string(normalize(s).runes) }

// span is a half-open range of original runes.
type span struct{ from, to int }

// srcSpan maps folded runes [from, to) back to original runes, taking along
// the invisible runes that followed the last one (an accent, a zero-width
// space) so a mask leaves nothing of the word behind.
func (nt *normText) srcSpan(from, to int) span {
	s := span{from: nt.orig[from], to: nt.orig[to-1] + 1}
	next := len(nt.src)
	if to < len(nt.orig) {
		next = nt.orig[to]
	}
	for s.to < next && isInvisible(nt.src[s.to]) {
		s.to++
	}
	return s
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// words splits folded runes into runs of letters and digits.
func (nt *normText) words() []span {
	var ws []span
	start := -1
	for i, r := range nt.runes {
		if isWordRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			ws = append(ws, span{start, i})
			start = -1
		}
	}
	if start >= 0 {
		ws = append(ws, span{start, len(nt.runes)})
	}
	return ws
}
