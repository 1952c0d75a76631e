package chat

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"go.mau.fi/util/confusable"
	"golang.org/x/text/unicode/norm"
	"golang.org/x/text/unicode/rangetable"
	"golang.org/x/text/unicode/runenames"
	"golang.org/x/text/width"
)

// A message is folded once per send, and every filter reads the result
// (applyFilters). Three views share the original runes:
//
//   - folded: NFKD (full-width and other compatibility forms become plain
//     letters), marks and invisible characters removed, widths and case
//     folded, small capitals made lower case, and the IDN full stops
//     U+3002, U+FF0E and U+FF61 made ".". Regular expressions run on it.
//   - skeleton: the Unicode TR39 confusable skeleton of the folded view, so
//     Cyrillic or Greek look-alikes ("sсаm") read as Latin. Blocked terms
//     match on it, with the term put through the same steps.
//   - the link view: the folded view with bracketed dots ("[.]", "(dot)")
//     made ".", read by the links filter.
//
// Each folded rune records the original rune it came from, so a masking
// filter masks what the sender wrote.

// view is one folding of the original runes.
type view struct {
	runes []rune
	orig  []int // orig[i] is the index in src that produced runes[i]
}

func (v *view) add(r rune, from int) {
	v.runes = append(v.runes, r)
	v.orig = append(v.orig, from)
}

// normText is a message folded for matching; the skeleton, the words, the
// string form of the folded view and the link view are built on first use,
// once per message.
type normText struct {
	src  []rune // the original text
	fold view

	skel      *view
	words     []span         // words of the skeleton
	wordStr   []string       // the same words as strings
	wordFirst map[string]int // see wordAt
	wordNext  []int
	str       string // string(fold.runes)
	strIdx    []int  // byte offset in str -> index in fold.runes
	strReady  bool
	link      *view
}

// ignorable reports runes that are dropped before matching because they
// show nothing, or nothing of their own, yet can split a word: controls,
// format characters (zero-width space and joiners, soft hyphen, BOM,
// bidirectional controls), default-ignorable code points (U+3164 and
// U+FFA0 Hangul fillers, variation selectors, U+034F), combining marks once
// NFKD has split them off, and U+2800, the braille blank, which is a
// symbol to Unicode but renders as nothing. Whitespace is kept: it
// separates words.
func ignorable(r rune) bool {
	if r < 0x80 {
		return r < 0x20 && r != '\n' && r != '\t' && r != '\r' || r == 0x7f
	}
	if unicode.IsSpace(r) {
		return false
	}
	return r == 0x2800 || unicode.Is(ignorableTable, r)
}

// ignorableTable merges the tables ignorable checks, so a rune costs one
// lookup instead of six.
var ignorableTable = rangetable.Merge(unicode.Cc, unicode.Cf, unicode.Mn, unicode.Me,
	unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)

// visible reports whether s has at least one character a reader would see.
func visible(s string) bool {
	for _, r := range s {
		if !ignorable(r) && !unicode.IsSpace(r) {
			return true
		}
	}
	return false
}

var (
	smallCapsOnce sync.Once
	smallCaps     map[rune]rune
)

// smallCapital maps the Latin small capitals ("ᴀ", "ꜱ"), which neither NFKD
// nor case folding nor the confusables table relate to their letters, to
// the lower-case letter. The map is built from Unicode's character names
// ("LATIN LETTER SMALL CAPITAL A"), not written by hand, over the blocks
// that hold small capitals.
func smallCapital(r rune) (rune, bool) {
	smallCapsOnce.Do(func() {
		smallCaps = map[rune]rune{}
		for _, block := range [][2]rune{{0x0250, 0x02AF}, {0x1D00, 0x1DBF}, {0xA720, 0xA7FF}, {0xAB30, 0xAB6F}, {0x10780, 0x107BF}} {
			for c := block[0]; c <= block[1]; c++ {
				name := runenames.Name(c)
				for _, prefix := range []string{"LATIN LETTER SMALL CAPITAL ", "LATIN SMALL CAPITAL LETTER "} {
					if l, ok := strings.CutPrefix(name, prefix); ok && len(l) == 1 && l[0] >= 'A' && l[0] <= 'Z' {
						smallCaps[c] = rune(l[0]) + 'a' - 'A'
					}
				}
			}
		}
	})
	l, ok := smallCaps[r]
	return l, ok
}

