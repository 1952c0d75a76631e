// Package apikeys holds geoip's API keys (GEOIP_KEYS_FILE): a file checked whole, each key
// kept only as its SHA-256 digest beside its name and rate limit (and, once presented, two
// seeded hashes of it), and found by a key.
package apikeys

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"regexp"
	"sync/atomic"
	"time"
)

// Bounds of a keys file; a file past any of them is refused whole.
const (
	MaxFileSize   = 1 << 20 // bytes
	MaxKeys       = 10_000
	MinKeyLength  = 16 // a guessable key would be anybody's
	MaxKeyLength  = 256
	MaxNameLength = 64
	MaxLimit      = 100_000_000 // requests per window
	MinWindow     = time.Second
	MaxWindow     = 24 * time.Hour
)

// Key is one key's public side: the name its usage is counted under and its limit. The
// secret itself is not kept.
type Key struct {
	Name   string
	Max    int           // requests per Window, with a burst of Max
	Window time.Duration // GCRA's: Max requests at once, then one every Window/Max
}

// Set is a parsed keys file: its keys never change once made, only which of them it
// remembers as seen (seenKeys).
type Set struct {
	// byDigest finds a digest by its first 8 bytes: a map of 8-byte keys hashes and
	// compares faster than one of 32, on every keyed request. Entries whose digests share
	// them (never seen, but possible) are chained; the whole digest is compared.
	byDigest map[uint64]*entry
	byName   map[string]*Key
	n        int
	seen     *seenKeys
}

// seenKeys remembers keys that were presented and found, so that a key presented again
// (a customer's every request) costs two seeded 64-bit hashes instead of SHA-256, about a
// ninth of the time (BenchmarkLookup). It holds no key text: a slot is the two hashes of
// a found key and its entry. A presented text matches a slot only if both hashes match:
// with seeds drawn at random per Set, 128 bits no caller can aim at, so a text that is not
// the key cannot pass as it, and a miss costs what a lookup cost before. Unknown keys are
// never remembered, so guessing fills nothing. Slots are overwritten by the last key
// hashed to them; a Set is replaced whole when the file changes, its slots with it.
type seenKeys struct {
	seedA, seedB maphash.Seed
	slots        [seenSlots]atomic.Pointer[seenKey]
}

func newSeenKeys() *seenKeys { return &seenKeys{seedA: maphash.MakeSeed(), seedB: maphash.MakeSeed()} }

const seenSlots = 1024 // 8 KiB of pointers: more keys than most files hold, each in its slot

type seenKey struct {
	a, b uint64
	e    *entry
}

type entry struct {
	digest [sha256.Size]byte
	key    Key
	next   *entry // another digest with the same first 8 bytes
}

func digestPrefix(d *[sha256.Size]byte) uint64 { return binary.LittleEndian.Uint64(d[:8]) }

// fileKey is one entry of the file, as written.
type fileKey struct {
	Key    string `json:"key"`
	Name   string `json:"name"`
	Limit  int    `json:"limit"`
	Window string `json:"window"`
}

var (
	keyChars  = regexp.MustCompile(`^[\x21-\x7e]+$`) // printable ASCII, no space
	nameChars = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]*$`)
)

// Parse checks a keys file, {"keys": [{"key", "name", "limit", "window"}]}, whole: every
// entry and the file's bounds. Errors name the entry by its position and name, never by
// its key.
func Parse(data []byte) (*Set, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("keys file: %d bytes, more than the %d allowed", len(data), MaxFileSize)
	}
	var file struct {
		Keys *[]fileKey `json:"keys"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("keys file: not {\"keys\": [...]}: %s", jsonError(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("keys file: data after the JSON object")
	}
	if file.Keys == nil {
		return nil, errors.New(`keys file: "keys" is missing`)
	}
	keys := *file.Keys
	if len(keys) > MaxKeys {
		return nil, fmt.Errorf("keys file: %d keys, more than the %d allowed", len(keys), MaxKeys)
	}
	s := &Set{byDigest: make(map[uint64]*entry, len(keys)), byName: make(map[string]*Key, len(keys)), n: len(keys),
		seen: newSeenKeys()}
	for i, k := range keys {
		e, err := check(k)
		if err != nil {
			return nil, fmt.Errorf("keys file: entry %d (%q): %w", i+1, k.Name, err)
		}
		if _, dup := s.byName[e.key.Name]; dup {
			return nil, fmt.Errorf("keys file: entry %d: name %q is used twice (usage is counted by name)", i+1, e.key.Name)
		}
		p := digestPrefix(&e.digest)
		for o := s.byDigest[p]; o != nil; o = o.next {
			if o.digest == e.digest {
				return nil, fmt.Errorf("keys file: entry %d (%q): the same key is listed twice", i+1, e.key.Name)
			}
		}
		e.next = s.byDigest[p]
		s.byDigest[p] = e
		s.byName[e.key.Name] = &e.key
	}
	return s, nil
}

