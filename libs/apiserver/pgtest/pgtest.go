// Package pgtest starts a real PostgreSQL for integration tests, the way
// redistest starts redis-server: initdb into a fresh temporary directory,
// then the postgres server on a free loopback port (and a private unix
// socket directory), without fsync (a test's data need not survive a
// machine crash; it does survive the server's own crash, Stop, since each
// commit is written out before it is acknowledged), stopped and removed
// when the test ends.
//
// The binaries are Debian's (postgresql-15: /usr/lib/postgresql/15/bin),
// or whichever initdb and postgres are on PATH, or in PG_BIN when set.
// When none is installed the test is skipped with a message, unless
// REQUIRE_POSTGRES=1 (set by CI), in which case it fails.
//
// PostgreSQL refuses to run as root. Under root (containers, CI) the
// server runs as the "postgres" user the Debian package creates, and the
// directory is given to it.
//
// The server is started directly, not through pg_ctl, so that the test
// holds its process group: Pause stops every backend at once (SIGSTOP),
// a hung database whose sockets stay open, which pg_ctl cannot do.
package pgtest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver/proctest"
)

// debianBin is where Debian's postgresql-15 package puts its programs.
const debianBin = "/usr/lib/postgresql/15/bin"

// Server is one PostgreSQL server owned by a test.
type Server struct {
	tb     testing.TB
	bin    string // directory of initdb and postgres
	port   int
	dir    string // data directory, socket directory beside it
	cred   *syscall.Credential
	logBuf *lineLog

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Start runs initdb in a new temporary directory and starts postgres on
// a free loopback port; it stops and removes both when the test ends.
// The superuser is "postgres" with trust authentication on loopback.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin, err := findBin()
	if err != nil {
		if os.Getenv("REQUIRE_POSTGRES") == "1" {
			tb.Fatalf("PostgreSQL is not installed but REQUIRE_POSTGRES=1: %v", err)
		}
		tb.Skipf("PostgreSQL is not installed; skipping integration test (apt-get install postgresql, or set REQUIRE_POSTGRES=1 to fail instead): %v", err)
	}
	root, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(root) })
	s := &Server{tb: tb, bin: bin, port: freePort(tb), dir: root, logBuf: &lineLog{}}
	if os.Geteuid() == 0 {
		s.cred = postgresUser(tb)
		if err := os.Chown(root, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			tb.Fatalf("pgtest: give %s to the postgres user: %v", root, err)
		}
	}
	s.initdb()
	s.start()
	tb.Cleanup(s.Stop)
	return s
}