// foldRune appends the folded form of r (from src index i) to v.
func foldRune(v *view, r rune, i int) {
	if r < 0x80 { // ASCII needs only lower-casing; keep the hot path cheap
		switch {
		case 'A' <= r && r <= 'Z':
			r += 'a' - 'A'
		case r == '\t' || r == '\n' || r == '\r':
			r = ' '
		case ignorable(r):
			return
		}
		v.add(r, i)
		return
	}
	if ignorable(r) {
		return
	}
	var buf [utf8.UTFMax]byte
	n := utf8.EncodeRune(buf[:], r)
	// The NFKD table holds each rune's full decomposition; reading it
	// allocates nothing, unlike transforming a one-rune string.
	dec := norm.NFKD.Properties(buf[:n]).Decomposition()
	if dec == nil {
		dec = buf[:n]
	}
	for _, d := range string(dec) {
		if ignorable(d) {
			continue
		}
		if w := width.LookupRune(d).Folded(); w != 0 {
			d = w
		}
		switch {
		case d == 'ß' || d == 'ẞ': // full case folding, as cases.Fold does
			v.add('s', i)
			v.add('s', i)
			continue
		case d == 'ς':
			d = 'σ'
		case d == 0x3002: // IDEOGRAPHIC FULL STOP (and U+FF61 after NFKD), a dot to IDNA
			d = '.'
		case unicode.IsSpace(d):
			d = ' '
		}
		if l, ok := smallCapital(d); ok {
			d = l
		}
		v.add(unicode.ToLower(d), i)
	}
}

// normalize folds s once; the other views follow on demand.
func normalize(s string) normText {
	src := []rune(s)
	nt := normText{src: src, fold: view{runes: make([]rune, 0, len(src)), orig: make([]int, 0, len(src))}}
	for i, r := range src {
		foldRune(&nt.fold, r, i)
	}
	return nt
}

// Normalize exposes the folding used by filters, for documentation and tests.
func Normalize(s string) string { return string(normalize(s).fold.runes) }

// asciiSkeleton caches the skeleton of each ASCII rune ("m" is "rn", "0"
// is "o", "1" is "l"), the common case.
var asciiSkeleton = func() (t [0x80]string) {
	for r := rune(0); r < 0x80; r++ {
		t[r] = string(r)
		if rep := confusable.GetReplacement(r); rep != "" {
			t[r] = strings.ToLower(rep)
		}
	}
	return t
}()

