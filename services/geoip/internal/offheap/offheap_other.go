//go:build !unix

package offheap

import "os"

// Read reads the file onto the heap where mapping memory is not available.
func Read(path string) ([]byte, func() error, error) {
	data, err := os.ReadFile(path)
	return data, func() error { return nil }, err
}

// Alloc returns size zeroed bytes on the heap where mapping memory is not available.
func Alloc(size int) ([]byte, func() error, error) {
	return make([]byte, size), func() error { return nil }, nil
}
