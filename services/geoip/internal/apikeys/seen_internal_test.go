package apikeys

import (
	"fmt"
	"testing"
)

func (s *Set) seenCount() int {
	n := 0
	for i := range s.seen.slots {
		if s.seen.slots[i].Load() != nil {
			n++
		}
	}
	return n
}

// TestSeenKeysHoldFoundKeysOnly: a found key is remembered and found again the same; an
// unknown key, however often presented, is not remembered and stays unknown; a remembered
// key is found only by its own text, also when other keys share its slot.
func TestSeenKeysHoldFoundKeysOnly(t *testing.T) {
	var file string
	for i := range 3000 {
		if i > 0 {
			file += ","
		}
		file += fmt.Sprintf(`{"key": "k-%04d-0123456789abcdef", "name": "n%d", "limit": %d, "window": "1m"}`, i, i, i+1)
	}
	s, err := Parse([]byte(`{"keys": [` + file + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		for _, bad := range []string{"k-9999-0123456789abcdef", "k-0001-0123456789abcdeF", ""} {
			if _, ok := s.Lookup(bad); ok {
				t.Fatalf("Lookup(%q) found a key", bad)
			}
		}
	}
	if n := s.seenCount(); n != 0 {
		t.Fatalf("%d slots filled by unknown keys", n)
	}
	// 3,000 keys in 1,024 slots: slots are shared, every key still finds its own entry,
	// first from its digest and then from its slot when it was the last one there.
	for round := range 2 {
		for i := range 3000 {
			k, ok := s.Lookup(fmt.Sprintf("k-%04d-0123456789abcdef", i))
			if !ok || k.Name != fmt.Sprintf("n%d", i) || k.Max != i+1 {
				t.Fatalf("round %d: key %d = %+v %v", round, i, k, ok)
			}
			again, ok := s.Lookup(fmt.Sprintf("k-%04d-0123456789abcdef", i))
			if !ok || again != k {
				t.Fatalf("round %d: key %d found again = %+v %v", round, i, again, ok)
			}
		}
	}
	if n := s.seenCount(); n == 0 || n > seenSlots {
		t.Fatalf("%d slots filled", n)
	}
	// A text one byte off a remembered key is not found through its slot.
	s.Lookup("k-0005-0123456789abcdef")
	if _, ok := s.Lookup("k-0005-0123456789abcdeg"); ok {
		t.Fatal("a text one byte off a remembered key was found")
	}
}

// BenchmarkLookup: a key found by its digest (the first time it is presented) against
// one found by its seeded hashes (every time after).
func BenchmarkLookup(b *testing.B) {
	const key = "k-test-0123456789abcdef"
	s, err := Parse([]byte(`{"keys": [{"key": "` + key + `", "name": "bench", "limit": 10, "window": "1m"}]}`))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("by=digest", func(b *testing.B) {
		for b.Loop() {
			if s.byDigestOf(key) == nil {
				b.Fatal("not found")
			}
		}
	})
	b.Run("by=seen", func(b *testing.B) {
		for b.Loop() {
			if _, ok := s.Lookup(key); !ok {
				b.Fatal("not found")
			}
		}
	})
}
