package updater

import "os"

// SetSyncFile replaces (*os.File).Sync, for tests that record when it runs.
func SetSyncFile(u *Updater, sync func(*os.File) error) { u.syncFile = sync }
