package compare

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

// WriteJSON writes v, indented, to path: nothing when path is empty,
// stdout when it is "-", else the named file.
func WriteJSON(path string, stdout io.Writer, v any) (err error) {
	if path == "" {
		return nil
	}
	w := stdout
	if path != "-" {
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("create JSON report: %w", err)
		}
		defer func() {
			// A report that did not reach the disk is a failed report.
			if cerr := f.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("close JSON report: %w", cerr)
			}
		}()
		w = f
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write JSON report: %w", err)
	}
	return nil
}

// Pause waits d between rounds, or until ctx ends.
func Pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
