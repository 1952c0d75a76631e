// Package redisq keeps webhooks, the pump's cursors and every endpoint's
// delivery queue in Redis, so they outlive any replica: a queue is a
// sorted set of delivery ids by due time, claimed by moving an id's due
// time past a claim period (a replica that dies holding it lets another
// send it then), with the records in a hash beside it.
package redisq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/webhooks"
)

// Keys, all in the one slot {webhooks} (a Redis Cluster runs each script
// on one node):
//
//	<prefix>{webhooks}:endpoints   hash id -> Endpoint json
//	<prefix>{webhooks}:perchannel  hash channel ("" platform) -> count
//	<prefix>{webhooks}:lease       the pump's owner, with a TTL
//	<prefix>{webhooks}:cursors     hash channel -> Cursor json
//	<prefix>{webhooks}:seq         counter ordering deliveries
//	<prefix>{webhooks}:q:<id>      zset delivery id -> due (ms): pending
//	<prefix>{webhooks}:d:<id>      hash delivery id -> Delivery json
//	<prefix>{webhooks}:all:<id>    zset delivery id -> seq: kept ones
//	<prefix>{webhooks}:done:<id>   list of finished ids, oldest first
type Store struct {
	rdb redis.UniversalClient
	p   string
}

var _ webhooks.Store = (*Store)(nil)

// New returns the store on rdb under prefix (CHAT_REDIS_PREFIX's).
func New(rdb redis.UniversalClient, prefix string) *Store {
	return &Store{rdb: rdb, p: prefix + "{webhooks}:"}
}

func unavailable(what string, err error) error { return chat.Unavailable("webhooks: "+what, err) }

func notFound(what string) error {
	return &chat.Error{Kind: chat.KindNotFound, Message: what + " not found"}
}

var createEndpoint = redis.NewScript(`
local n = tonumber(redis.call('HGET', KEYS[2], ARGV[3]) or '0')
if n >= tonumber(ARGV[4]) then return -1 end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[5]) then return -2 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HINCRBY', KEYS[2], ARGV[3], 1)
return 1
`)

// CreateEndpoint implements webhooks.Store.
func (s *Store) CreateEndpoint(ctx context.Context, e webhooks.Endpoint, maxChannel, maxTotal int) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	r, err := createEndpoint.Run(ctx, s.rdb, []string{s.p + "endpoints", s.p + "perchannel"}, e.ID, b, e.Channel, maxChannel, maxTotal).Int()
	if err != nil {
		return unavailable("create", err)
	}
	switch r {
	case -1:
		return chat.LimitReached(webhooks.QuotaWebhooks, maxChannel)
	case -2:
		return chat.LimitReached(webhooks.QuotaWebhooks, maxTotal)
	}
	return nil
}

// Endpoints implements webhooks.Store.
func (s *Store) Endpoints(ctx context.Context) ([]webhooks.Endpoint, error) {
	m, err := s.rdb.HGetAll(ctx, s.p+"endpoints").Result()
	if err != nil {
		return nil, unavailable("list", err)
	}
	out := make([]webhooks.Endpoint, 0, len(m))
	for _, v := range m {
		var e webhooks.Endpoint
		if err := json.Unmarshal([]byte(v), &e); err != nil {
			return nil, fmt.Errorf("webhooks: decode endpoint: %w", err)
		}
		out = append(out, e)
	}
	return out, nil
}

// Endpoint implements webhooks.Store.
func (s *Store) Endpoint(ctx context.Context, id string) (webhooks.Endpoint, error) {
	v, err := s.rdb.HGet(ctx, s.p+"endpoints", id).Result()
	if errors.Is(err, redis.Nil) {
		return webhooks.Endpoint{}, notFound("webhook")
	}
	if err != nil {
		return webhooks.Endpoint{}, unavailable("read", err)
	}
	var e webhooks.Endpoint
	if err := json.Unmarshal([]byte(v), &e); err != nil {
		return webhooks.Endpoint{}, fmt.Errorf("webhooks: decode endpoint: %w", err)
	}
	return e, nil
}

