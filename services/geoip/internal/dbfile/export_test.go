package dbfile

// SetSyncDir replaces the directory sync, for tests that record when it runs.
func SetSyncDir(m *Manager, sync func(dir string) error) { m.syncDir = sync }
