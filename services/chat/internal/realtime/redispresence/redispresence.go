// Package redispresence keeps live delivery's presence counts in Redis, so
// every replica reports the same number of connections in a channel.
package redispresence

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// report sets (or withdraws) one replica's count in the channel's hash,
// drops the entries of replicas that stopped reporting, and returns the
// sum, in one step so two replicas never double-count or resurrect a
// stale entry. Values are "<count>:<expiry ms>"; the clock is Redis's own
// (TIME), so replicas' clocks need not agree.
var report = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
if tonumber(ARGV[2]) > 0 then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ':' .. (now + ttl))
else
  redis.call('HDEL', KEYS[1], ARGV[1])
end
local all = redis.call('HGETALL', KEYS[1])
local total = 0
for i = 1, #all, 2 do
  local c, exp = string.match(all[i + 1], '^(%d+):(%d+)$')
  if c == nil or tonumber(exp) < now then
    redis.call('HDEL', KEYS[1], all[i])
  else
    total = total + tonumber(c)
  end
end
if total > 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return total
`)

// Presence is the Redis presence store.
type Presence struct {
	rdb    redis.UniversalClient
	prefix string
	ttl    time.Duration
}

// New returns a presence store on rdb. Keys start with prefix (default
// "chat:") and share the channel's hash tag with the Redis engine's keys;
// a replica's count expires ttl after its last report (default 30 s), so
// reports must come more often than that.
func New(rdb redis.UniversalClient, prefix string, ttl time.Duration) *Presence {
	if prefix == "" {
		prefix = "chat:"
	}
	if ttl <= 0 {
		ttl = 30 * time.Second
	}
	return &Presence{rdb: rdb, prefix: prefix, ttl: ttl}
}

// Report records this replica's count in channel and returns the total.
func (p *Presence) Report(ctx context.Context, channel, replica string, n int) (int, error) {
	key := p.prefix + "{ch:" + channel + "}:presence"
	total, err := report.Run(ctx, p.rdb, []string{key}, replica, n, p.ttl.Milliseconds()).Int()
	if err != nil {
		return 0, fmt.Errorf("report presence in %s: %w", channel, err)
	}
	return total, nil
}

// ReportBatch implements realtime.BatchPresence: one pipeline for every
// channel (a cluster client splits it per node), so Redis reads them
// together and, with appendfsync always, flushes its log once for them.
func (p *Presence) ReportBatch(ctx context.Context, replica string, channels []string, counts []int) ([]int, error) {
	cmds := make([]*redis.Cmd, len(channels))
	_, err := p.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, ch := range channels {
			cmds[i] = report.Eval(ctx, pipe, []string{p.prefix + "{ch:" + ch + "}:presence"}, replica, counts[i], p.ttl.Milliseconds())
		}
		return nil
	})
	totals := make([]int, len(channels))
	ok := 0
	for i, c := range cmds {
		total, cerr := c.Int()
		if cerr != nil {
			totals[i] = -1
			continue
		}
		totals[i] = total
		ok++
	}
	if ok == 0 && err != nil {
		return nil, fmt.Errorf("report presence of %d channels: %w", len(channels), err)
	}
	return totals, nil
}
