// Package pgarchive is chat's durable archive in PostgreSQL: the tables
// (migrations/, applied at start under an advisory lock, or by `chat
// migrate`), partitioned by day (partitions.go), and the writes the
// archiver makes (chat.ArchiveSink). It holds a pgx pool; nothing here
// is on a send's path.
package pgarchive

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/apistack/platform/services/chat/internal/chat"
)

//go:embed migrations/*.sql
var migrations embed.FS

var _ chat.ArchiveSink = (*Archive)(nil)

// Archive is the PostgreSQL archive.
type Archive struct {
	pool *pgxpool.Pool
	log  *slog.Logger

	// days are the partitions known to exist (every table's), by day.
	mu   sync.Mutex
	days map[time.Time]bool
}

// Options configure Open.
type Options struct {
	Logger *slog.Logger
	// MaxConns bounds the pool (0: pgx's default, the larger of 4 and
	// the number of CPUs).
	MaxConns int32
}

// Open connects to the database named by a postgres:// URL
// (CHAT_DATABASE_URL) and checks that it answers. It does not migrate:
// Migrate does.
func Open(ctx context.Context, url string, opts Options) (*Archive, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's message may quote the URL, password included: say what is wrong only.
		return nil, errors.New("CHAT_DATABASE_URL: not a valid postgres:// URL or connection string")
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open archive: %w", err)
	}
	a := &Archive{pool: pool, log: opts.Logger, days: map[time.Time]bool{}}
	if err := a.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return a, nil
}

// Pool is the connection pool (tests and tools read through it).
func (a *Archive) Pool() *pgxpool.Pool { return a.pool }

// Ping checks that the database answers.
func (a *Archive) Ping(ctx context.Context) error {
	if err := a.pool.Ping(ctx); err != nil {
		return fmt.Errorf("archive: postgres does not answer: %w", err)
	}
	return nil
}

// Close releases the pool.
func (a *Archive) Close() { a.pool.Close() }

// migrationLockID is the advisory lock that serialises migrations: every
// replica migrates at start, one at a time, and all but the first find
// nothing left to do. (goose's default id, named here so that tools see
// which lock it is: 'chat_archive' as bytes would do as well.)
const migrationLockID int64 = 5887940537704921958

// Migrate applies the embedded migrations not applied yet, under a
// session advisory lock, and returns the versions it applied.
func (a *Archive) Migrate(ctx context.Context) ([]int64, error) {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(migrationLockID))
	if err != nil {
		return nil, err
	}
	db := stdlib.OpenDBFromPool(a.pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub,
		goose.WithSessionLocker(locker), goose.WithTableName("chat_archive_migrations"))
	if err != nil {
		return nil, fmt.Errorf("archive migrations: %w", err)
	}
	res, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("archive migrations: %w", err)
	}
	var applied []int64
	for _, r := range res {
		applied = append(applied, r.Source.Version)
	}
	return applied, nil
}

// ArchiveWrite implements chat.ArchiveSink: one transaction, one round
// trip for the rows (a pgx batch), after the partitions the rows fall in
// are made sure of.
func (a *Archive) ArchiveWrite(ctx context.Context, b chat.ArchiveBatch) error {
	rows, err := newRows(b)
	if err != nil {
		return err
	}
	if err := a.ensureDays(ctx, rows.days); err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		batch := &pgx.Batch{}
		if len(rows.msgID) > 0 {
			batch.Queue(`INSERT INTO chat_messages (channel, id, created_at, user_id, user_name, user_role, body, bot)
SELECT $1, * FROM unnest($2::bigint[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::text[], $8::boolean[])
ON CONFLICT DO NOTHING`, b.Channel, rows.msgID, rows.msgAt, rows.userID, rows.userName, rows.userRole, rows.body, rows.bot)
		}
		if len(rows.delID) > 0 {
			batch.Queue(`UPDATE chat_messages m SET body = '', deleted_at = t.deleted_at
FROM unnest($2::bigint[], $3::timestamptz[], $4::timestamptz[]) AS t(id, created_at, deleted_at)
WHERE m.channel = $1 AND m.id = t.id AND m.created_at = t.created_at AND m.deleted_at IS NULL`,
				b.Channel, rows.delID, rows.delCreated, rows.delAt)
		}
		if len(rows.evID) > 0 {
			batch.Queue(`INSERT INTO chat_events (channel, msg_id, seq, at, type, data)
SELECT $1, * FROM unnest($2::bigint[], $3::bigint[], $4::timestamptz[], $5::text[], $6::jsonb[])
ON CONFLICT DO NOTHING`, b.Channel, rows.evID, rows.evSeq, rows.evAt, rows.evType, rows.evData)
		}
		if len(rows.modMS) > 0 {
			batch.Queue(`INSERT INTO chat_modlog (channel, ms, n, at, action, actor_id, target_id, data)
SELECT $1, * FROM unnest($2::bigint[], $3::bigint[], $4::timestamptz[], $5::text[], $6::text[], $7::text[], $8::jsonb[])
ON CONFLICT DO NOTHING`, b.Channel, rows.modMS, rows.modN, rows.modAt, rows.modAction, rows.modActor, rows.modTarget, rows.modData)
		}
		if batch.Len() == 0 {
			return nil
		}
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return fmt.Errorf("archive write %s: %w", b.Channel, err)
		}
		return nil
	})
}

