package offheap

import "syscall"

// adviseHugePages asks for transparent huge pages before the file is read in: a lookup's
// binary search touches pages far apart in a 300 MB file, and with 4 KiB pages nearly
// every probe misses the TLB; 2 MiB pages cut the page walks. Advice only: where huge
// pages are off (transparent_hugepage=never) it changes nothing, so its error is ignored.
func adviseHugePages(b []byte) { _ = syscall.Madvise(b, syscall.MADV_HUGEPAGE) }
