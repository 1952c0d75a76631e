package apikeys

import (
	"crypto/sha256"
	"testing"
)

// TestLookupWalksDigestsSharingTheirPrefix: digests are found by their first 8 bytes;
// one that shares them with another is still told apart by the whole digest, whichever
// of the two is met first.
func TestLookupWalksDigestsSharingTheirPrefix(t *testing.T) {
	const key = "k-real-0123456789abcdef"
	d := sha256.Sum256([]byte(key))
	decoy := d
	decoy[31] ^= 1 // the same first 8 bytes, another digest
	real := &entry{digest: d, key: Key{Name: "real", Max: 1}}
	for _, chain := range [][]*entry{
		{{digest: decoy, key: Key{Name: "decoy", Max: 2}}, real},
		{real, {digest: decoy, key: Key{Name: "decoy", Max: 2}}},
	} {
		chain[0].next, chain[1].next = chain[1], nil
		s := &Set{byDigest: map[uint64]*entry{digestPrefix(&d): chain[0]}, n: 2, seen: newSeenKeys()}
		if k, ok := s.Lookup(key); !ok || k.Name != "real" {
			t.Errorf("Lookup with %s first = %+v %v, want the real key", chain[0].key.Name, k, ok)
		}
		if _, ok := s.Lookup("k-other-0123456789abcdef"); ok {
			t.Error("an unknown key was found")
		}
	}
}
