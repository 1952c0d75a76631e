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
	"github.com/apistack/platform/services/geoip/internal/apikeys"
	"github.com/apistack/platform/services/geoip/internal/filewatch"
	"github.com/apistack/platform/services/geoip/internal/httpapi"
)

// watchedFile is a small JSON file of the operator's (GEOIP_OVERRIDES, GEOIP_KEYS_FILE),
// read whole and checked before it is swapped in, and reloaded as the databases are (on a
// change that has stayed one interval, and on SIGHUP). A refused file leaves what was
// loaded serving.
type watchedFile struct {
	variable string // the environment variable naming it, for messages
	what     string // what it holds, for messages: "overrides", "API keys"
	path     string
	maxSize  int64
	// apply parses data and swaps it in, returning what to log about it; on an error
	// nothing is swapped.
	apply    func(data []byte) ([]any, error)
	log      *slog.Logger
	interval time.Duration
	loaded   filewatch.Stat // the file's stat when last read, loaded or refused
}

// openWatched loads the file; one that cannot be read or is refused stops the start, as a
// bad database does.
func openWatched(f *watchedFile) (*watchedFile, error) {
	if err := f.load(); err != nil {
		return nil, fmt.Errorf("%s: %w", f.variable, err)
	}
	return f, nil
}

// openOverrides loads GEOIP_OVERRIDES into engine.
func openOverrides(path string, engine *answer.Engine, interval time.Duration, log *slog.Logger) (*watchedFile, error) {
	return openWatched(&watchedFile{variable: "GEOIP_OVERRIDES", what: "overrides", path: path, maxSize: answer.MaxOverridesSize,
		log: log.With("overrides", path), interval: interval,
		apply: func(data []byte) ([]any, error) {
			o, err := answer.ParseOverrides(data)
			if err != nil {
				return nil, err
			}
			engine.SetOverrides(o)
			return []any{"networks", o.Len(), "version", o.Version()}, nil
		}})
}

// openKeys loads GEOIP_KEYS_FILE into keys. The log names the keys, never their secrets.
func openKeys(path string, keys *httpapi.Keys, interval time.Duration, log *slog.Logger) (*watchedFile, error) {
	return openWatched(&watchedFile{variable: "GEOIP_KEYS_FILE", what: "API keys", path: path, maxSize: apikeys.MaxFileSize,
		log: log.With("keys_file", path), interval: interval,
		apply: func(data []byte) ([]any, error) {
			set, err := apikeys.Parse(data)
			if err != nil {
				return nil, err
			}
			keys.Swap(set)
			return []any{"keys", set.Len()}, nil
		}})
}

// load reads the file (at most maxSize bytes) and swaps it in.
func (f *watchedFile) load() error {
	f.loaded, _ = filewatch.StatOf(f.path)
	file, err := os.Open(f.path)
	if err != nil {
		return err
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, f.maxSize+1))
	if err != nil {
		return err
	}
	if int64(len(data)) > f.maxSize {
		return fmt.Errorf("the file is larger than %d bytes", f.maxSize)
	}
	attrs, err := f.apply(data)
	if err != nil {
		return err
	}
	f.log.Info(f.what+" loaded", attrs...)
	return nil
}

// Watch reloads the file on each value of hup and when it has changed, until ctx ends.
func (f *watchedFile) Watch(ctx context.Context, hup <-chan os.Signal) {
	var settle filewatch.Settle
	filewatch.Loop(ctx, hup, f.interval, func(sig os.Signal) {
		f.log.Info("reloading "+f.what+" on signal", "signal", fmt.Sprint(sig))
		f.reload()
	}, func() {
		if st, err := filewatch.StatOf(f.path); settle.Changed(st, err, f.loaded) {
			f.log.Info(f.what + " file changed; reloading")
			f.reload()
		}
	})
}

func (f *watchedFile) reload() {
	if err := f.load(); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			err = fmt.Errorf("the file is gone: %w", err)
		}
		f.log.Warn(f.what+" refused; what was loaded keeps serving", "err", err)
	}
}