// rows are a batch's columns, as the unnest inserts take them.
type rows struct {
	msgID                      []int64
	msgAt                      []time.Time
	userID, userName, userRole []string
	body                       []string
	bot                        []bool
	delID                      []int64
	delCreated, delAt          []time.Time
	evID, evSeq                []int64
	evAt                       []time.Time
	evType                     []string
	evData                     [][]byte
	modMS, modN                []int64
	modAt                      []time.Time
	modAction, modActor        []string
	modTarget                  []*string
	modData                    [][]byte
	days                       map[time.Time]bool
}

func newRows(b chat.ArchiveBatch) (*rows, error) {
	r := &rows{days: map[time.Time]bool{}}
	for _, ev := range b.Events {
		if ev.Type == chat.EventMessage && ev.Message != nil {
			m := ev.Message
			r.msgID = append(r.msgID, m.ID)
			r.msgAt = append(r.msgAt, m.CreatedAt)
			r.userID = append(r.userID, m.User.ID)
			r.userName = append(r.userName, m.User.Name)
			r.userRole = append(r.userRole, string(m.User.Role))
			r.body = append(r.body, m.Text)
			r.bot = append(r.bot, m.Bot)
			r.days[day(m.CreatedAt)] = true
			continue
		}
		at := ev.At()
		if at.IsZero() {
			return nil, fmt.Errorf("archive: event %s of %s has no time", ev.Cursor, b.Channel)
		}
		data, err := json.Marshal(ev)
		if err != nil {
			return nil, err
		}
		r.evID = append(r.evID, ev.Cursor.ID)
		r.evSeq = append(r.evSeq, ev.Cursor.Seq)
		r.evAt = append(r.evAt, at)
		r.evType = append(r.evType, string(ev.Type))
		r.evData = append(r.evData, data)
		r.days[day(at)] = true
		if ev.Type == chat.EventMessageDeleted && ev.Message != nil && ev.Message.DeletedAt != nil {
			r.delID = append(r.delID, ev.Message.ID)
			r.delCreated = append(r.delCreated, ev.Message.CreatedAt)
			r.delAt = append(r.delAt, *ev.Message.DeletedAt)
		}
	}
	for _, e := range b.ModLog {
		id, ok := chat.ParseModID(e.ID)
		if !ok {
			return nil, fmt.Errorf("archive: moderation log id %q", e.ID)
		}
		data, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		at := time.UnixMilli(id.MS).UTC()
		r.modMS = append(r.modMS, id.MS)
		r.modN = append(r.modN, id.N)
		r.modAt = append(r.modAt, at)
		r.modAction = append(r.modAction, string(e.Action))
		r.modActor = append(r.modActor, e.Actor.ID)
		var target *string
		if e.Target != nil {
			target = &e.Target.ID
		}
		r.modTarget = append(r.modTarget, target)
		r.modData = append(r.modData, data)
		r.days[day(at)] = true
	}
	return r, nil
}
