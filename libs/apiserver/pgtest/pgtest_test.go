package pgtest

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestServerLifecycle starts a server, writes through psql into a
// database of its own, pauses it (a connection gets no answer), resumes
// it and restarts it: what was written before the restart is still there.
func TestServerLifecycle(t *testing.T) {
	s := Start(t)
	url := s.CreateDB(t, "lifecycle")
	if url != "postgres://postgres@"+s.Addr()+"/lifecycle?sslmode=disable" {
		t.Fatalf("URL = %q", url)
	}
	s.Exec(t, "lifecycle", "CREATE TABLE kv (k text PRIMARY KEY, v int); INSERT INTO kv VALUES ('a', 1)")
	if got := s.Exec(t, "lifecycle", "SELECT v FROM kv WHERE k = 'a'"); got != "1" {
		t.Fatalf("read back %q, want 1", got)
	}

	s.Pause()
	c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	if err != nil {
		t.Fatalf("a paused server still accepts (its socket is open): %v", err)
	}
	// A startup packet for protocol 3.0 with no parameters: a running
	// server answers at once (with an error); a paused one does not.
	_, _ = c.Write([]byte{0, 0, 0, 9, 0, 3, 0, 0, 0})
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := c.Read(make([]byte, 64)); err == nil {
		t.Fatalf("a paused server answered %d bytes", n)
	}
	c.Close()
	s.Resume()

	s.Restart()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.Exec(t, "lifecycle", "SELECT v FROM kv WHERE k = 'a'"); got != "1" {
		t.Fatalf("after a restart read %q, want 1", got)
	}
	s.Stop()
	s.Stop() // harmless twice
}