var deleteEndpoint = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return 0 end
local e = cjson.decode(v)
local ch = e['channel'] or ''
redis.call('HDEL', KEYS[1], ARGV[1])
if redis.call('HINCRBY', KEYS[2], ch, -1) <= 0 then redis.call('HDEL', KEYS[2], ch) end
local p = ARGV[2]
redis.call('DEL', p .. 'q:' .. ARGV[1], p .. 'd:' .. ARGV[1], p .. 'all:' .. ARGV[1], p .. 'done:' .. ARGV[1])
return 1
`)

// DeleteEndpoint implements webhooks.Store.
func (s *Store) DeleteEndpoint(ctx context.Context, id string) error {
	r, err := deleteEndpoint.Run(ctx, s.rdb, []string{s.p + "endpoints", s.p + "perchannel"}, id, s.p).Int()
	if err != nil {
		return unavailable("delete", err)
	}
	if r == 0 {
		return notFound("webhook")
	}
	return nil
}

var lease = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`)

// Lease implements webhooks.Store.
func (s *Store) Lease(ctx context.Context, owner string, ttl time.Duration) (bool, error) {
	r, err := lease.Run(ctx, s.rdb, []string{s.p + "lease"}, owner, ttl.Milliseconds()).Int()
	if err != nil {
		return false, unavailable("lease", err)
	}
	return r == 1, nil
}

// Cursor implements webhooks.Store.
func (s *Store) Cursor(ctx context.Context, channel string) (webhooks.Cursor, error) {
	v, err := s.rdb.HGet(ctx, s.p+"cursors", channel).Result()
	if errors.Is(err, redis.Nil) {
		return webhooks.Cursor{}, nil
	}
	if err != nil {
		return webhooks.Cursor{}, unavailable("read cursor", err)
	}
	var c webhooks.Cursor
	if err := json.Unmarshal([]byte(v), &c); err != nil {
		return webhooks.Cursor{}, fmt.Errorf("webhooks: decode cursor: %w", err)
	}
	return c, nil
}

// enqueue: KEYS lease, cursors, seq, endpoints. ARGV owner, channel,
// cursor json, now ms, max queue, prefix, then (endpoint, id, json)
// triples. The lease check fences a pump that lost its lease (paused
// past it) from writing after the next owner started.
var enqueue = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
local now, maxq, p = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local dropped = 0
for i = 7, #ARGV, 3 do
  local ep, id, rec = ARGV[i], ARGV[i+1], ARGV[i+2]
  if redis.call('HEXISTS', KEYS[4], ep) == 1 then
    local d = p .. 'd:' .. ep
    if redis.call('HEXISTS', d, id) == 0 then
      local q = p .. 'q:' .. ep
      if redis.call('ZCARD', q) >= maxq then
        dropped = dropped + 1
      else
        redis.call('HSET', d, id, rec)
        redis.call('ZADD', q, now, id)
        redis.call('ZADD', p .. 'all:' .. ep, redis.call('INCR', KEYS[3]), id)
      end
    end
  end
