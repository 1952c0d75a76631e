// Package subdivisions derives ISO 3166-2 subdivision codes from the names location
// databases give (DB-IP Lite and IP2Location files carry the region name only), using the
// ISO 3166-2 list Debian's iso-codes project maintains (data/iso_3166-2.json, embedded).
package subdivisions

import (
	_ "embed"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

//go:embed data/iso_3166-2.json
var isoJSON []byte

type entry struct {
	Code   string `json:"code"`
	Name   string `json:"name"`
	Type   string `json:"type"`
	Parent string `json:"parent"`
}

// index maps country code -> normalised name -> subdivision code without the country
// prefix ("CA" for US-CA, as ipapi.co's region_code has it).
type index map[string]map[string]string

var load = sync.OnceValue(func() index {
	var doc struct {
		Entries []entry `json:"3166-2"`
	}
	if err := json.Unmarshal(isoJSON, &doc); err != nil {
		panic("subdivisions: embedded iso_3166-2.json: " + err.Error()) // checked by tests
	}
	idx := index{}
	// First-level subdivisions (no parent) win over second-level ones of the same name:
	// databases name the first level.
	for pass := 0; pass < 2; pass++ {
		for _, e := range doc.Entries {
			if (e.Parent == "") != (pass == 0) {
				continue
			}
			cc, code, ok := strings.Cut(e.Code, "-")
			if !ok {
				continue
			}
			m := idx[cc]
			if m == nil {
				m = map[string]string{}
				idx[cc] = m
			}
			// Names such as "Bayern" or "Wien" may carry a language tag in brackets or list
			// forms separated by " / " or ",": index each.
			for _, name := range variants(e.Name) {
				for _, k := range keys(name) {
					if _, taken := m[k]; !taken {
						m[k] = code
					}
				}
			}
		}
	}
	return idx
})

// Warm parses the embedded list now rather than on the first lookup.
func Warm() { load() }

// variants splits a listed name into its forms: "Bruxelles-Capitale, Région de;Brussels
// Hoofdstedelijk Gewest" style entries, and bracketed alternatives.
func variants(name string) []string {
	out := []string{name}
	for _, sep := range []string{";", " / ", "/"} {
		if strings.Contains(name, sep) {
			out = append(out, strings.Split(name, sep)...)
		}
	}
	if i := strings.IndexByte(name, '('); i > 0 {
		out = append(out, strings.TrimSpace(name[:i]))
		if j := strings.IndexByte(name[i:], ')'); j > 1 {
			out = append(out, name[i+1:i+j])
		}
	}
	if a, b, ok := strings.Cut(name, ", "); ok { // "Bruxelles-Capitale, Région de" -> "Région de Bruxelles-Capitale"
		out = append(out, a, b+" "+a)
	}
	return out
}

// generic words that databases and the standard add or leave out at will ("Land Berlin"
// and "Berlin", "Tokyo" and "Tôkyô-to", "Moscow Oblast" and "Moskovskaya oblast'").
var generic = map[string]bool{
	"province": true, "provincia": true, "region": true, "state": true, "county": true, "oblast": true,
	"prefecture": true, "governorate": true, "district": true, "department": true, "departement": true,
	"municipality": true, "of": true, "the": true, "land": true, "autonomous": true, "republic": true,
	"territory": true, "voivodeship": true, "krai": true, "kray": true, "canton": true, "parish": true,
	"to": true, "fu": true, "ken": true, "do": true, "city": true, "capital": true, "de": true, "del": true,
	"la": true, "le": true, "und": true, "and": true, "sheng": true, "shi": true, "zizhiqu": true,
	"kraj": true, "stolitsa": true, "hlavni": true, "mesto": true, "wilayah": true, "persekutuan": true,
	"free": true, "hanseatic": true, "federal": true, "opstina": true, "islands": true,
}

var fold = sync.Pool{New: func() any {
	return transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
}}

// words lower-cases name, removes accents and splits it at anything not a letter or digit.
func words(name string) []string {
	t := fold.Get().(transform.Transformer)
	plain, _, err := transform.String(t, name)
	fold.Put(t)
	if err != nil {
		plain = name
	}
	plain = strings.ReplaceAll(plain, "ı", "i") // Turkish dotless i has no accent to strip
	return strings.FieldsFunc(strings.ToLower(plain), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// keys are the lookup forms of a name: all its words, and its words less the generic ones.
func keys(name string) []string {
	w := words(name)
	if len(w) == 0 {
		return nil
	}
	all := strings.Join(w, "")
	var kept []string
	for _, x := range w {
		if !generic[x] {
			kept = append(kept, x)
		}
	}
	if len(kept) == 0 || len(kept) == len(w) {
		return []string{all}
	}
	return []string{all, strings.Join(kept, "")}
}

// Code returns the ISO 3166-2 code of the subdivision called name in country (ISO 3166-1
// alpha-2), without the country prefix ("CA" for California, US), or "" when the list has
// no subdivision of that name.
func Code(country, name string) string {
	if country == "" || name == "" {
		return ""
	}
	return memo.code(memoKey{country, name})
}

// memo keeps derived codes: deriving allocates, and lookups ask for the same few thousand
// names again and again, on every request. Reads take no lock: a read-only map behind an
// atomic pointer answers the names seen before (a global RWMutex's shared counter cost
// 1.2 % of the server's CPU under load); a name not there yet is derived and added to a
// dirty copy under a mutex, and the copy replaces the read-only map once it has been
// missed as often as it holds names (sync.Map's old scheme), so copying stays linear in
// the number of names.
var memo = newMemoTable()

type memoKey struct{ country, name string }

const memoLimit = 1 << 16

type memoTable struct {
	read   atomic.Pointer[map[memoKey]string]
	mu     sync.Mutex
	dirty  map[memoKey]string // nil, or read's names and the ones added since
	misses int
}

func newMemoTable() *memoTable {
	t := &memoTable{}
	m := map[memoKey]string{}
	t.read.Store(&m)
	return t
}

func (t *memoTable) code(k memoKey) string {
	if c, ok := (*t.read.Load())[k]; ok {
		return c
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.dirty[k]; ok {
		t.missed()
		return c
	}
	c := derive(k.country, k.name)
	if t.dirty == nil {
		read := *t.read.Load()
		if len(read) >= memoLimit {
			read = nil // a database has a few thousand names; this bounds a hostile one
		}
		t.dirty = make(map[memoKey]string, len(read)+1)
		for rk, rc := range read {
			t.dirty[rk] = rc
		}
	}
	// The names may be a record's strings read in place from a database closed later
	// (lookup.InPlaceDB): the memo keeps copies.
	t.dirty[memoKey{strings.Clone(k.country), strings.Clone(k.name)}] = c
	t.missed()
	return c
}

// missed counts a read that the read-only map could not answer, and promotes the dirty
// map when the misses have cost as much as copying it. The caller holds mu.
func (t *memoTable) missed() {
	t.misses++
	if t.misses < len(t.dirty) {
		return
	}
	d := t.dirty
	t.read.Store(&d)
	t.dirty, t.misses = nil, 0
}

func derive(country, name string) string {
	m := load()[country]
	if m == nil {
		return ""
	}
	ks := keys(name)
	for _, k := range ks {
		if c, ok := m[k]; ok {
			return c
		}
	}
	// Romanisations differ in their endings ("Kherson" and "Khersonska oblast", "Zilina
	// Region" and "Zilinsky kraj"): a shared start of at least five letters counts when
	// exactly one subdivision of the country has it.
	k := ks[len(ks)-1]
	if len(k) < 5 {
		return ""
	}
	found := ""
	for name, code := range m {
		if len(name) >= 5 && (strings.HasPrefix(name, k[:5]) && commonPrefix(name, k) >= min(len(k), len(name), 6)) {
			if found != "" && found != code {
				return "" // ambiguous
			}
			found = code
		}
	}
	return found
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
