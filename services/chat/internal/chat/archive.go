package chat

import (
	"context"
	"time"
)

// The durable archive: a store behind the engine's window (PostgreSQL,
// internal/pgarchive) that keeps every message, tombstone, moderation
// event and moderation log entry after the window has let them go. The
// engine stays the hot path: a send writes only to it, as before, and an
// Archiver moves what it stored into the archive afterwards. Both sides
// are ports, so the domain names no database.
//
// Exactly once, in effect: the archive keys every row by what the engine
// gave it (channel and message id, entry id, moderation log id) and
// ignores a row it holds already; a tombstone is an update to the row it
// replaces. So a batch written again (a replica died after the archive
// committed but before the engine's mark moved, two archivers raced) adds
// nothing, and the engine's mark moves only after the archive committed,
// so nothing is skipped.

// ArchiveBatch is what an engine has not yet archived of one channel, in
// channel order, and where the archiver's marks go once it is written.
type ArchiveBatch struct {
	Channel string
	// Events are the channel's log entries after the mark: messages
	// (EventMessage, as stored: a later message_deleted event in the same
	// or a later batch tombstones it) and every other event.
	Events []Event
	// ModLog are the channel's moderation log entries after its mark,
	// oldest first.
	ModLog []ModEntry
	// Mark is the cursor of the last event in Events (the mark as it was
	// when Events is empty); ModMark the id of the last entry in ModLog.
	Mark    Cursor
	ModMark ModID
	// Lost counts the messages the window let go before they were
	// archived (its memory cap forced a trim past the mark): a gap the
	// archiver reports, never silently.
	Lost int64
	// LostModLog is set when moderation log entries were let go before
	// they were archived (the log's own window or count bound).
	LostModLog bool
	// More: the engine holds more after this batch.
	More bool
	// Pending is how many messages of the channel remain unarchived
	// after this batch (the backlog).
	Pending int64
}

// Oldest is the time of the oldest event or entry in b (zero when b is
// empty): how far the archive lags behind for this channel.
func (b ArchiveBatch) Oldest() time.Time {
	var t time.Time
	for _, ev := range b.Events {
		if at := ev.At(); !at.IsZero() && (t.IsZero() || at.Before(t)) {
			t = at
		}
	}
	for _, e := range b.ModLog {
		if t.IsZero() || e.At.Before(t) {
			t = e.At
		}
	}
	return t
}

// Empty reports whether the batch carries nothing to write.
func (b ArchiveBatch) Empty() bool { return len(b.Events) == 0 && len(b.ModLog) == 0 }

// At is when the event happened: a message's creation, a deletion's time,
// a moderation's or a shield switch's; zero when it carries none.
func (ev Event) At() time.Time {
	switch {
	case ev.Type == EventMessageDeleted && ev.Message != nil && ev.Message.DeletedAt != nil:
		return *ev.Message.DeletedAt
	case ev.Message != nil:
		return ev.Message.CreatedAt
	case ev.Moderation != nil:
		return ev.Moderation.At
	case ev.Shield != nil:
		return ev.Shield.At
	}
	return time.Time{}
}

// ArchiveSource is what an engine gives the archiver.
type ArchiveSource interface {
	// ArchiveChannels pages through the channels that exist (those
	// claimed, ClaimChannel): from the start with cursor "", until the
	// returned cursor is "" again.
	ArchiveChannels(ctx context.Context, cursor string) (channels []string, next string, err error)
	// ArchivePending reads up to limit log events and up to limit
	// moderation log entries of channel after the archive's marks.
	ArchivePending(ctx context.Context, channel string, limit int) (ArchiveBatch, error)
	// ArchiveDone moves the channel's marks to b.Mark and b.ModMark, never
	// backwards (another archiver may have moved them further).
	ArchiveDone(ctx context.Context, b ArchiveBatch) error
	// ArchiveLease takes or renews, for owner, the lease of shard (one of
	// shards) for ttl; true when owner holds it now. Channels are spread
	// over the shards by name (ArchiveShard), so replicas split the work
	// and a shard whose holder died is taken over after ttl.
	ArchiveLease(ctx context.Context, owner string, shard, shards int, ttl time.Duration) (bool, error)
}

// ArchiveSink is the durable archive's side of the move.
type ArchiveSink interface {
	// ArchiveWrite stores b's events and entries in one transaction:
	// messages and entries it holds already are left as they are,
	// tombstones replace the text of the message they delete.
	ArchiveWrite(ctx context.Context, b ArchiveBatch) error
}

// ArchiveShard is the shard of channel among shards (FNV-1a of the name).
func ArchiveShard(channel string, shards int) int {
	h := uint32(2166136261)
	for i := 0; i < len(channel); i++ {
		h ^= uint32(channel[i])
		h *= 16777619
	}
	return int(h % uint32(shards))
}

// ArchiveReader reads the durable archive: what the engine's window let
// go, and replay by time.
type ArchiveReader interface {
	// ArchiveMessages returns the page p of channel's archived messages
	// (tombstones included), oldest first, as Store.Messages does with
	// every message the archive holds: the latest p.Limit below p.Before
	// (0: none), or the first p.Limit after p.After with p.FromStart.
	ArchiveMessages(ctx context.Context, channel string, p Page) ([]Message, error)
	// ArchiveReplay returns up to limit archived messages of channel
	// created in [from, to), in channel order, with ids above after.
	ArchiveReplay(ctx context.Context, channel string, from, to time.Time, after int64, limit int) ([]Message, error)
}

// ArchiveSearcher searches the archive's message texts.
type ArchiveSearcher interface {
	// ArchiveSearch returns up to q.Limit messages of q.Channel (not
	// tombstones) matching q, newest first, with ids below q.Before (0:
	// none).
	ArchiveSearch(ctx context.Context, q SearchQuery) ([]Message, error)
}

// SearchQuery is a parsed search (ParseSearch).
type SearchQuery struct {
	Channel string
	// Text is the words and "quoted phrases" to match (PostgreSQL's
	// websearch syntax: also `or` and -word), lower-cased, every script
	// alike (no stemming, no stop words).
	Text string
	// Prefixes are words given as word*: any word starting so matches.
	Prefixes []string
	UserID   string
	Before   int64
	Limit    int
}
