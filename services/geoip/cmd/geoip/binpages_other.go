//go:build !linux

package main

// releaseExecutablePages does nothing where MADV_PAGEOUT does not exist.
func releaseExecutablePages() {}
