package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// A user's standing in a channel is two fields in the channel's slot: its
// role in the channel's roles hash and its ban or timeout, as json, in the
// bans hash. Keeping roles apart lets the role limit count them with
// HLEN; both are read with one HGET each, in the same pipeline as the
// rest of a send.

// standingCmds are the reads of one standing, queued on a pipeline.
type standingCmds struct {
	role, ban *redis.StringCmd
}

func (s *Store) queueStanding(ctx context.Context, p redis.Pipeliner, channel, id string) standingCmds {
	return standingCmds{role: p.HGet(ctx, s.ck(channel, "roles"), id), ban: p.HGet(ctx, s.ck(channel, "bans"), id)}
}

// standing reads what queueStanding queued.
func (c standingCmds) standing(op string) (chat.Standing, error) {
	var st chat.Standing
	for _, cmd := range []*redis.StringCmd{c.role, c.ban} {
		if err := cmd.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return chat.Standing{}, failPipeline(op, err)
		}
	}
	if v := c.ban.Val(); v != "" {
		if err := json.Unmarshal([]byte(v), &st); err != nil {
			return chat.Standing{}, fmt.Errorf("%s: decode ban: %w", op, err)
		}
	}
	st.Role = chat.Role(c.role.Val())
	return st, nil
}

// Standing implements chat.Store.
func (s *Store) Standing(ctx context.Context, channel, id string) (chat.Standing, error) {
	var cmds standingCmds
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		cmds = s.queueStanding(ctx, p, channel, id)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return chat.Standing{}, fail("read standing", err)
	}
	return cmds.standing("read standing")
}

// ChannelRoles implements chat.Store.
func (s *Store) ChannelRoles(ctx context.Context, channel string) (map[string]chat.Role, error) {
	m, err := s.rdb.HGetAll(ctx, s.ck(channel, "roles")).Result()
	if err != nil {
		return nil, fail("list channel roles", err)
	}
	out := make(map[string]chat.Role, len(m))
	for id, r := range m {
		out[id] = chat.Role(r)
	}
	return out, nil
}

// SetChannelRole implements chat.Store.
func (s *Store) SetChannelRole(ctx context.Context, channel, id string, ifRole, role chat.Role, max int, log *chat.ModEntry) error {
	margs, err := modArgs(log)
	if err != nil {
		return err
	}
	err = setChannelRole.Run(ctx, s.rdb, []string{s.ck(channel, "roles"), s.modKey(channel)},
		append([]any{id, string(ifRole), string(role), max}, margs...)...).Err()
	if err != nil && strings.HasPrefix(err.Error(), "LIMIT roles") {
		return chat.LimitReached(chat.QuotaChannelRoles, max)
	}
	return scriptStatus("set channel role", err, "user's role in the channel")
}

// SetModeration implements chat.Store: the standing and its event are one
// script, in the channel's slot, so even on a Cluster the event needs no
// pending step (UpdateUser's).
func (s *Store) SetModeration(ctx context.Context, channel, id string, m chat.Standing, ev *chat.Event, log *chat.ModEntry) error {
	m.Role = "" // kept in the roles hash
	var data []byte
	if m != (chat.Standing{}) {
		var err error
		if data, err = json.Marshal(m); err != nil {
			return fmt.Errorf("encode ban: %w", err)
		}
	}
	margs, err := modArgs(log)
	if err != nil {
		return err
	}
	keys := []string{s.ck(channel, "bans"), s.ck(channel, "log"), s.ck(channel, "seq"), s.ck(channel, "trim"), s.ck(channel, "deleted"),
		s.modKey(channel)}
	args := []any{id, data, "", "", s.ck(channel, "live"), s.logCap(), margs[0], margs[1]}
	if ev != nil {
		if ev.Channel != channel {
			return fmt.Errorf("set moderation: the event must be in the channel (%s, not %s)", channel, ev.Channel)
		}
		evData, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("encode event: %w", err)
		}
		args[2], args[3] = string(ev.Type), evData
	}
	if err := setModeration.Run(ctx, s.rdb, keys, args...).Err(); err != nil {
		return failWrite("set moderation", err)
	}
	return nil
}

