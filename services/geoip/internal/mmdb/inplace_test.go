package mmdb_test

import (
	"testing"

	"github.com/apistack/platform/services/geoip/internal/mmdb"
	"github.com/apistack/platform/services/geoip/internal/testdb"
)

// Every record of the full DB-IP files reads the same with the in-place decoder as
// with the library's reflection, and none needs the library: the answer path's records are
// those the library would give.
func TestInPlaceDecodingMatchesTheLibrary(t *testing.T) {
	if testing.Short() {
		t.Skip("full-data test skipped in -short mode")
	}
	for _, name := range []string{testdb.IPv4, testdb.IPv6} {
		t.Run(name, func(t *testing.T) { sameRecordsInPlace(t, name) })
	}
}

func sameRecordsInPlace(t *testing.T, name string) {
	db, err := mmdb.Load(testdb.MMDB(t, name))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	seen := make(map[uintptr]bool)
	fallbacks := 0
	for res := range db.Reader().Networks() {
		off := res.Offset()
		if seen[off] {
			continue
		}
		seen[off] = true
		var want mmdb.FlatRecord
		if err := res.Decode(&want); err != nil {
			t.Fatal(err)
		}
		got, ok := mmdb.DecodeFlatInPlace(db, uint(off))
		if !ok {
			if fallbacks++; fallbacks <= 5 {
				t.Errorf("%s (offset %d): not decoded in place", res.Prefix(), off)
			}
			continue
		}
		if got != want {
			t.Fatalf("%s (offset %d): in place %+v, library %+v", res.Prefix(), off, got, want)
		}
	}
	if fallbacks > 0 {
		t.Errorf("%d of %d records not decoded in place", fallbacks, len(seen))
	}
	t.Logf("%d records", len(seen))
}
