package dbfile

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/apistack/platform/services/geoip/internal/lookup"
)

// FileInstaller installs a downloaded database file that no Manager serves (`geoip
// update`, run by cron or an init container; or an ASN database a server will serve from
// its next start): it opens and verifies src as a Manager would, closes it, then renames
// it to dst and syncs the directory. A server watching dst reloads it by itself.
type FileInstaller struct {
	// Open loads a file (default Open: a city database); asn.Load for an ASN database.
	Open func(path string) (lookup.DB, error)
}

// InstallFile verifies src and moves it to dst (same file system); a file that fails to
// open or verify stays where it is and dst is untouched.
func (fi FileInstaller) InstallFile(src, dst string) error {
	open := fi.Open
	if open == nil {
		open = Open
	}
	db, err := open(src)
	if err == nil {
		err = Verify(db)
		if cerr := db.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil && src != dst {
		if err = os.Rename(src, dst); err == nil {
			err = syncDir(filepath.Dir(dst))
		}
	}
	if err != nil {
		return fmt.Errorf("install %s: %w", src, err)
	}
	return nil
}
