package offheap

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestReadKeepsTheBytesOffTheHeap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	want := bytes.Repeat([]byte("geoip"), 8<<20/5) // 8 MB
	if err := os.WriteFile(path, want, 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	data, release, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if !bytes.Equal(data, want) {
		t.Fatal("content differs")
	}
	if runtime.GOOS != "windows" && after.HeapAlloc > before.HeapAlloc+1<<20 {
		t.Errorf("heap grew by %d bytes for an 8 MB file", after.HeapAlloc-before.HeapAlloc)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Read(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("read a missing file")
	}
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o644)
	if _, _, err := Read(empty); err == nil {
		t.Error("loaded an empty file")
	}
}
