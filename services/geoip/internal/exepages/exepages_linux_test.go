package exepages

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestRelease checks that the executable's pages leave the process's
// resident memory: the file-backed part (RssFile, the test binary's pages here, as the
// server's in serve) shrinks.
func TestRelease(t *testing.T) {
	before := rssFile(t)
	Release()
	after := rssFile(t)
	t.Logf("RssFile %d kB before, %d kB after", before, after)
	if after >= before/2 {
		t.Errorf("RssFile %d kB after releasing the executable's pages, %d kB before: want under half", after, before)
	}
}

func rssFile(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skip("no RssFile in /proc/self/status")
	return 0
}
