//go:build unix && !linux

package offheap

// adviseHugePages: huge-page advice is Linux's (see hugepages_linux.go).
func adviseHugePages([]byte) {}
