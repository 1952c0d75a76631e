// Package exepages drops the executable's pages from the process's resident memory once
// start-up is over (Release).
package exepages

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// madvPageout is MADV_PAGEOUT (Linux 5.4): reclaim the pages now. It is a hint that keeps
// every page's content: a clean page of the executable is read again from the page cache
// on its next use, a written one (the data section's variables) stays or goes to swap.
const madvPageout = 21

// Release drops the executable's pages from the process's resident memory.
// Start-up reads much of the 80 MB binary once: the time zone polygons embedded in it
// (6.7 MB, read to name an MMDB's zones), init code, the tables of every package. Under
// random load 35 MiB of it stayed resident, 16 MiB after this call (what serving uses,
// faulted back in on first use): part of the resident-memory budget of issue 30. A
// kernel without MADV_PAGEOUT (before 5.4) refuses the call, and nothing changes.
func Release() {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// address perms offset dev inode path
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[5] != exe {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), uintptr(end-start), madvPageout)
	}
}
