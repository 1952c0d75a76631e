package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// The archive's side of the engine (chat.ArchiveSource). Each channel has
// two marks in its slot: archived, the last log entry the archive holds
// ("<id>-<seq>"), and modarchived, the last moderation log entry
// ("<ms>-<n>"). appendMessage does not trim the log past the archived
// mark while Options.ArchiveHold is set (see archiveHoldLua), up to that
// many messages; past it the window trims anyway, and the archiver finds
// the gap (the trim mark beyond its mark) and reports it.
//
// The archivers' shard leases are keys of their own slot,
// <prefix>{archive}:lease:<shard>, holding the owner's name.

var _ chat.ArchiveSource = (*Store)(nil)

// archivedSuffix names the archived mark; archiveHoldLua finds it from
// the seq key's name, which has the same prefix ("{ch:<name>}:").
const archivedSuffix = "archived"

// archiveHoldLua is the Lua of the trim's hold: with hold > 0 (ARGV[15],
// the engine's ArchiveHold) the cut moves back to the archived mark, but
// never keeps more than hold messages. Expects locals id and cut; the
// mark's key is the seq key (KEYS[1], "...:seq") with "archived" for
// "seq" (the same channel's slot).
const archiveHoldLua = `
local hold = tonumber(ARGV[15])
if hold > 0 and cut > 0 then
  local ak = string.sub(KEYS[1], 1, -4) .. '` + archivedSuffix + `'
  local done = tonumber(string.match(redis.call('GET', ak) or '0', '^%d+'))
  if done < cut then cut = math.max(done, id - hold) end
end
`

// archiveDone moves the marks forward only. KEYS: archived, modarchived.
// ARGV: the log mark, the moderation log mark ("" leaves one alone).
var archiveDone = redis.NewScript(`
local function forward(k, v)
  if v == '' then return end
  local cur = redis.call('GET', k)
  if cur then
    local a1, a2 = string.match(cur, '^(%d+)-(%d+)$')
    local b1, b2 = string.match(v, '^(%d+)-(%d+)$')
    a1, a2, b1, b2 = tonumber(a1), tonumber(a2), tonumber(b1), tonumber(b2)
    if b1 < a1 or (b1 == a1 and b2 <= a2) then return end
  end
  redis.call('SET', k, v)
end
forward(KEYS[1], ARGV[1])
forward(KEYS[2], ARGV[2])
return 1
`)

