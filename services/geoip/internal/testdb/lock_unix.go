//go:build unix

package testdb

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// lock serialises cache work across the test binaries go test runs in parallel.
func lock(tb testing.TB, dir string) func() {
	tb.Helper()
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		tb.Fatalf("cache lock: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		tb.Fatalf("cache lock: %v", err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
}
