//go:build !unix

package ip2bin

import "os"

// readOffHeap reads the file onto the heap where mapping memory is not available.
func readOffHeap(path string) ([]byte, func() error, error) {
	data, err := os.ReadFile(path)
	return data, func() error { return nil }, err
}