// archiveLease takes a free lease or renews one's own. KEYS: lease.
// ARGV: owner, ttl ms. Returns 1 held, 0 someone else's.
var archiveLease = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`)

// ArchiveChannels implements chat.ArchiveSource: SSCAN over the claimed
// channels.
func (s *Store) ArchiveChannels(ctx context.Context, cursor string) ([]string, string, error) {
	var c uint64
	if cursor != "" {
		var err error
		if c, err = strconv.ParseUint(cursor, 10, 64); err != nil {
			return nil, "", fmt.Errorf("archive channels: cursor %q", cursor)
		}
	}
	chs, next, err := s.rdb.SScan(ctx, s.prefix+"{channels}:all", c, "", 500).Result()
	if err != nil {
		return nil, "", fail("list channels", err)
	}
	if next == 0 {
		return chs, "", nil
	}
	return chs, strconv.FormatUint(next, 10), nil
}

// ArchivePending implements chat.ArchiveSource: the marks, the bounds and
// the entries after the marks are read in one transaction, so the gap
// check sees the log as the entries were read.
func (s *Store) ArchivePending(ctx context.Context, channel string, limit int) (chat.ArchiveBatch, error) {
	b := chat.ArchiveBatch{Channel: channel}
	var mark, modMark, seq, trim *redis.StringCmd
	var info *redis.XInfoStreamCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		mark = p.Get(ctx, s.ck(channel, archivedSuffix))
		modMark = p.Get(ctx, s.ck(channel, "modarchived"))
		seq = p.Get(ctx, s.ck(channel, "seq"))
		trim = p.Get(ctx, s.ck(channel, "trim"))
		info = p.XInfoStream(ctx, s.modKey(channel))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) && !isNoSuchKey(err) {
		return b, fail("read archive marks", err)
	}
	last, _ := strconv.ParseInt(seq.Val(), 10, 64)
	trimmed := parseMark(trim.Val())
	from := "-"
	if v := mark.Val(); v != "" {
		b.Mark = parseMark(v)
		if b.Mark.Less(trimmed) {
			// The window let go of messages the archive did not hold.
			b.Lost = trimmed.ID - b.Mark.ID
			b.Mark = trimmed
		}
		from = "(" + cursorID(b.Mark)
	} else if trimmed != (chat.Cursor{}) {
		// The first pass over a channel whose window had moved before
		// archiving was on: what is gone was never the archive's.
		b.Mark = trimmed
		from = "(" + cursorID(trimmed)
	}
	modFrom := "-"
	if v := modMark.Val(); v != "" {
		id, ok := chat.ParseModID(v)
		if !ok {
			return b, fmt.Errorf("archive: moderation log mark %q of %s", v, channel)
		}
		b.ModMark = id
		modFrom = "(" + v
		if info.Err() == nil {
			if del, ok := chat.ParseModID(info.Val().MaxDeletedEntryID); ok && b.ModMark.Less(del) {
				b.LostModLog = true
				b.ModMark = del
				modFrom = "(" + del.String()
			}
		}
	}
	var xs, ms *redis.XMessageSliceCmd
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		xs = p.XRangeN(ctx, s.ck(channel, "log"), from, "+", int64(limit)+1)
		ms = p.XRangeN(ctx, s.modKey(channel), modFrom, "+", int64(limit)+1)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return b, fail("read pending entries", err)
	}
	entries := xs.Val()
	if len(entries) > limit {
		entries, b.More = entries[:limit], true
	}
	for _, x := range entries {
		ev, err := decode(channel, x)
		if err != nil {
			return b, err
		}
		b.Events = append(b.Events, ev)
		b.Mark = ev.Cursor
	}
	mods := ms.Val()
	if len(mods) > limit {
		mods, b.More = mods[:limit], true
	}
	for _, x := range mods {
		data, _ := x.Values["d"].(string)
		var e chat.ModEntry
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			return b, fmt.Errorf("decode moderation log entry %s: %w", x.ID, err)
		}
		e.ID, e.Channel = x.ID, channel
		id, ok := chat.ParseModID(x.ID)
		if !ok {
			return b, fmt.Errorf("moderation log entry id %q", x.ID)
		}
		b.ModMark = id
		b.ModLog = append(b.ModLog, e)
	}
	b.Pending = max(last-b.Mark.ID, 0)
	return b, nil
}

// isNoSuchKey is XINFO STREAM's error for a moderation log not there.
func isNoSuchKey(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && rerr.Error() == "ERR no such key"
}

// ArchiveDone implements chat.ArchiveSource.
func (s *Store) ArchiveDone(ctx context.Context, b chat.ArchiveBatch) error {
	var mark, modMark string
	if b.Mark != (chat.Cursor{}) {
		mark = cursorID(b.Mark)
	}
	if b.ModMark != (chat.ModID{}) {
		modMark = b.ModMark.String()
	}
	if mark == "" && modMark == "" {
		return nil
	}
	err := archiveDone.Run(ctx, s.rdb, []string{s.ck(b.Channel, archivedSuffix), s.ck(b.Channel, "modarchived")}, mark, modMark).Err()
	if err != nil {
		return fail("move archive marks", err)
	}
	return nil
}

// ArchiveLease implements chat.ArchiveSource.
func (s *Store) ArchiveLease(ctx context.Context, owner string, shard, shards int, ttl time.Duration) (bool, error) {
	key := s.prefix + "{archive}:lease:" + strconv.Itoa(shards) + ":" + strconv.Itoa(shard)
	n, err := archiveLease.Run(ctx, s.rdb, []string{key}, owner, ttl.Milliseconds()).Int()
	if err != nil {
		return false, fail("archive lease", err)
	}
	return n == 1, nil
}
