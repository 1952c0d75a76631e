// Package filewatch tells when a file an operator replaces (a database, a JSON file of
// keys or overrides) has changed and stopped changing, and runs the loop that reloads it
// on SIGHUP and on such a change: every file geoip serves from is watched this one way.
package filewatch

import (
	"context"
	"os"
	"time"
)

// Stat is what tells a changed file from the one read: its size and modification time.
// The zero Stat is no file.
type Stat struct {
	size int64
	mod  time.Time
}

// StatOf is the file's Stat now.
func StatOf(path string) (Stat, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Stat{}, err
	}
	return Stat{size: fi.Size(), mod: fi.ModTime()}, nil
}

// Settle tells a change that has stayed: a file still being written (copied in place,
// not renamed) is read once it has looked the same for one poll, not half-written.
type Settle struct{ pending Stat }

// Changed reports whether st, the file's Stat now (err: it could not be read), differs
// from every known Stat (the one loaded, the one last refused) and is the same as at the
// previous call. It then starts over: the next change must settle again.
func (s *Settle) Changed(st Stat, err error, known ...Stat) bool {
	if err != nil {
		s.pending = Stat{}
		return false
	}
	for _, k := range known {
		if st == k {
			s.pending = Stat{}
			return false
		}
	}
	if st != s.pending {
		s.pending = st
		return false
	}
	s.pending = Stat{}
	return true
}

// Reset forgets a change seen but not settled (the file is no longer watched).
func (s *Settle) Reset() { s.pending = Stat{} }

// Loop calls onSignal with each value of hup (SIGHUP, wired by the caller with
// signal.Notify) and poll every interval (never when interval <= 0), until ctx ends.
func Loop(ctx context.Context, hup <-chan os.Signal, interval time.Duration, onSignal func(os.Signal), poll func()) {
	var tick <-chan time.Time
	if interval > 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case sig := <-hup:
			onSignal(sig)
		case <-tick:
			poll()
		}
	}
}
