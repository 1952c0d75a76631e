// Package proctest runs a service's real binary in a test: built once per
// test binary, started on a free loopback port with a small known
// environment, waited for until it listens (or answers a readiness path),
// its output kept and shown when the test fails, and stopped gracefully
// (SIGTERM) when the test ends. The fault suites of every service use it,
// so there is one way to test a process.
package proctest

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver/testkit"
)

var (
	buildMu  sync.Mutex
	buildDir string
	built    = map[string]string{} // package -> binary
	buildErr = map[string]error{}
)

// Main runs the tests and then removes the binaries Build made: a test
// binary that uses Build calls it from TestMain, os.Exit(proctest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	return code
}

// Build compiles the main package pkg (a path the go command accepts from
// the test's directory, "." for the test's own) once per test binary, with
// the go command on PATH, and returns the binary. It skips the test under
// -short: real processes are slow.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the real binary: skipped with -short")
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if bin, ok := built[pkg]; ok {
		return bin
	}
	if err, ok := buildErr[pkg]; ok {
		t.Fatal(err)
	}
	err := func() error {
		if buildDir == "" {
			dir, err := os.MkdirTemp("", "proctest-")
			if err != nil {
				return err
			}
			buildDir = dir
		}
		bin := filepath.Join(buildDir, strconv.Itoa(len(built)+len(buildErr)), filepath.Base(absPkg(pkg)))
		// Without the race detector: a fault suite measures the process's
		// memory and speed, which -race would distort.
		out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
		if err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
		built[pkg] = bin
		return nil
	}()
	if err != nil {
		buildErr[pkg] = err
		t.Fatal(err)
	}
	return built[pkg]
}

func absPkg(pkg string) string {
	if abs, err := filepath.Abs(pkg); err == nil {
		return abs
	}
	return pkg
}

// Options says how to start a process.
type Options struct {
	// Args are the binary's arguments (a subcommand: "serve").
	Args []string
	// Env is added to the process's environment, which is otherwise only
	// PATH, HOME (a fresh directory), HOST=127.0.0.1 and PORT (a free
	// port): nothing of the developer's shell leaks in.
	Env []string
	// ReadyPath, when set, is polled until it answers 200; otherwise the
	// process is ready when its port accepts a connection.
	ReadyPath string
	// ReadyTimeout bounds the wait; 30 s when zero.
	ReadyTimeout time.Duration
	// StopTimeout bounds the graceful stop before SIGKILL; 15 s when zero.
	StopTimeout time.Duration
}

// Process is one running binary.
type Process struct {
	Cmd  *exec.Cmd
	Addr string // 127.0.0.1:port
	Base string // http://Addr
	Logs *testkit.Buffer

	stopTimeout time.Duration
	done        chan struct{}
}

// Start runs bin and waits until it is ready. When the test ends the process
// is stopped (Stop), and its output is logged if the test failed.
func Start(t testing.TB, bin string, o Options) *Process {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, o.Args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "HOST=127.0.0.1", "PORT=" + port}, o.Env...)
	p := &Process{Cmd: cmd, Addr: "127.0.0.1:" + port, Logs: &testkit.Buffer{}, stopTimeout: o.StopTimeout, done: make(chan struct{})}
	p.Base = "http://" + p.Addr
	if p.stopTimeout == 0 {
		p.stopTimeout = 15 * time.Second
	}
	cmd.Stdout, cmd.Stderr = p.Logs, p.Logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.Stop()
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(bin), tail(p.Logs.String(), 8000))
		}
	})
	timeout := o.ReadyTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	if err := p.waitReady(o.ReadyPath, timeout); err != nil {
		t.Fatalf("%s: %v", filepath.Base(bin), err)
	}
	return p
}

func (p *Process) waitReady(path string, timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	for {
		if path == "" {
			if c, err := net.DialTimeout("tcp", p.Addr, time.Second); err == nil {
				c.Close()
				return nil
			}
		} else if res, err := client.Get(p.Base + path); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return errors.New("exited before it was ready")
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s", timeout)
		}
	}
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.Cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Kill ends the process with SIGKILL (no shutdown, no flush) and waits
// for it: the fault a test injects.
func (p *Process) Kill() {
	_ = p.Cmd.Process.Kill()
	<-p.done
}

// Stop asks the process to shut down (SIGTERM) and waits for it; after
// StopTimeout it kills it and says so. Stopping an exited process is a
// no-op.
func (p *Process) Stop() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(p.stopTimeout):
		p.Kill()
		return fmt.Errorf("did not stop within %s of SIGTERM: killed", p.stopTimeout)
	}
}

// FreePort is a loopback port that was free a moment ago.
func FreePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