// skeleton maps each folded rune to its TR39 prototype (the confusables
// table of go.mau.fi/util/confusable, generated from Unicode's
// confusables.txt), then decomposes, drops marks and lowers the result so
// that the term and the message meet in one form.
func (nt *normText) skeleton() *view {
	if nt.skel != nil {
		return nt.skel
	}
	v := &view{runes: make([]rune, 0, len(nt.fold.runes)), orig: make([]int, 0, len(nt.fold.runes))}
	for i, r := range nt.fold.runes {
		o := nt.fold.orig[i]
		if r < 0x80 {
			for _, x := range asciiSkeleton[r] {
				v.add(x, o)
			}
			continue
		}
		rep := confusable.GetReplacement(r)
		if rep == "" {
			v.add(r, o)
			continue
		}
		if isASCII(rep) { // most prototypes: Cyrillic а is a
			for i := 0; i < len(rep); i++ {
				v.add(rune(asciiLower(rep[i])), o)
			}
			continue
		}
		for _, x := range norm.NFD.String(rep) {
			if !ignorable(x) {
				v.add(unicode.ToLower(x), o)
			}
		}
	}
	nt.skel = v
	return v
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func asciiLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// foldString returns the folded view as a string and a map from its byte
// offsets to folded runes, for regular expressions.
func (nt *normText) foldString() (string, []int) {
	if nt.strReady {
		return nt.str, nt.strIdx
	}
	s := string(nt.fold.runes)
	idx := make([]int, len(s)+1)
	ri := 0
	// Matches of a valid UTF-8 text start and end on rune boundaries, so
	// only those offsets need an entry.
	for bi := range s {
		idx[bi] = ri
		ri++
	}
	idx[len(s)] = ri
	nt.str, nt.strIdx, nt.strReady = s, idx, true
	return s, idx
}

// bracketDots are ways of writing a dot that people read as one.
var bracketDots = []string{"[.]", "(.)", "{.}", "[dot]", "(dot)", "{dot}"}

// linkView returns the folded view with bracketed dots made ".".
func (nt *normText) linkView() *view {
	if nt.link != nil {
		return nt.link
	}
	f := &nt.fold
	v := &view{runes: make([]rune, 0, len(f.runes)), orig: make([]int, 0, len(f.runes))}
next:
	for i := 0; i < len(f.runes); i++ {
		if r := f.runes[i]; r == '[' || r == '(' || r == '{' {
			for _, b := range bracketDots {
				if hasRunes(f.runes[i:], b) {
					v.add('.', f.orig[i])
					i += len(b) - 1
					continue next
				}
			}
		}
		v.add(f.runes[i], f.orig[i])
	}
	nt.link = v
	return v
}

func hasRunes(rs []rune, ascii string) bool {
	if len(rs) < len(ascii) {
		return false
	}
	for j := 0; j < len(ascii); j++ {
		if rs[j] != rune(ascii[j]) {
			return false
		}
	}
	return true
}

// span is a half-open range of original runes.
type span struct{ from, to int }

// srcSpan maps runes [from, to) of v back to original runes, taking along
// the ignorable runes that followed the last one (an accent, a zero-width
// space) so a mask leaves nothing of the word behind.
func (nt *normText) srcSpan(v *view, from, to int) span {
	s := span{from: v.orig[from], to: v.orig[to-1] + 1}
	next := len(nt.src)
	if to < len(v.orig) {
		next = v.orig[to]
	}
	for s.to < next && ignorable(nt.src[s.to]) {
		s.to++
	}
	return s
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// skeletonWords splits the skeleton into runs of letters and digits; the
// words as strings are substrings of one string, made once.
func (nt *normText) skeletonWords() []span {
	if nt.words != nil {
		return nt.words
	}
	rs := nt.skeleton().runes
	var b strings.Builder
	b.Grow(len(rs))
	for _, r := range rs {
		b.WriteRune(r)
	}
	str := b.String()
	ws, strs := make([]span, 0, 32), make([]string, 0, 32)
	start, startByte, off := -1, 0, 0
	for i, r := range rs {
		if isWordRune(r) {
			if start < 0 {
				start, startByte = i, off
			}
		} else if start >= 0 {
			ws, strs = append(ws, span{start, i}), append(strs, str[startByte:off])
			start = -1
		}
		off += utf8.RuneLen(r)
	}
	if start >= 0 {
		ws, strs = append(ws, span{start, len(rs)}), append(strs, str[startByte:])
	}
	nt.words, nt.wordStr = ws, strs
	return ws
}

// wordAt returns where a skeleton word occurs, -1 for nowhere:
// wordAt(w, 0) is its first position, and wordAt(w, i+1), for a position i
// of w, the next one. The index (each word's first position, and for each
// position the next holding the same word) is built once per message, so an
// exact term costs one lookup however long the message is.
func (nt *normText) wordAt(w string, from int) int {
	if nt.wordFirst == nil {
		nt.skeletonWords()
		nt.wordFirst = make(map[string]int, len(nt.wordStr))
		nt.wordNext = make([]int, len(nt.wordStr))
		for i := len(nt.wordStr) - 1; i >= 0; i-- {
			nt.wordNext[i] = -1
			if j, ok := nt.wordFirst[nt.wordStr[i]]; ok {
				nt.wordNext[i] = j
			}
			nt.wordFirst[nt.wordStr[i]] = i
		}
	}
	if from == 0 {
		if i, ok := nt.wordFirst[w]; ok {
			return i
		}
		return -1
	}
	return nt.wordNext[from-1]
}
