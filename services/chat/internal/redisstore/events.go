package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/redis/go-redis/v9"
)

func cursorID(c chat.Cursor) string {
	return strconv.FormatInt(c.ID, 10) + "-" + strconv.FormatInt(c.Seq, 10)
}

func parseEntryID(id string) (chat.Cursor, error) {
	ms, seq, ok := strings.Cut(id, "-")
	if !ok {
		return chat.Cursor{}, fmt.Errorf("stream id %q", id)
	}
	a, err1 := strconv.ParseInt(ms, 10, 64)
	b, err2 := strconv.ParseInt(seq, 10, 64)
	if err1 != nil || err2 != nil {
		return chat.Cursor{}, fmt.Errorf("stream id %q", id)
	}
	return chat.Cursor{ID: a, Seq: b}, nil
}

// entryCursor is the cursor of a stream entry: its id, and its epoch
// from the "e" field (none in entries written before epochs).
func entryCursor(x redis.XMessage) (chat.Cursor, error) {
	cur, err := parseEntryID(x.ID)
	if err != nil {
		return chat.Cursor{}, err
	}
	if e, ok := x.Values["e"].(string); ok {
		if cur.Epoch, err = chat.ParseEpoch(e); err != nil {
			return chat.Cursor{}, fmt.Errorf("stream entry %s: %w", x.ID, err)
		}
	}
	return cur, nil
}

// decode turns a stream entry into an event: the entry id and epoch are
// the cursor (and the id the message id), the "d" field the event without
// them.
func decode(channel string, x redis.XMessage) (chat.Event, error) {
	cur, err := entryCursor(x)
	if err != nil {
		return chat.Event{}, err
	}
	d, _ := x.Values["d"].(string)
	var ev chat.Event
	if err := json.Unmarshal([]byte(d), &ev); err != nil {
		return chat.Event{}, fmt.Errorf("decode stream entry %s: %w", x.ID, err)
	}
	ev.Cursor = cur
	ev.Channel = channel
	if ev.Type == chat.EventMessage && ev.Message != nil {
		ev.Message.ID = cur.ID
		ev.Message.Channel = channel
	}
	return ev, nil
}

// bounds reads the last message id and the trim mark.
func (s *Store) bounds(ctx context.Context, channel string) (last, trimmed int64, err error) {
	vals, err := s.rdb.MGet(ctx, s.ck(channel, "seq"), s.ck(channel, "trim")).Result()
	if err != nil {
		return 0, 0, fail("read channel bounds", err)
	}
	if v, ok := vals[0].(string); ok {
		last, _ = strconv.ParseInt(v, 10, 64)
	}
	if v, ok := vals[1].(string); ok {
		trimmed = parseMark(v).ID
	}
	return last, trimmed, nil
}

// parseMark reads a trim mark: the last entry removed from the log, "<id>"
// for a message (as appendMessage writes it) or "<id>-<seq>" (liveNotice).
// A reader whose cursor is before it has missed something; the zero mark
// is none.
func parseMark(v string) chat.Cursor {
	c, _ := chat.ParseCursor(v)
	return c
}

// logCap bounds a channel's log in entries (liveNotice): twice the
// history, so the events among the last History messages always fit.
func (s *Store) logCap() int { return 2 * s.history }

// ReadEvents implements chat.EventLog. The trim mark is read in the same
// transaction as the entries, to tell a gap from a quiet channel.
func (s *Store) ReadEvents(ctx context.Context, channel string, after chat.Cursor, limit int) ([]chat.Event, error) {
	if limit <= 0 {
		limit = 100
	}
	log := s.ck(channel, "log")
	var xr *redis.XMessageSliceCmd
	var pos position
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		xr = p.XRangeN(ctx, log, "("+cursorID(after), "+", int64(limit))
		pos = s.readPosition(ctx, p, channel, after)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) || xr.Err() != nil {
		return nil, fail("read events", errors.Join(err, xr.Err()))
	}
	ok, err := pos.recoverable(after)
	if err != nil {
		return nil, fail("read events", err)
	}
	if !ok {
		return nil, chat.ErrHistoryGone
	}
	xs := xr.Val()
	out := make([]chat.Event, 0, len(xs))
	for _, x := range xs {
		ev, err := decode(channel, x)
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// Recoverable implements chat.EventLog.
func (s *Store) Recoverable(ctx context.Context, channel string, after chat.Cursor) (bool, error) {
	var pos position
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		pos = s.readPosition(ctx, p, channel, after)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, fail("read position", err)
	}
	ok, err := pos.recoverable(after)
	if err != nil {
		return false, fail("read position", err)
	}
	return ok, nil
}

// position is what tells whether a reader after a cursor missed nothing:
// the last message id, the trim mark, the log's last entry and, for a
// cursor with an epoch, the entry at the cursor. Read in one transaction
// with the events.
type position struct {
	seq, trim *redis.StringCmd
	head, at  *redis.XMessageSliceCmd
}

// readPosition queues position's reads on p.
func (s *Store) readPosition(ctx context.Context, p redis.Pipeliner, channel string, after chat.Cursor) position {
	log := s.ck(channel, "log")
	pos := position{
		seq:  p.Get(ctx, s.ck(channel, "seq")),
		trim: p.Get(ctx, s.ck(channel, "trim")),
		head: p.XRevRangeN(ctx, log, "+", "-", 1),
	}
	if after.Epoch != 0 {
		pos.at = p.XRange(ctx, log, cursorID(after), cursorID(after))
	}
	return pos
}

// recoverable judges after against the position: false when an event
// after it has been trimmed, when it lies past the log's last entry (the
// store was reset, or the client made it up), or when the entry it names
// has another epoch or is gone (the log lost its tail and handed the ids
// out again). The entry of a cursor right at the trim mark has just been
// trimmed: nothing after it is missing, so it passes without its epoch.
func (pos position) recoverable(after chat.Cursor) (bool, error) {
	for _, c := range []*redis.XMessageSliceCmd{pos.head, pos.at} {
		if c != nil && c.Err() != nil {
			return false, c.Err()
		}
	}
	last, _ := strconv.ParseInt(pos.seq.Val(), 10, 64)
	mark := parseMark(pos.trim.Val())
	if after.Less(mark) || after.ID > last {
		return false, nil
	}
	head := chat.Cursor{ID: last}
	if xs := pos.head.Val(); len(xs) > 0 {
		var err error
		if head, err = entryCursor(xs[0]); err != nil {
			return false, err
		}
	}
	if head.Less(after) {
		return false, nil
	}
	if pos.at == nil {
		return true, nil
	}
	xs := pos.at.Val()
	if len(xs) == 0 {
		return after.At(mark), nil
	}
	at, err := entryCursor(xs[0])
	if err != nil {
		return false, err
	}
	return at.Epoch == 0 || at.Epoch == after.Epoch, nil
}

// Head implements chat.EventLog.
func (s *Store) Head(ctx context.Context, channel string) (chat.Cursor, error) {
	xs, err := s.rdb.XRevRangeN(ctx, s.ck(channel, "log"), "+", "-", 1).Result()
	if err != nil {
		return chat.Cursor{}, fail("read head", err)
	}
	if len(xs) == 0 {
		last, _, err := s.bounds(ctx, channel)
		return chat.Cursor{ID: last}, err
	}
	return entryCursor(xs[0])
}