// findBin returns the directory holding initdb and postgres.
func findBin() (string, error) {
	candidates := []string{os.Getenv("PG_BIN"), debianBin}
	if p, err := exec.LookPath("initdb"); err == nil {
		candidates = append(candidates, filepath.Dir(p))
	}
	for _, d := range candidates {
		if d == "" {
			continue
		}
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", fmt.Errorf("no initdb and postgres in PG_BIN, %s or PATH", debianBin)
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// postgresUser is the credential of the "postgres" system user.
func postgresUser(tb testing.TB) *syscall.Credential {
	tb.Helper()
	u, err := user.Lookup("postgres")
	if err != nil {
		tb.Fatalf("pgtest: running as root needs the postgres user (the postgresql package creates it): %v", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

func (s *Server) dataDir() string   { return filepath.Join(s.dir, "data") }
func (s *Server) socketDir() string { return filepath.Join(s.dir, "sock") }

func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8", "TZ=UTC")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: s.cred}
	return cmd
}

func (s *Server) initdb() {
	s.tb.Helper()
	if err := os.Mkdir(s.socketDir(), 0o700); err != nil {
		s.tb.Fatalf("pgtest: %v", err)
	}
	if s.cred != nil {
		_ = os.Chown(s.socketDir(), int(s.cred.Uid), int(s.cred.Gid))
	}
	cmd := s.command("initdb", "-D", s.dataDir(), "-U", "postgres", "--auth=trust",
		"--encoding=UTF8", "--locale=C.UTF-8", "--no-sync", "--no-instructions")
	if out, err := cmd.CombinedOutput(); err != nil {
		s.tb.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
}

// Port is the server's TCP port on 127.0.0.1.
func (s *Server) Port() int { return s.port }

// Addr is host:port of the server.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is a postgres:// URL of database db ("" for the default, postgres)
// as the superuser, suitable for pgx and for CHAT_DATABASE_URL.
func (s *Server) URL(db string) string {
	if db == "" {
		db = "postgres"
	}
	return "postgres://postgres@" + s.Addr() + "/" + db + "?sslmode=disable"
}

// CreateDB creates a new empty database and returns its URL, so that
// several tests can share one server without seeing each other's tables.
func (s *Server) CreateDB(tb testing.TB, name string) string {
	tb.Helper()
	s.psql(tb, "postgres", "CREATE DATABASE "+quoteIdent(name))
	return s.URL(name)
}

// Exec runs SQL in database db with psql (for setting a test up; tests
// read through their own client).
func (s *Server) Exec(tb testing.TB, db, sql string) string {
	tb.Helper()
	return s.psql(tb, db, sql)
}

func (s *Server) psql(tb testing.TB, db, sql string) string {
	tb.Helper()
	if db == "" {
		db = "postgres"
	}
	cmd := exec.Command(filepath.Join(s.bin, "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
		"-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-U", "postgres", "-d", db, "-c", sql)
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("pgtest: psql %q: %v\n%s", sql, err, out)
	}
	return strings.TrimSpace(string(out))
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// Stop shuts the server down at once (SIGQUIT: no checkpoint, as a crash
// would; the next start recovers from the WAL); calling it again is
// harmless.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGCONT) // a paused server could not quit
	_ = s.cmd.Process.Signal(syscall.SIGQUIT)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	s.cmd = nil
}

// Restart stops the server and starts it again on the same port and data.
func (s *Server) Restart() {
	s.Stop()
	s.start()
}

// Start again after Stop, on the same port and data.
func (s *Server) Start() { s.start() }

// Pause stops the server and every backend (SIGSTOP to its process
// group) without closing their sockets: connections stay open and
// nothing is answered, a hung database. Resume continues it; the test's
// cleanup resumes it too, so Stop can end it.
func (s *Server) Pause() {
	s.tb.Helper()
	s.signalGroup(syscall.SIGSTOP)
	s.tb.Cleanup(s.Resume)
}

// Resume continues a paused server; harmless when not paused.
func (s *Server) Resume() { s.signalGroup(syscall.SIGCONT) }

func (s *Server) signalGroup(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	if err := syscall.Kill(-s.cmd.Process.Pid, sig); err != nil {
		s.tb.Errorf("postgres: %v: %v", sig, err)
	}
}

// Log is what the server wrote so far (its last lines), for a failing
// test's message.
func (s *Server) Log() string { return s.logBuf.String() }

func (s *Server) start() {
	s.tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	var lastErr error
	// The port was free a moment ago; after a Stop the kernel may need a
	// moment to release it, so try a few times.
	for attempt := 0; attempt < 30; attempt++ {
		cmd := s.command("postgres", "-D", s.dataDir(), "-p", strconv.Itoa(s.port),
			"-h", "127.0.0.1", "-k", s.socketDir(),
			"-c", "fsync=off", "-c", "full_page_writes=off",
			"-c", "max_connections=200", "-c", "log_min_messages=warning")
		stderr, _ := cmd.StderrPipe()
		cmd.Stdout = nil
		if err := cmd.Start(); err != nil {
			s.tb.Fatalf("pgtest: start postgres: %v", err)
		}
		ready := make(chan bool, 1)
		go func() {
			sc := bufio.NewScanner(stderr)
			ok := false
			for sc.Scan() {
				line := sc.Text()
				s.logBuf.add(line)
				if !ok && strings.Contains(line, "database system is ready to accept connections") {
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
			lastErr = fmt.Errorf("postgres exited before it was ready:\n%s", s.logBuf.String())
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
			lastErr = fmt.Errorf("postgres not ready after 30s:\n%s", s.logBuf.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.tb.Fatalf("pgtest: postgres on port %d: %v", s.port, lastErr)
}

// WaitReady blocks until the server accepts TCP connections or ctx ends.
func (s *Server) WaitReady(ctx context.Context) error {
	for {
		c, err := net.DialTimeout("tcp", s.Addr(), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
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

// lineLog keeps the server's last lines.
type lineLog struct {
	mu    sync.Mutex
	lines []string
}

const keepLines = 50

func (l *lineLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
	if len(l.lines) > keepLines {
		l.lines = l.lines[len(l.lines)-keepLines:]
	}
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}