end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
return dropped
`)

// Enqueue implements webhooks.Store.
func (s *Store) Enqueue(ctx context.Context, owner, channel string, c webhooks.Cursor, ds []webhooks.Delivery, now time.Time, maxQueue int) (bool, int, error) {
	cb, err := json.Marshal(c)
	if err != nil {
		return false, 0, err
	}
	args := []any{owner, channel, cb, now.UnixMilli(), maxQueue, s.p}
	for _, d := range ds {
		d.Status, d.NextAt = webhooks.StatusPending, &now
		b, err := json.Marshal(d)
		if err != nil {
			return false, 0, err
		}
		args = append(args, d.Endpoint, d.ID, b)
	}
	r, err := enqueue.Run(ctx, s.rdb, []string{s.p + "lease", s.p + "cursors", s.p + "seq", s.p + "endpoints"}, args...).Int()
	if err != nil {
		return false, 0, unavailable("enqueue", err)
	}
	if r < 0 {
		return false, 0, nil
	}
	return true, r, nil
}

var claim = redis.NewScript(`
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #ids == 0 then return {} end
for _, id in ipairs(ids) do redis.call('ZADD', KEYS[1], ARGV[3], id) end
return redis.call('HMGET', KEYS[2], unpack(ids))
`)

func decodeAll(vals []any) ([]webhooks.Delivery, error) {
	out := make([]webhooks.Delivery, 0, len(vals))
	for _, v := range vals {
		sv, ok := v.(string)
		if !ok {
			continue
		}
		var d webhooks.Delivery
		if err := json.Unmarshal([]byte(sv), &d); err != nil {
			return nil, fmt.Errorf("webhooks: decode delivery: %w", err)
		}
		out = append(out, d)
	}
	return out, nil
}

// Claim implements webhooks.Store.
func (s *Store) Claim(ctx context.Context, endpoint string, now time.Time, n int, claimFor time.Duration) ([]webhooks.Delivery, error) {
	vals, err := claim.Run(ctx, s.rdb, []string{s.p + "q:" + endpoint, s.p + "d:" + endpoint}, now.UnixMilli(), n, now.Add(claimFor).UnixMilli()).Slice()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable("claim", err)
	}
	return decodeAll(vals)
}

// finish: KEYS endpoints, q, d, all, done. ARGV endpoint id, keep, then
// per outcome: delivery id, delivery json (as it is now), due ms (”
// when finished), ok (1/0), attempt time (RFC 3339).
var finish = redis.NewScript(`
local ev = redis.call('HGET', KEYS[1], ARGV[1])
if not ev then return false end
local failed = false
local changed = false
local e = nil
for i = 3, #ARGV, 5 do
  local id, rec, due, ok, at = ARGV[i], ARGV[i+1], ARGV[i+2], ARGV[i+3], ARGV[i+4]
  -- A success of an endpoint that is not failing (the common case)
  -- leaves the endpoint's record alone: no JSON decoded or written.
  if ok ~= '1' or (e and e['failing_since']) or (not e and string.find(ev, '"failing_since"', 1, true)) then
    if not e then e = cjson.decode(ev) end
    if ok == '1' then e['failing_since'] = nil
    else
      failed = true
      if not e['failing_since'] then e['failing_since'] = at end
    end
    changed = true
  end
  if redis.call('HEXISTS', KEYS[3], id) == 1 then
    redis.call('HSET', KEYS[3], id, rec)
    if due ~= '' then
      redis.call('ZADD', KEYS[2], due, id)
    else
      redis.call('ZREM', KEYS[2], id)
      redis.call('RPUSH', KEYS[5], id)
      while redis.call('LLEN', KEYS[5]) > tonumber(ARGV[2]) do
        local old = redis.call('LPOP', KEYS[5])
        if not redis.call('ZSCORE', KEYS[2], old) then
          redis.call('HDEL', KEYS[3], old)
          redis.call('ZREM', KEYS[4], old)
        end
      end
    end
  end
end
if changed then
  ev = cjson.encode(e)
  redis.call('HSET', KEYS[1], ARGV[1], ev)
