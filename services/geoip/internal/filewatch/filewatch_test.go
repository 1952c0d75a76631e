package filewatch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestChangedOnlyOnceSettledAndNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	write := func(s string, mod time.Time) Stat {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mod, mod); err != nil {
			t.Fatal(err)
		}
		st, err := StatOf(path)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	loaded := write("one", t0)
	var s Settle
	now, err := StatOf(path)
	if err != nil || now != loaded {
		t.Fatalf("stat again: %v %v", now, err)
	}
	for range 2 {
		if s.Changed(now, nil, loaded) {
			t.Fatal("the loaded file reported as changed")
		}
	}
	if s.Changed(write("two!", t0.Add(time.Second)), nil, loaded) {
		t.Fatal("a change reported before it settled")
	}
	third := write("three", t0.Add(2*time.Second)) // still being written
	if s.Changed(third, nil, loaded) {
		t.Fatal("a change still moving reported")
	}
	if !s.Changed(third, nil, loaded) {
		t.Fatal("a settled change not reported")
	}
	if s.Changed(third, nil, loaded) {
		t.Fatal("reported twice without settling again")
	}
	// A refused file is not retried until it changes again.
	for range 2 {
		if s.Changed(third, nil, loaded, third) {
			t.Fatal("the refused file reported again")
		}
	}
	// A file that cannot be read forgets the pending change.
	s.Changed(loaded, nil)
	if s.Changed(Stat{}, os.ErrNotExist) || s.Changed(loaded, nil) {
		t.Fatal("an unreadable file did not reset the pending change")
	}
	s.Reset()
	if s.Changed(loaded, nil) {
		t.Fatal("Reset kept the pending change")
	}
	if _, err := StatOf(filepath.Join(t.TempDir(), "none")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing file: %v", err)
	}
}

func TestLoopSignalsPollsAndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	hup := make(chan os.Signal)
	polled := make(chan struct{}, 100)
	signalled := make(chan os.Signal, 1)
	done := make(chan struct{})
	go func() {
		Loop(ctx, hup, time.Millisecond, func(s os.Signal) { signalled <- s }, func() { polled <- struct{}{} })
		close(done)
	}()
	hup <- syscall.SIGHUP
	if s := <-signalled; s != syscall.SIGHUP {
		t.Fatalf("signal %v", s)
	}
	select {
	case <-polled:
	case <-time.After(10 * time.Second):
		t.Fatal("never polled")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("did not stop with its context")
	}
	// No interval: no poll.
	ctx, cancel = context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	Loop(ctx, nil, 0, nil, func() { t.Error("polled without an interval") })
}
