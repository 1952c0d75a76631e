// Package redistest starts a real redis-server for integration tests: on a
// free loopback port, with no persistence, stopped when the test ends.
//
// When redis-server is not installed the test is skipped with a message,
// unless REQUIRE_REDIS=1 (set by CI), in which case it fails.
package redistest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver/proctest"
)

// Server is one redis-server process owned by a test.
type Server struct {
	tb   testing.TB
	bin  string
	port int
	dir  string
	args []string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Start launches redis-server on a free loopback port and registers its
// shutdown with tb.Cleanup. Extra arguments are passed to redis-server
// (for example "--appendonly", "yes").
func Start(tb testing.TB, extraArgs ...string) *Server {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("REQUIRE_REDIS") == "1" {
			tb.Fatalf("redis-server is not installed but REQUIRE_REDIS=1: %v", err)
		}
		tb.Skip("redis-server is not installed; skipping integration test (apt-get install redis-server, or set REQUIRE_REDIS=1 to fail instead)")
	}
	s := &Server{tb: tb, bin: bin, port: freePort(tb), dir: tb.TempDir(), args: extraArgs}
	s.start()
	tb.Cleanup(s.Stop)
	return s
}

// Addr is host:port of the server.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is a redis:// URL suitable for REDIS_URL.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// running reports whether the server was started and not stopped.
func (s *Server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// Stop kills the server; calling it again is harmless.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Pause stops the server process (SIGSTOP) without closing its sockets:
// connections stay open and nothing is answered, a hung Redis. Resume
// continues it; the test's cleanup resumes it too, so Stop can end it.
func (s *Server) Pause() {
	s.tb.Helper()
	s.signal(syscall.SIGSTOP)
	s.tb.Cleanup(s.Resume)
}

// Resume continues a paused server (SIGCONT); harmless when not paused.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.tb.Errorf("redis-server: %v: %v", sig, err)
	}
}

// Restart stops the server and starts it again on the same port and data
// directory (with append-only persistence on, the data survives).
func (s *Server) Restart() {
	s.Stop()
	s.start()
}

// Start again after Stop, on the same port.
func (s *Server) Start() { s.start() }

func (s *Server) start() {
	s.tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	args := []string{
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--dir", s.dir, "--protected-mode", "no",
	}
	args = append(args, s.args...)
	var lastErr error
	// The port was free a moment ago; after a Stop the kernel may need a
	// moment to release it, so try a few times.
	for attempt := 0; attempt < 50; attempt++ {
		cmd := exec.Command(s.bin, args...)
		stdout, _ := cmd.StdoutPipe()
		cmd.Stderr = cmd.Stdout
		if err := cmd.Start(); err != nil {
			s.tb.Fatalf("start redis-server: %v", err)
		}
		ready := make(chan bool, 1)
		go func() {
			sc := bufio.NewScanner(stdout)
			ok := false
			for sc.Scan() {
				if !ok && strings.Contains(sc.Text(), "Ready to accept connections") {
					ok = true
					ready <- true
				}
			}
			if !ok {
				ready <- false
			}
		}()
		select {
		case ok := <-ready:
			if ok {
				s.cmd = cmd
				return
			}
			_ = cmd.Wait()
			lastErr = fmt.Errorf("redis-server exited before it was ready")
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			lastErr = fmt.Errorf("redis-server not ready after 10s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.tb.Fatalf("redis-server on port %d: %v", s.port, lastErr)
}

// WaitReady blocks until the server answers PING or the context ends.
func (s *Server) WaitReady(ctx context.Context) error {
	for {
		c, err := net.DialTimeout("tcp", s.Addr(), 200*time.Millisecond)
		if err == nil {
			_, _ = c.Write([]byte("PING\r\n"))
			buf := make([]byte, 7)
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			n, _ := c.Read(buf)
			c.Close()
			if strings.HasPrefix(string(buf[:n]), "+PONG") {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// freePort is proctest.FreePort as a number, or the test's end.
func freePort(tb testing.TB) int {
	tb.Helper()
	p, err := proctest.FreePort()
	if err != nil {
		tb.Fatalf("find a free port: %v", err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		tb.Fatalf("find a free port: %v", err)
	}
	return n
}
