package chat

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// benchMessage is 500 characters of ordinary chat that no benchmark filter
// matches, so every filter runs to the end (a block would stop early).
var benchMessage = func() string {
	s := strings.Repeat("Hello there, this is a normal chat line with some words and 42 numbers; ", 8)
	return s[:MaxMessageRunes]
}()

// benchUnicode is 500 characters of accented, full-width and Cyrillic
// text, the slow path of the folding.
var benchUnicode = func() string {
	s := strings.Repeat("Ｈéllo thère, ça va? Привет всем, как дела сегодня ", 12)
	return string([]rune(s)[:MaxMessageRunes])
}()

// regexes builds n expressions that each hold a literal (the issue's
// scenario: 300 regex filters, more than CHAT_MAX_REGEX_FILTERS allows).
func regexes(b *testing.B, n int) []*compiledFilter {
	var fs []*compiledFilter
	for i := 0; i < n; i++ {
		fs = append(fs, mustFilter(b, Filter{Kind: FilterRegex, Pattern: fmt.Sprintf(`(?:buy|sell)\s+follower%d|sc[a@]m%d`, i, i)}))
	}
	return fs
}

// mixedFilters builds n filters the way a deployment at its default limits
// could hold them: DefaultMaxRegexFilters regular expressions, a links and
// a caps filter, and blocked terms for the rest.
func mixedFilters(b *testing.B, n int) []*compiledFilter {
	fs := []*compiledFilter{
		mustFilter(b, Filter{Kind: FilterLinks}),
		mustFilter(b, Filter{Kind: FilterCaps, Threshold: 70, MinLength: 10}),
	}
	for i := 0; i < DefaultMaxRegexFilters; i++ {
		fs = append(fs, mustFilter(b, Filter{Kind: FilterRegex, Pattern: fmt.Sprintf(`(?:buy|sell)\s+follower%d|sc[a@]m%d`, i, i)}))
	}
	for i := 0; len(fs) < n; i++ {
		p := fmt.Sprintf("badword%d", i)
		if i%3 == 0 {
			p += "*"
		}
		fs = append(fs, mustFilter(b, Filter{Kind: FilterBlockedTerm, Pattern: p}))
	}
	return fs
}

// literalFree builds n expressions with no literal to prefilter on: the
// most a regular-expression filter can cost per send.
func literalFree(b *testing.B, n int) []*compiledFilter {
	var fs []*compiledFilter
	for i := 0; i < n; i++ {
		fs = append(fs, mustFilter(b, Filter{Kind: FilterRegex, Pattern: fmt.Sprintf(`[a-z]{2}\d{%d}[a-y]`, i+3)}))
	}
	return fs
}

// BenchmarkApplyFilters measures what filters add to a 500-character
// send: compare "none" (the fold is skipped when no filter applies) with
// the others, for an ASCII and a Unicode message. docs/benchmarks.md
// records the figures.
func BenchmarkApplyFilters(b *testing.B) {
	cases := []struct {
		name    string
		filters func(*testing.B) []*compiledFilter
	}{
		{"none", func(*testing.B) []*compiledFilter { return nil }},
		{"terms=1", func(b *testing.B) []*compiledFilter {
			return []*compiledFilter{mustFilter(b, Filter{Kind: FilterBlockedTerm, Pattern: "scam"})}
		}},
		{"mixed=300", func(b *testing.B) []*compiledFilter { return mixedFilters(b, 300) }},
		{"regex=300", func(b *testing.B) []*compiledFilter { return regexes(b, 300) }},
		{"literal-free-regex=10", func(b *testing.B) []*compiledFilter { return literalFree(b, DefaultMaxRegexFilters) }},
	}
	for _, msg := range []struct{ name, text string }{{"ascii", benchMessage}, {"unicode", benchUnicode}} {
		for _, c := range cases {
			fs := c.filters(b)
			b.Run(msg.name+"/"+c.name, func(b *testing.B) {
				b.ReportAllocs()
				cpu0 := cpuTime()
				n := 0
				for b.Loop() {
					if out := applyFilters(msg.text, RoleViewer, fs); out.blocked != nil || out.text != msg.text {
						b.Fatalf("benchmark message was changed by %+v", out.blocked)
					}
					n++
				}
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(n), "cpu-ns/op")
			})
		}
	}
}

// cpuTime is the process's CPU time (user + system): on a shared machine
// it counts what the work costs, where ns/op also counts waiting for a core.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
