//go:build !unix

package offheap

import "os"

// Read reads the file onto the heap where mapping memory is not available.
func Read(path string) ([]byte, func() error, error) {
	data, err := os.ReadFile(path)
	return data, func() error { return nil }, err
}
