// Package fdlimit raises the open-file limit so that one process can hold
// thousands of benchmark connections.
package fdlimit

import (
	"fmt"
	"syscall"
)

// Raise sets the soft RLIMIT_NOFILE to the hard limit and returns the new soft limit.
func Raise() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("read RLIMIT_NOFILE: %w", err)
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return 0, fmt.Errorf("raise RLIMIT_NOFILE to %d: %w", lim.Max, err)
		}
	}
	return lim.Cur, nil
}