end
if failed then return ev end
return ''
`)

// Finish implements webhooks.Store. Each record is rewritten whole from
// the claimed copy with its attempt added: only the replica holding the
// claim writes it.
func (s *Store) Finish(ctx context.Context, endpoint string, outs []webhooks.Outcome) (webhooks.Endpoint, error) {
	args := []any{endpoint, webhooks.KeepDone}
	for _, o := range outs {
		d := o.Delivery
		d.AttemptCount++
		d.Attempts = append(d.Attempts, o.Attempt)
		if len(d.Attempts) > webhooks.KeepAttempts {
			d.Attempts = d.Attempts[len(d.Attempts)-webhooks.KeepAttempts:]
		}
		b, err := json.Marshal(d)
		if err != nil {
			return webhooks.Endpoint{}, err
		}
		due := ""
		if d.Status == webhooks.StatusPending && d.NextAt != nil {
			due = strconv.FormatInt(d.NextAt.UnixMilli(), 10)
		}
		ok := "0"
		if o.OK {
			ok = "1"
		}
		args = append(args, d.ID, b, due, ok, o.Attempt.At.UTC().Format(time.RFC3339Nano))
	}
	p := s.p
	v, err := finish.Run(ctx, s.rdb, []string{p + "endpoints", p + "q:" + endpoint, p + "d:" + endpoint, p + "all:" + endpoint, p + "done:" + endpoint}, args...).Text()
	if errors.Is(err, redis.Nil) {
		return webhooks.Endpoint{}, notFound("webhook")
	}
	if err != nil {
		return webhooks.Endpoint{}, unavailable("finish", err)
	}
	if v == "" {
		return webhooks.Endpoint{}, nil
	}
	var e webhooks.Endpoint
	if err := json.Unmarshal([]byte(v), &e); err != nil {
		return webhooks.Endpoint{}, fmt.Errorf("webhooks: decode endpoint: %w", err)
	}
	return e, nil
}

var disable = redis.NewScript(`
local ev = redis.call('HGET', KEYS[1], ARGV[1])
if not ev then return -1 end
local e = cjson.decode(ev)
if e['disabled_at'] then return 0 end
e['disabled_at'] = ARGV[2]
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(e))
return 1
`)

// Disable implements webhooks.Store.
func (s *Store) Disable(ctx context.Context, id string, at time.Time) (bool, error) {
	r, err := disable.Run(ctx, s.rdb, []string{s.p + "endpoints"}, id, at.UTC().Format(time.RFC3339Nano)).Int()
	if err != nil {
		return false, unavailable("disable", err)
	}
	if r < 0 {
		return false, notFound("webhook")
	}
	return r == 1, nil
}

// Deliveries implements webhooks.Store.
func (s *Store) Deliveries(ctx context.Context, endpoint string, limit int) ([]webhooks.Delivery, error) {
	if _, err := s.Endpoint(ctx, endpoint); err != nil {
		return nil, err
	}
	ids, err := s.rdb.ZRevRange(ctx, s.p+"all:"+endpoint, 0, int64(limit-1)).Result()
	if err != nil {
		return nil, unavailable("deliveries", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	vals, err := s.rdb.HMGet(ctx, s.p+"d:"+endpoint, ids...).Result()
	if err != nil {
		return nil, unavailable("deliveries", err)
	}
	return decodeAll(vals)
}

// retry: KEYS q, d, done. ARGV id, now ms, record json with status
// pending (from Go: the record read, changed).
var retry = redis.NewScript(`
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then return 0 end
redis.call('LREM', KEYS[3], 0, ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1
`)

// Retry implements webhooks.Store.
func (s *Store) Retry(ctx context.Context, endpoint, id string, now time.Time) (webhooks.Delivery, error) {
	v, err := s.rdb.HGet(ctx, s.p+"d:"+endpoint, id).Result()
	if errors.Is(err, redis.Nil) {
		return webhooks.Delivery{}, notFound("delivery")
	}
	if err != nil {
		return webhooks.Delivery{}, unavailable("retry", err)
	}
	var d webhooks.Delivery
	if err := json.Unmarshal([]byte(v), &d); err != nil {
		return webhooks.Delivery{}, fmt.Errorf("webhooks: decode delivery: %w", err)
	}
	d.Status, d.NextAt = webhooks.StatusPending, &now
	b, err := json.Marshal(d)
	if err != nil {
		return webhooks.Delivery{}, err
	}
	r, err := retry.Run(ctx, s.rdb, []string{s.p + "q:" + endpoint, s.p + "d:" + endpoint, s.p + "done:" + endpoint}, id, now.UnixMilli(), b).Int()
	if err != nil {
		return webhooks.Delivery{}, unavailable("retry", err)
	}
	if r == 0 {
		return webhooks.Delivery{}, notFound("delivery")
	}
	return d, nil
}

// Pending implements webhooks.Store.
func (s *Store) Pending(ctx context.Context, endpoint string) (int, error) {
	n, err := s.rdb.ZCard(ctx, s.p+"q:"+endpoint).Result()
	if err != nil {
		return 0, unavailable("pending", err)
	}
	return int(n), nil
}
