package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/apistack/platform/services/chat/internal/archiver"
	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/config"
	"github.com/apistack/platform/services/chat/internal/pgarchive"
)

// archive is the durable archive of a process with CHAT_DATABASE_URL.
type archive struct {
	db *pgarchive.Archive
}

// maintenanceInterval is how often each replica makes sure the coming
// days' partitions exist (they are made AheadDays ahead, so a replica
// that misses a run misses nothing).
const maintenanceInterval = time.Hour

// openArchive connects to the archive, applies its migrations (every
// replica does at start, one at a time under the advisory lock) and makes
// the coming days' partitions. The archive must answer at start: a
// deployment that names one and cannot reach it is misconfigured; once
// running, an archive outage only delays archiving.
func openArchive(ctx context.Context, cfg config.Config, log *slog.Logger) (*archive, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	db, err := pgarchive.Open(ctx, cfg.Archive.DatabaseURL, pgarchive.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	applied, err := db.Migrate(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	if len(applied) > 0 {
		log.Info("archive migrated", "versions", applied)
	}
	if err := db.EnsureAhead(ctx, time.Now()); err != nil {
		db.Close()
		return nil, err
	}
	return &archive{db: db}, nil
}

// startArchive starts the archiver and the partition job when the app has
// an archive: they run until App.Close. The archiver runs in every
// replica: the engine's shard leases split the channels among them.
func startArchive(app *App) error {
	if app.Archive == nil {
		return nil
	}
	src, ok := app.Store.(chat.ArchiveSource)
	if !ok {
		return fmt.Errorf("archive: the %s engine cannot be archived", app.Config.Engine())
	}
	a := archiver.New(src, app.Archive.db, archiver.Options{Owner: replicaName(), Logger: app.Log})
	if err := a.Register(app.HTTP.Registry()); err != nil {
		return err
	}
	stopArchiver := runUntilStopped(a.Run)
	stopJob := runUntilStopped(func(ctx context.Context) {
		app.Archive.db.RunMaintenance(ctx, maintenanceInterval, app.Config.Archive.Retention, time.Now)
	})
	app.stopArchive = func() { stopArchiver(); stopJob() }
	return nil
}

// replicaName names this process in the archive's leases: the host name
// (a pod's name) and a random suffix, so a restarted replica does not
// take for its own the leases its predecessor held.
func replicaName() string {
	host, _ := os.Hostname()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return host + "-" + hex.EncodeToString(b)
}

// migrate is `chat migrate`: the archive's migrations, then exit.
func migrate(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	url, err := config.DatabaseURL(getenv)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	db, err := pgarchive.Open(ctx, url, pgarchive.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	applied, err := db.Migrate(ctx)
	if err != nil {
		return err
	}
	if err := db.EnsureAhead(ctx, time.Now()); err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintln(stdout, "archive: up to date")
		return nil
	}
	fmt.Fprintf(stdout, "archive: applied migrations %v\n", applied)
	return nil
}
