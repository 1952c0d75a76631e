package pgarchive

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/apistack/platform/services/chat/internal/chat"
)

var _ chat.ArchiveReader = (*Archive)(nil)

const messageColumns = "id, user_id, user_name, user_role, body, created_at, bot, deleted_at"

// scanMessages reads rows of messageColumns into messages of channel.
func scanMessages(rows pgx.Rows, channel string) ([]chat.Message, error) {
	out := []chat.Message{}
	for rows.Next() {
		var m chat.Message
		var role string
		var deletedAt *time.Time
		if err := rows.Scan(&m.ID, &m.User.ID, &m.User.Name, &role, &m.Text, &m.CreatedAt, &m.Bot, &deletedAt); err != nil {
			rows.Close()
			return nil, err
		}
		m.Channel = channel
		m.User.Role = chat.Role(role)
		m.CreatedAt = m.CreatedAt.UTC()
		if deletedAt != nil {
			m = m.Tombstone(*deletedAt)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// ArchiveMessages implements chat.ArchiveReader. A page is an id range of
// the primary key (channel, id, ...): every partition's index is probed
// and the pieces merged (Merge Append), which stays a handful of index
// reads for 60 daily partitions.
func (a *Archive) ArchiveMessages(ctx context.Context, channel string, p chat.Page) ([]chat.Message, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = chat.DefaultLimit
	}
	before := p.Before
	if before <= 0 {
		before = math.MaxInt64
	}
	var rows pgx.Rows
	var err error
	if p.After > 0 || p.FromStart {
		rows, err = a.pool.Query(ctx, "SELECT "+messageColumns+` FROM chat_messages
WHERE channel = $1 AND id > $2 AND id < $3 ORDER BY id LIMIT $4`, channel, p.After, before, limit)
	} else {
		rows, err = a.pool.Query(ctx, "SELECT "+messageColumns+` FROM chat_messages
WHERE channel = $1 AND id < $2 ORDER BY id DESC LIMIT $3`, channel, before, limit)
	}
	if err != nil {
		return nil, chat.Unavailable("read the archive", err)
	}
	ms, err := scanMessages(rows, channel)
	if err != nil {
		return nil, chat.Unavailable("read the archive", err)
	}
	if !(p.After > 0 || p.FromStart) {
		slices.Reverse(ms)
	}
	return ms, nil
}

// ArchiveReplay implements chat.ArchiveReader: the time range prunes the
// partitions, (channel, created_at, id) finds the range in each.
func (a *Archive) ArchiveReplay(ctx context.Context, channel string, from, to time.Time, after int64, limit int) ([]chat.Message, error) {
	rows, err := a.pool.Query(ctx, "SELECT "+messageColumns+` FROM chat_messages
WHERE channel = $1 AND created_at >= $2 AND created_at < $3 AND id > $4 ORDER BY id LIMIT $5`, channel, from, to, after, limit)
	if err != nil {
		return nil, chat.Unavailable("read the archive", err)
	}
	ms, err := scanMessages(rows, channel)
	if err != nil {
		return nil, chat.Unavailable("read the archive", fmt.Errorf("replay: %w", err))
	}
	return ms, nil
}

var _ chat.ArchiveSearcher = (*Archive)(nil)

// ArchiveSearch implements chat.ArchiveSearcher with the GIN index on
// to_tsvector('simple', body): the websearch text and each prefix are
// tsqueries ANDed together. The prefixes are letters and digits only
// (chat.ParseSearch), so quoting them as lexemes is safe.
func (a *Archive) ArchiveSearch(ctx context.Context, q chat.SearchQuery) ([]chat.Message, error) {
	var prefix string
	for i, p := range q.Prefixes {
		if i > 0 {
			prefix += " & "
		}
		prefix += "'" + p + "':*"
	}
	before := q.Before
	if before <= 0 {
		before = math.MaxInt64
	}
	rows, err := a.pool.Query(ctx, "SELECT "+messageColumns+` FROM chat_messages
WHERE channel = $1 AND deleted_at IS NULL AND id < $2 AND ($3 = '' OR user_id = $3)
AND to_tsvector('simple', body) @@ (CASE WHEN $4 = '' THEN ''::tsquery ELSE websearch_to_tsquery('simple', $4) END
	&& CASE WHEN $5 = '' THEN ''::tsquery ELSE to_tsquery('simple', $5) END)
ORDER BY id DESC LIMIT $6`, q.Channel, before, q.UserID, q.Text, prefix, q.Limit)
	if err != nil {
		return nil, chat.Unavailable("search the archive", err)
	}
	ms, err := scanMessages(rows, q.Channel)
	if err != nil {
		return nil, chat.Unavailable("search the archive", err)
	}
	return ms, nil
}
