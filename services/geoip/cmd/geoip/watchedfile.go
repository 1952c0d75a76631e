package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/apistack/platform/services/geoip/internal/answer"
)

// overridesFile is GEOIP_OVERRIDES: a JSON file of local corrections, read whole and
// checked before it is swapped into the engine, and reloaded as the databases are (on a
// change that has stayed one interval, and on SIGHUP). A refused file leaves the table
// serving as it was.
type overridesFile struct {
	path     string
	engine   *answer.Engine
	log      *slog.Logger
	interval time.Duration
	loaded   overridesStat // the file's stat when last read, loaded or refused
}

// overridesStat tells a changed file from the one read, as the databases' watcher does.
type overridesStat struct {
	mod  time.Time
	size int64
}

func statOverrides(path string) (overridesStat, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return overridesStat{}, err
	}
	return overridesStat{mod: fi.ModTime(), size: fi.Size()}, nil
}

// openOverrides loads path into engine; a file that cannot be read or is refused stops
// the start, as a bad database does.
func openOverrides(path string, engine *answer.Engine, interval time.Duration, log *slog.Logger) (*overridesFile, error) {
	f := &overridesFile{path: path, engine: engine, log: log.With("overrides", path), interval: interval}
	if err := f.load(); err != nil {
		return nil, fmt.Errorf("GEOIP_OVERRIDES: %w", err)
	}
	return f, nil
}

// load reads the file (at most answer.MaxOverridesSize bytes) and swaps its table in.
func (f *overridesFile) load() error {
	st, _ := statOverrides(f.path)
	f.loaded = st
	file, err := os.Open(f.path)
	if err != nil {
		return err
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, answer.MaxOverridesSize+1))
	if err != nil {
		return err
	}
	o, err := answer.ParseOverrides(data)
	if err != nil {
		return err
	}
	f.engine.SetOverrides(o)
	f.log.Info("overrides loaded", "networks", o.Len(), "version", o.Version())
	return nil
}

// Watch reloads the file on each value of hup and when it has changed, until ctx ends.
func (f *overridesFile) Watch(ctx context.Context, hup <-chan os.Signal) {
	var tick <-chan time.Time
	if f.interval > 0 {
		t := time.NewTicker(f.interval)
		defer t.Stop()
		tick = t.C
	}
	var pending overridesStat
	for {
		select {
		case <-ctx.Done():
			return
		case sig := <-hup:
			f.log.Info("reloading overrides on signal", "signal", fmt.Sprint(sig))
			f.reload()
		case <-tick:
			st, err := statOverrides(f.path)
			switch {
			case err != nil || st == f.loaded:
				pending = overridesStat{}
			case st != pending:
				pending = st // changed: read it once it has stayed so for an interval
			default:
				f.log.Info("overrides file changed; reloading")
				f.reload()
				pending = overridesStat{}
			}
		}
	}
}

func (f *overridesFile) reload() {
	if err := f.load(); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			err = fmt.Errorf("the file is gone: %w", err)
		}
		f.log.Warn("overrides refused; the previous table keeps serving", "err", err)
	}
}
