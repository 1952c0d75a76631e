package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// The moderation log of a channel is the Stream <prefix>{ch:<name>}:modlog,
// in the channel's slot, so every script that acts in a channel records
// its entry in the same step (modLogAppend). Entry ids are "<ms>-<n>":
// the entry's time on the caller's clock, or the last entry's when that
// is later (replicas' clocks differ a little), so ids keep the log's
// order and are the pages' cursors. Each append trims the stream to
// chat.MaxModLogPerChannel entries and to chat.ModLogWindow before the
// entry's time, and lets the key expire a window after the last append.

// modLogAppend is the Lua that records one entry: mentry is its json (""
// for none), mat its time in ms, modk the channel's modlog key.
var modLogAppend = fmt.Sprintf(`
if mentry ~= '' then
  local mms = tonumber(mat)
  local mtop = redis.call('XREVRANGE', modk, '+', '-', 'COUNT', 1)
  if #mtop > 0 then
    local lms = tonumber(string.match(mtop[1][1], '^(%%d+)'))
    if lms > mms then mms = lms end
  end
  redis.call('XADD', modk, 'MAXLEN', %d, mms .. '-*', 'd', mentry)
  redis.call('XTRIM', modk, 'MINID', tonumber(mat) - %d)
  redis.call('PEXPIRE', modk, %d)
end
`, chat.MaxModLogPerChannel, chat.ModLogWindow.Milliseconds(), chat.ModLogWindow.Milliseconds())

// appendModLog records one entry on its own. KEYS: modlog. ARGV: entry
// json, time ms.
var appendModLog = redis.NewScript(`
local modk, mentry, mat = KEYS[1], ARGV[1], ARGV[2]
` + modLogAppend + `
return 1
`)

func (s *Store) modKey(channel string) string { return s.ck(channel, "modlog") }

// modArgs are modLogAppend's arguments for e: its json and its time in
// ms; "" and 0 for none.
func modArgs(e *chat.ModEntry) ([]any, error) {
	if e == nil || e.Action == "" {
		return []any{"", 0}, nil
	}
	c := *e
	c.ID = ""
	data, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode moderation log entry: %w", err)
	}
	return []any{data, e.At.UnixMilli()}, nil
}

// AppendModLog implements chat.Store (appendModLog).
func (s *Store) AppendModLog(ctx context.Context, e chat.ModEntry) error {
	args, err := modArgs(&e)
	if err != nil {
		return err
	}
	if err := appendModLog.Run(ctx, s.rdb, []string{s.modKey(e.Channel)}, args...).Err(); err != nil {
		return failWrite("append moderation log", err)
	}
	return nil
}

// ModLog implements chat.Store.
func (s *Store) ModLog(ctx context.Context, channel string, before *chat.ModID, limit int, now time.Time) ([]chat.ModEntry, error) {
	from := "+"
	if before != nil {
		from = "(" + before.String()
	}
	cut := now.Add(-chat.ModLogWindow).UnixMilli()
	xs, err := s.rdb.XRevRangeN(ctx, s.modKey(channel), from, strconv.FormatInt(cut, 10), int64(limit)).Result()
	if err != nil {
		return nil, fail("read moderation log", err)
	}
	out := make([]chat.ModEntry, 0, len(xs))
	for _, x := range xs {
		data, _ := x.Values["d"].(string)
		var e chat.ModEntry
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			return nil, fmt.Errorf("decode moderation log entry %s: %w", x.ID, err)
		}
		e.ID = x.ID
		out = append(out, e)
	}
	return out, nil
}