func check(k fileKey) (*entry, error) {
	switch {
	case len(k.Name) == 0 || len(k.Name) > MaxNameLength || !nameChars.MatchString(k.Name):
		return nil, fmt.Errorf("name: want 1-%d letters, digits, '.', '_', '@' or '-'", MaxNameLength)
	case len(k.Key) < MinKeyLength || len(k.Key) > MaxKeyLength:
		return nil, fmt.Errorf("key: %d characters, want %d-%d", len(k.Key), MinKeyLength, MaxKeyLength)
	case !keyChars.MatchString(k.Key):
		return nil, errors.New("key: printable ASCII without spaces only")
	case k.Limit < 1 || k.Limit > MaxLimit:
		return nil, fmt.Errorf("limit: %d, want 1-%d", k.Limit, MaxLimit)
	}
	w, err := time.ParseDuration(k.Window)
	if err != nil || w < MinWindow || w > MaxWindow {
		return nil, fmt.Errorf("window: %q, want a duration from %s to %s, like \"1m\"", k.Window, MinWindow, MaxWindow)
	}
	return &entry{digest: sha256.Sum256([]byte(k.Key)), key: Key{Name: k.Name, Max: k.Limit, Window: w}}, nil
}

func jsonError(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %s has the wrong type", te.Field)
	}
	// Unknown fields and the like: encoding/json's text names the field, not a value.
	return err.Error()
}

// Len is the number of keys.
func (s *Set) Len() int { return s.n }

// Lookup finds the key presented. The set holds digests only: the presented key is hashed
// and its digest found in a map, then compared in constant time. The map's timing can
// depend only on the digest, which an attacker cannot steer toward a real key's without
// knowing it, so it reveals nothing about the keys. A key found before is found by its
// seeded hashes first (see seenKeys).
func (s *Set) Lookup(presented string) (Key, bool) {
	if s == nil || len(presented) > MaxKeyLength {
		return Key{}, false
	}
	a, b := maphash.String(s.seen.seedA, presented), maphash.String(s.seen.seedB, presented)
	slot := &s.seen.slots[a%seenSlots]
	if k := slot.Load(); k != nil && k.a == a && k.b == b {
		return k.e.key, true
	}
	e := s.byDigestOf(presented)
	if e == nil {
		return Key{}, false
	}
	slot.Store(&seenKey{a: a, b: b, e: e})
	return e.key, true
}

// byDigestOf is the entry of the key presented, found by its SHA-256 digest; nil if none.
func (s *Set) byDigestOf(presented string) *entry {
	d := sha256.Sum256([]byte(presented))
	for e := s.byDigest[digestPrefix(&d)]; e != nil; e = e.next {
		if subtle.ConstantTimeCompare(d[:], e.digest[:]) == 1 {
			return e
		}
	}
	return nil
}

// ByName is the key named name (for its limit when answering usage).
func (s *Set) ByName(name string) (Key, bool) {
	if s == nil {
		return Key{}, false
	}
	k, ok := s.byName[name]
	if !ok {
		return Key{}, false
	}
	return *k, true
}
