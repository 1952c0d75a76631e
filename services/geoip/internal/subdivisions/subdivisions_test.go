package subdivisions

import (
	"sync"
	"testing"
	"unsafe"
)

func TestCode(t *testing.T) {
	for _, tt := range []struct{ country, name, want string }{
		{"US", "California", "CA"},
		{"US", "New York", "NY"},
		{"DE", "Land Berlin", "BE"},       // generic word left out
		{"DE", "Baden-Wurttemberg", "BW"}, // accents folded
		{"FR", "Île-de-France", "IDF"},    // a region, not the department of the same name
		{"TR", "Kirklareli", "39"},        // dotless i
		{"CN", "Jiangxi", "JX"},           // "Jiangxi Sheng" in the list
		{"UA", "Kherson", "65"},           // unique shared start
		{"JP", "Tokyo", "13"},             // "Tôkyô" in the list
		{"GB", "England", "ENG"},
		{"US", "Atlantis", ""},   // unknown name
		{"ZZ", "California", ""}, // unknown country
		{"US", "", ""},
	} {
		if got := Code(tt.country, tt.name); got != tt.want {
			t.Errorf("Code(%q, %q) = %q, want %q", tt.country, tt.name, got, tt.want)
		}
		if got := Code(tt.country, tt.name); got != tt.want { // from the memo
			t.Errorf("memoised Code(%q, %q) = %q, want %q", tt.country, tt.name, got, tt.want)
		}
	}
}

func BenchmarkCodeMemoised(b *testing.B) {
	Code("US", "California")
	b.ReportAllocs()
	for b.Loop() {
		if Code("US", "California") != "CA" {
			b.Fatal("wrong")
		}
	}
}

// TestCodeKeepsCopiesOfTheNames: callers pass strings read in place from a database that
// may be unmapped later; the memo must not keep them.
func TestCodeKeepsCopiesOfTheNames(t *testing.T) {
	buf := []byte("USBavaria-like Test Region Name")
	country := unsafe.String(&buf[0], 2)
	name := unsafe.String(&buf[2], len(buf)-2)
	first := Code(country, name)
	Code("US", "California") // more traffic through the memo
	for i := range buf {
		buf[i] = 'x'
	}
	if got := Code("US", "California"); got != "CA" {
		t.Fatalf("California: %q", got)
	}
	if got := Code("US", "Bavaria-like Test Region Name"); got != first {
		t.Errorf("memo changed with the caller's bytes: %q, was %q", got, first)
	}
	if got := Code("xx", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxx"); got != "" {
		t.Errorf("a name made of the overwritten bytes answers %q", got)
	}
}

// TestCodeConcurrently: readers without a lock while names are added and the read-only
// map is replaced (run with -race).
func TestCodeConcurrently(t *testing.T) {
	names := []struct{ country, name, code string }{
		{"US", "California", "CA"}, {"US", "Texas", "TX"}, {"DE", "Bayern", "BY"}, {"FR", "Bretagne", "BRE"},
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				n := names[(i+g)%len(names)]
				if got := Code(n.country, n.name); got != n.code {
					t.Errorf("%s/%s: %q, want %q", n.country, n.name, got, n.code)
					return
				}
				Code("US", string(rune('a'+i%26))+"nowhere") // new names keep arriving
			}
		}()
	}
	wg.Wait()
}
