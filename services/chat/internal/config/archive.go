package config

import (
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/apistack/platform/libs/apiserver/ratelimit"
)

// Archive is the durable archive's configuration: CHAT_DATABASE_URL (empty:
// no archive, today's behaviour exactly) and CHAT_ARCHIVE_HOLD.
type Archive struct {
	// DatabaseURL is the PostgreSQL to archive into (postgres:// or
	// postgresql://). It needs the Redis engine (REDIS_URL): the memory
	// engine keeps one process's messages, which an archive shared by
	// replicas has no use for, and a development run needs no Postgres.
	DatabaseURL string
	// Hold is how many messages a channel's Redis window keeps at most
	// while the archive is behind (it is not trimmed past what is
	// archived until then): DefaultArchiveHold, at least CHAT_HISTORY.
	Hold int
	// Retention is how long the archive keeps what it holds
	// (CHAT_ARCHIVE_RETENTION): whole days older than this are dropped.
	Retention time.Duration
}

// DefaultArchiveRetention is CHAT_ARCHIVE_RETENTION's default, 60 days:
// Twitch keeps a VOD (and its chat replay) 60 days for its partners, the
// longest of its defaults; a platform that keeps VODs longer sets more.
const DefaultArchiveRetention = 60 * 24 * time.Hour

// Retention bounds: at least a day (partitions are days), at most ten
// years.
const (
	minArchiveRetention = 24 * time.Hour
	maxArchiveRetention = 3650 * 24 * time.Hour
)

// DefaultArchiveHold is CHAT_ARCHIVE_HOLD's default: ten times the default
// history. At about 400 bytes a message in Redis, a channel that keeps
// sending through an archive outage grows by at most 4 MB before the
// window trims past the archive (counted in
// chat_archive_lost_messages_total); at 1,000 sends/s over 100 channels
// (10 a second each) that is 1,000 s of a Postgres outage held without a
// gap, 100 s for a channel sending 100 a second.
const DefaultArchiveHold = 10_000

// maxArchiveHold bounds CHAT_ARCHIVE_HOLD: a channel's window must stay a
// window.
const maxArchiveHold = 1_000_000

// Enabled reports whether the archive is on.
func (a Archive) Enabled() bool { return a.DatabaseURL != "" }

// LogValue shows where the archive is without its credentials.
func (a Archive) LogValue() slog.Value {
	if !a.Enabled() {
		return slog.GroupValue(slog.Bool("enabled", false))
	}
	host := ""
	if u, err := url.Parse(a.DatabaseURL); err == nil {
		host = u.Host + u.Path
	}
	return slog.GroupValue(slog.Bool("enabled", true), slog.String("database", host), slog.Int("hold", a.Hold),
		slog.Int("retention_days", int(a.Retention/(24*time.Hour))))
}

// loadArchive reads CHAT_DATABASE_URL and CHAT_ARCHIVE_HOLD; bad reports
// each wrong one.
func loadArchive(getenv func(string) string, redisURL string, history int, bad func(name, value, want string)) Archive {
	a := Archive{DatabaseURL: strings.TrimSpace(getenv("CHAT_DATABASE_URL")), Hold: max(DefaultArchiveHold, history), Retention: DefaultArchiveRetention}
	if v := getenv("CHAT_ARCHIVE_RETENTION"); v != "" {
		d, err := ratelimit.ParseWindow(strings.TrimSpace(v))
		if err != nil || d < minArchiveRetention || d > maxArchiveRetention || d%(24*time.Hour) != 0 {
			bad("CHAT_ARCHIVE_RETENTION", v, "want whole days 1d..3650d, like 60d")
		}
		a.Retention = d
	}
	if v := getenv("CHAT_ARCHIVE_HOLD"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < history || n > maxArchiveHold {
			bad("CHAT_ARCHIVE_HOLD", v, fmt.Sprintf("want a number of messages %d (CHAT_HISTORY)..%d", history, maxArchiveHold))
		}
		a.Hold = n
	}
	if a.DatabaseURL == "" {
		return a
	}
	u, err := url.Parse(a.DatabaseURL)
	switch {
	case err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "":
		// Never echo the value: it may hold a password.
		bad("CHAT_DATABASE_URL", "***", "want a postgres://user:password@host:port/database URL")
	case redisURL == "":
		bad("CHAT_DATABASE_URL", "***", "the archive needs the Redis engine: set REDIS_URL too (the memory engine is not archived)")
	}
	return a
}

// DatabaseURL reads CHAT_DATABASE_URL alone, checked as Load checks it:
// what `chat migrate` needs, which runs without Redis.
func DatabaseURL(getenv func(string) string) (string, error) {
	var errs []string
	a := loadArchive(getenv, "redis-not-needed", 1, func(name, value, want string) {
		errs = append(errs, fmt.Sprintf("%s=%q: %s", name, value, want))
	})
	switch {
	case len(errs) > 0:
		return "", fmt.Errorf("config: %s", strings.Join(errs, "; "))
	case !a.Enabled():
		return "", fmt.Errorf("config: CHAT_DATABASE_URL is not set: nothing to migrate")
	}
	return a.DatabaseURL, nil
}
