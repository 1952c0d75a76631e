package readwait

import (
	"errors"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// epoll is one epoll instance and a pipe whose read end wakes its loop to close.
type epoll struct {
	fd       int
	wakeR    int
	wakeW    int
	stopped  chan struct{}
	stopOnce sync.Once
}

// wakeKey marks the pipe's event; connection keys are never 0 (see arm's callers:
// they count from 1).
const wakeKey = 0

func newImpl() (impl, error) {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		syscall.Close(fd)
		return nil, os.NewSyscallError("pipe2", err)
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN}
	setKey(&ev, wakeKey)
	if err := syscall.EpollCtl(fd, syscall.EPOLL_CTL_ADD, p[0], &ev); err != nil {
		syscall.Close(fd)
		syscall.Close(p[0])
		syscall.Close(p[1])
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	return &epoll{fd: fd, wakeR: p[0], wakeW: p[1], stopped: make(chan struct{})}, nil
}

// The event's 8 bytes of user data hold the key (syscall names them Fd and Pad).
func setKey(ev *syscall.EpollEvent, key uint64) {
	ev.Fd = int32(uint32(key))
	ev.Pad = int32(uint32(key >> 32))
}

func keyOf(ev *syscall.EpollEvent) uint64 {
	return uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
}

// arm watches the socket once: readable, peer hung up, or an error. It runs inside
// RawConn.Control, which holds the descriptor open, so a socket closed meanwhile is
// an error here and never a reused descriptor number watched under a stale key.
func (e *epoll) arm(rc syscall.RawConn, key uint64) error {
	var err error
	cerr := rc.Control(func(fd uintptr) {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT}
		setKey(&ev, key)
		// A socket is added on its first wait and re-armed (one-shot) after.
		err = syscall.EpollCtl(e.fd, syscall.EPOLL_CTL_MOD, int(fd), &ev)
		if errors.Is(err, syscall.ENOENT) {
			err = syscall.EpollCtl(e.fd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
		}
	})
	if cerr != nil {
		return cerr
	}
	if err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}

func (e *epoll) run(deliver func(uint64)) {
	defer close(e.stopped)
	var events [128]syscall.EpollEvent
	for {
		n, err := syscall.EpollWait(e.fd, events[:], -1)
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			return
		}
		for i := range n {
			key := keyOf(&events[i])
			if key == wakeKey {
				return
			}
			deliver(key)
		}
	}
}

func (e *epoll) close() error {
	var err error
	e.stopOnce.Do(func() {
		_, _ = syscall.Write(e.wakeW, []byte{1})
		<-e.stopped
		err = errors.Join(syscall.Close(e.fd), syscall.Close(e.wakeR), syscall.Close(e.wakeW))
	})
	return err
}

// Pending reports how many bytes the socket's receive buffer holds (FIONREAD):
// a connection that just handled a message reads on when its peer has sent
// more, rather than parking and being woken at once.
func Pending(rc syscall.RawConn) (int, error) {
	var n int32
	var errno syscall.Errno
	err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
	})
	if err != nil {
		return 0, err
	}
	if errno != 0 {
		return 0, os.NewSyscallError("ioctl", errno)
	}
	return int(n), nil
}
