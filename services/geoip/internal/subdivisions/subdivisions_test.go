package subdivisions

import "testing"

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
