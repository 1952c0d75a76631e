package netguard

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
)

// ErrorKind names a network error by kind (refused, reset, timeout...), so that
// reports group errors under a few stable labels instead of raw messages.
func ErrorKind(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EPIPE):
		return "broken pipe"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "no free local port"
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return "too many open files"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	default:
		return "other"
	}
}
