//go:build !linux

package readwait

import "syscall"

func newImpl() (impl, error) { return nil, ErrUnsupported }

// Pending is not known here: nothing is parked either.
func Pending(syscall.RawConn) (int, error) { return 0, ErrUnsupported }
