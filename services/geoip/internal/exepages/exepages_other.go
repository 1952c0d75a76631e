//go:build !linux

package exepages

// Release does nothing where MADV_PAGEOUT does not exist.
func Release() {}
