package testdb

import (
	"sync"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver/testkit"
	"github.com/apistack/platform/services/geoip/internal/dbfile"
	"github.com/apistack/platform/services/geoip/internal/sample"
	"github.com/apistack/platform/services/geoip/internal/tz"
)

var (
	sampleOnce sync.Once
	sampleDB   *dbfile.Manager
	sampleErr  error
)

// EmbeddedSample is the service's own default database, with time zones from
// coordinates as the service completes them, opened once per test binary.
func EmbeddedSample(t testing.TB) *dbfile.Manager {
	t.Helper()
	sampleOnce.Do(func() {
		sampleDB, sampleErr = dbfile.New(dbfile.Config{
			Fallback:     sample.Open,
			TimeZones:    tz.New(),
			PollInterval: -1,
			Logger:       testkit.Logger(),
			// A fixed winter instant: utc_offset is then known (-0800 for California).
			Now: func() time.Time { return time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC) },
		})
	})
	if sampleErr != nil {
		t.Fatal(sampleErr)
	}
	return sampleDB
}
