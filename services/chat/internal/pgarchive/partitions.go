package pgarchive

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Partitions are one day (UTC) of each table: chat_messages_p20261207
// holds the messages created on 2026-12-07. A day is small enough that
// retention drops at most a day more than it must, and few enough (60
// days: 180 partitions) for the planner to prune quickly.

// tables are the partitioned tables.
var tables = []string{"chat_messages", "chat_events", "chat_modlog"}

// partitionLock is the transaction advisory lock taken to create
// partitions: two replicas creating the same one at once would otherwise
// race in the catalog.
const partitionLock int64 = 0x63686174_70617274 // "chatpart"

// AheadDays is how many days ahead the maintenance job creates partitions,
// so that writes at midnight never wait for one.
const AheadDays = 3

func day(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

func partitionName(table string, d time.Time) string {
	return table + "_p" + d.Format("20060102")
}

// ensureDays creates the partitions of days not known to exist.
func (a *Archive) ensureDays(ctx context.Context, days map[time.Time]bool) error {
	var missing []time.Time
	a.mu.Lock()
	for d := range days {
		if !a.days[d] {
			missing = append(missing, d)
		}
	}
	a.mu.Unlock()
	if len(missing) == 0 {
		return nil
	}
	return a.EnsurePartitions(ctx, missing...)
}

// EnsurePartitions creates each table's partition of every day given
// that does not exist yet, in one transaction under partitionLock.
func (a *Archive) EnsurePartitions(ctx context.Context, days ...time.Time) error {
	err := pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", partitionLock); err != nil {
			return err
		}
		for _, d := range days {
			d = day(d)
			for _, t := range tables {
				sql := fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s PARTITION OF %s FOR VALUES FROM ('%s') TO ('%s')",
					pgx.Identifier{partitionName(t, d)}.Sanitize(), t,
					d.Format(time.RFC3339), d.AddDate(0, 0, 1).Format(time.RFC3339))
				if _, err := tx.Exec(ctx, sql); err != nil {
					return fmt.Errorf("create partition %s: %w", partitionName(t, d), err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("archive partitions: %w", err)
	}
	a.mu.Lock()
	for _, d := range days {
		a.days[day(d)] = true
	}
	a.mu.Unlock()
	return nil
}

// EnsureAhead creates the partitions from yesterday to AheadDays after
// now (yesterday: a replica whose clock is behind, a message sent just
// before midnight and archived after).
func (a *Archive) EnsureAhead(ctx context.Context, now time.Time) error {
	var days []time.Time
	for i := -1; i <= AheadDays; i++ {
		days = append(days, day(now).AddDate(0, 0, i))
	}
	return a.EnsurePartitions(ctx, days...)
}

// Partitions lists the partitions of table, oldest first, by their day.
func (a *Archive) Partitions(ctx context.Context, table string) ([]time.Time, error) {
	rows, err := a.pool.Query(ctx, `SELECT c.relname FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
WHERE p.relname = $1 ORDER BY c.relname`, table)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	var out []time.Time
	for _, n := range names {
		d, err := time.Parse("20060102", n[len(table)+2:])
		if err != nil {
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// DropExpired drops every table's partitions whose whole day ended more
// than retention before now, and returns their names. One replica at a
// time runs it (the transaction's advisory lock; another finds the lock
// taken and drops nothing this round): dropping is idempotent anyway,
// the lock keeps replicas from queueing behind each other's DROPs.
func (a *Archive) DropExpired(ctx context.Context, now time.Time, retention time.Duration) ([]string, error) {
	cutoff := now.Add(-retention)
	var dropped []string
	err := pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		var got bool
		if err := tx.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock($1)", partitionLock).Scan(&got); err != nil || !got {
			return err
		}
		for _, t := range tables {
			days, err := a.Partitions(ctx, t)
			if err != nil {
				return err
			}
			for _, d := range days {
				if d.AddDate(0, 0, 1).After(cutoff) {
					continue
				}
				name := partitionName(t, d)
				if _, err := tx.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{name}.Sanitize()); err != nil {
					return fmt.Errorf("drop partition %s: %w", name, err)
				}
				dropped = append(dropped, name)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("archive retention: %w", err)
	}
	a.mu.Lock()
	for d := range a.days {
		if !d.AddDate(0, 0, 1).After(cutoff) {
			delete(a.days, d)
		}
	}
	a.mu.Unlock()
	return dropped, nil
}

// RunMaintenance, every interval until ctx ends, creates partitions
// ahead and, with retention > 0, drops the expired ones. Every replica
// runs it: the creations go one at a time under the advisory lock and
// IF NOT EXISTS makes all but the first find nothing to do; the drops
// run in one replica at a time (DropExpired).
func (a *Archive) RunMaintenance(ctx context.Context, interval, retention time.Duration, now func() time.Time) {
	for {
		if err := a.EnsureAhead(ctx, now()); err != nil && ctx.Err() == nil {
			a.log.Warn("archive: creating partitions ahead failed; retrying", "err", err)
		}
		if retention > 0 {
			dropped, err := a.DropExpired(ctx, now(), retention)
			switch {
			case err != nil && ctx.Err() == nil:
				a.log.Warn("archive: dropping expired partitions failed; retrying", "err", err)
			case len(dropped) > 0:
				a.log.Info("archive: dropped expired partitions", "partitions", dropped, "retention", retention.String())
			}
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
