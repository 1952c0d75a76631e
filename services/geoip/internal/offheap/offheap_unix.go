//go:build unix

// Package offheap reads database files into memory the Go heap does not own, shared by the
// BIN and MMDB readers.
package offheap

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// Read reads a file into anonymous memory mapped outside the Go heap and made read-only.
// A 300 MB database on the heap would make it the heap: the collector lets a heap grow to
// twice its live size before it runs (so the process would grow by the file's size again
// under load), and every short-lived buffer of a lookup would land in memory not touched
// since the last cycle. Off the heap, the heap stays small and hot. The memory is private,
// so replacing or truncating the file later cannot fault a lookup, as mapping the file
// itself could. release unmaps it; nothing may read data after, so every reader guards its
// lookups against Close.
func Read(path string) (data []byte, release func() error, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := st.Size()
	if size <= 0 || int64(int(size)) != size {
		return nil, nil, fmt.Errorf("%s: size %d cannot be loaded", path, size)
	}
	data, release, err = Alloc(int(size))
	if err != nil {
		return nil, nil, err
	}
	if _, err := io.ReadFull(f, data); err != nil {
		_ = release()
		return nil, nil, err
	}
	if err := syscall.Mprotect(data, syscall.PROT_READ); err != nil {
		_ = release()
		return nil, nil, fmt.Errorf("protect: %w", err)
	}
	return data, release, nil
}

// Alloc returns size bytes of zeroed anonymous memory outside the Go heap, on huge pages
// where the kernel gives them (see adviseHugePages), for a large table read at random:
// with 4 KiB pages nearly every read of a 40 MB table misses the TLB. The collector does
// not scan it, so it must hold no Go pointers; release unmaps it, after which nothing may
// touch it.
func Alloc(size int) (data []byte, release func() error, err error) {
	data, err = syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, nil, fmt.Errorf("map %d bytes: %w", size, err)
	}
	adviseHugePages(data)
	return data, func() error { return syscall.Munmap(data) }, nil
}
