package updater

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"
)

// state is what the last successful check of a database learnt, kept beside it
// (.NAME.update.json) so that the next check, in this process or the next `geoip update`,
// asks conditionally (If-None-Match, If-Modified-Since) and an unchanged file is not
// downloaded again. It holds no secret: key names the file, never the URL.
type state struct {
	Key          string    `json:"key"`
	ETag         string    `json:"etag,omitempty"`
	LastModified string    `json:"last_modified,omitempty"`
	Checked      time.Time `json:"checked"`
}

func statePath(target string) string {
	return filepath.Join(filepath.Dir(target), "."+filepath.Base(target)+".update.json")
}

// loadState reads the state of target; a missing or unreadable one is empty (the next
// download is then unconditional, which is always safe).
func loadState(target string) state {
	var s state
	b, err := os.ReadFile(statePath(target))
	if err == nil && len(b) < 4096 {
		_ = json.Unmarshal(b, &s)
	}
	return s
}

// saveState writes the state whole or not at all (a temporary file renamed over it).
func saveState(target string, s state) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(target), ".geoip-state-*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), statePath(target))
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