// punishInChannel is Punish of a channel's own filter: the ban or timeout
// is the user's standing in the channel, so the strike count, the standing
// and the event are one script in the channel's slot (punishIn), with no
// pending step even on a Cluster. A channel's own filters count strikes
// apart from the platform-wide ones (whose count is with the user).
func (s *Store) punishInChannel(ctx context.Context, p chat.Punish) (chat.Punishment, error) {
	ch := p.Channel
	keys := []string{s.ck(ch, "roles"), s.ck(ch, "bans"), s.ck(ch, "strikes:"+p.User),
		s.ck(ch, "log"), s.ck(ch, "seq"), s.ck(ch, "trim"), s.ck(ch, "deleted"), s.modKey(ch)}
	args := []any{p.User, string(p.IfRole), flag(p.Strike), p.Now.UnixMilli(), chat.StrikeExpiry.Milliseconds(),
		s.ck(ch, "live"), s.logCap(), len(p.Ladder)}
	for _, st := range p.Ladder {
		var ban, etype, edata []byte
		if st.Penalty.Kind != chat.PenaltyWarn {
			m := chat.Standing{TimedOutUntil: st.Until, Banned: st.Penalty.Kind == chat.PenaltyBan, ModReason: st.Reason}
			var err error
			if ban, err = json.Marshal(m); err != nil {
				return chat.Punishment{}, fmt.Errorf("encode ban: %w", err)
			}
		}
		if st.Event != nil {
			if st.Event.Channel != ch {
				return chat.Punishment{}, fmt.Errorf("punish: the event must be in the channel (%s, not %s)", ch, st.Event.Channel)
			}
			var err error
			if edata, err = json.Marshal(st.Event); err != nil {
				return chat.Punishment{}, fmt.Errorf("encode event: %w", err)
			}
			etype = []byte(st.Event.Type)
		}
		margs, err := modArgs(st.Log)
		if err != nil {
			return chat.Punishment{}, err
		}
		args = append(args, ban, etype, edata, margs[0], margs[1])
	}
	res, err := punishIn.Run(ctx, s.rdb, keys, args...).Slice()
	if err != nil {
		return chat.Punishment{}, scriptStatus("punish", err, "user's role in "+ch)
	}
	if len(res) != 2 {
		return chat.Punishment{}, fail("punish", fmt.Errorf("unexpected reply %v", res))
	}
	n, _ := res[0].(int64)
	step, _ := res[1].(int64)
	if step < 1 || int(step) > len(p.Ladder) {
		return chat.Punishment{}, fail("punish", fmt.Errorf("unexpected step %v", res[1]))
	}
	return chat.Punishment{Strike: int(n), Step: int(step) - 1}, nil
}

// punishIn applies a channel filter's consequence if the user's role in
// the channel is still the expected one: counts the strike (when asked,
// strikeStep), stores the step's ban or timeout as the user's standing
// there, appends its event (liveNotice) and records its moderation log
// entry (modLogAppend). Replies {strikes, step}.
// KEYS: roles, bans, strikes, log, seq, trim, deleted, modlog. ARGV: user
// id, expected role ("" none), strike flag, now ms, strike expiry ms, live
// channel, log cap, steps; then per step: standing json ("" for a
// warning), event type ("" for none), event json, entry json, entry ms.
var punishIn = redis.NewScript(`
if (redis.call('HGET', KEYS[1], ARGV[1]) or '') ~= ARGV[2] then return redis.error_reply('CONFLICT') end
local strikesk, strike, now, expiry, steps = KEYS[3], ARGV[3], tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[8])
` + strikeStep + `
local b = 9 + (step - 1) * 5
if ARGV[b] ~= '' then redis.call('HSET', KEYS[2], ARGV[1], ARGV[b]) end
if ARGV[b + 1] ~= '' then
  local logk, seqk, trimk, delk, etype, edata, live, cap = KEYS[4], KEYS[5], KEYS[6], KEYS[7], ARGV[b + 1], ARGV[b + 2], ARGV[6], ARGV[7]
` + liveNotice + `
end
local modk, mentry, mat = KEYS[8], ARGV[b + 3], ARGV[b + 4]
` + modLogAppend + `
return {n, step}
`)

// setChannelRole gives a role in a channel, or takes it back (role ""),
// if the user's role there is still the expected one, and counts the roles
// given there against the limit, and records the moderation log entry, in
// the same step.
// KEYS: roles, modlog. ARGV: user id, expected role ("" none), role, max
// (0: none), entry json, entry ms.
var setChannelRole = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], ARGV[1]) or ''
if cur ~= ARGV[2] then return redis.error_reply('CONFLICT') end
local modk, mentry, mat = KEYS[2], ARGV[5], ARGV[6]
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
` + modLogAppend + `
  return 1
end
local max = tonumber(ARGV[4])
if cur == '' and max > 0 and redis.call('HLEN', KEYS[1]) >= max then return redis.error_reply('LIMIT roles') end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
` + modLogAppend + `
return 1
`)

// setModeration stores a user's ban or timeout in a channel ("" forgets
// it), appends its event to the channel's log (liveNotice) and records
// the moderation log entry (modLogAppend), at once.
// KEYS: bans, log, seq, trim, deleted, modlog. ARGV: user id, json, event
// type ("" for none), event json, live channel, log cap, entry json
// ("" for none), entry ms.
var setModeration = redis.NewScript(`
if ARGV[2] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
end
if ARGV[3] ~= '' then
  local logk, seqk, trimk, delk, etype, edata, live, cap = KEYS[2], KEYS[3], KEYS[4], KEYS[5], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
` + liveNotice + `
end
local modk, mentry, mat = KEYS[6], ARGV[7], ARGV[8]
` + modLogAppend + `
return 1
`)
