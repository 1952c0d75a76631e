package redisstore

import "github.com/redis/go-redis/v9"

// Every write that touches more than one key is one of these scripts, so it
// is atomic on the Redis server and replicas cannot interleave halfway.

// appendMessage: the next message id (INCR), the stream entry "<id>-0" and
// the history trim happen at once, so ids never repeat and a reply of the
// script means the message is stored. Trimming is exact with MINID
// "<cut>-1": it drops message <cut> and everything before, but keeps the
// events that followed <cut>, so a reader whose cursor is <cut> or later
// lost nothing, which is what the trim mark records.
// The entry is then announced on the channel's live shard channel (see
// liveNotice). Gates (slow mode) are passed first, in the same step
// (passGates): a closed one stores nothing.
// With an idempotency record (chat.Once: ARGV[5] names the part, KEYS[5]
// the record, a hash in the channel's slot), a record that holds the part
// already stores nothing; otherwise the stored entry is recorded in the
// same step: "<part>" its id, "<part>d" its event json, "f" the request's
// fingerprint, and the record expires after ARGV[7] ms.
// A user's message (chat.Watch) makes its sender a chatter of the
// channel (the seen set) and, as a first-time chatter, is counted by the
// raid watch (raidWatch) after the append.
// Only the keys a send touches are passed (appendKeys): most sends count
// no raid, and a bot reply or a known chatter adds nobody to the seen set.
// KEYS: seq, log, trim, deleted, [seen, with a chatter, then raid,
// shield, shieldoff, modlog, with a raid threshold], [record], then
// gates. ARGV: history, event json, live channel, now ms, part ("" for
// none), fingerprint, record ms, chatter ("" for none), raid threshold
// (0: no count; only with a chatter), raid window ms, shield quiet ms,
// shield event json, shield's moderation log entry json, log cap, then
// one duration ms per gate. Returns {id, 0}, {0, wait ms} when a gate is
// closed, or {0, -1} when the record holds the part.
var appendMessage = redis.NewScript(`
local logk, edata = KEYS[2], ARGV[2]
local part, chatter = ARGV[5], ARGV[8]
local darg, now, rthr = 15, tonumber(ARGV[4]), tonumber(ARGV[9])
local first = 5
local seenk, raidk, shieldk, offk, modk
if chatter ~= '' then
  seenk, first = KEYS[5], 6
  if rthr > 0 then raidk, shieldk, offk, modk, first = KEYS[6], KEYS[7], KEYS[8], KEYS[9], 10 end
end
local rec
if part ~= '' then
  rec, first = KEYS[first], first + 1
  if redis.call('HEXISTS', rec, part) == 1 then return {0, -1} end
end
` + passGates + `
if wait > 0 then return {0, wait} end
local id = redis.call('INCR', KEYS[1])
` + entryEpoch + `
redis.call('XADD', KEYS[2], id .. '-0', 't', 'message', 'd', ARGV[2], 'e', epoch)
local cut = id - tonumber(ARGV[1])
if cut > 0 then
  local old = tonumber(string.match(redis.call('GET', KEYS[3]) or '0', '^%d+'))
  if cut > old then
    redis.call('XTRIM', KEYS[2], 'MINID', cut .. '-1')
    redis.call('SET', KEYS[3], cut)
    local from = math.max(old + 1, cut - 1000)
    for i = from, cut do redis.call('HDEL', KEYS[4], tostring(i)) end
  end
end
if rec then
  redis.call('HSET', rec, part, id, part .. 'd', ARGV[2])
  if ARGV[6] ~= '' then redis.call('HSET', rec, 'f', ARGV[6]) end
  redis.call('PEXPIRE', rec, ARGV[7])
end
redis.call('SPUBLISH', ARGV[3], prev .. ' ' .. id .. '-0.' .. epoch .. ' ' .. ARGV[2])
if chatter ~= '' then redis.call('SADD', seenk, chatter) end
local seqk, trimk, delk, live, cap = KEYS[1], KEYS[3], KEYS[4], ARGV[3], ARGV[14]
local rwin, rquiet, revent, mentry = tonumber(ARGV[10]), tonumber(ARGV[11]), ARGV[12], ARGV[13]
` + raidWatch + `
return {id, 0}
`)

// raidWatch is the Lua of the raid watch (chat.Raid): it counts chatter
// as a first-time chatter at now in the sorted set raidk (one member per
// user, only the last window's and at most the threshold's newest kept,
// so it stays small), and when the threshold is reached it trips the
// shield (tripShield). Times are the caller's clock, as gates are; PX
// only lets Redis forget the keys. Expects locals chatter, now, rthr (0:
// nothing to count), rwin, raidk and tripShield's.
var raidWatch = `
if rthr > 0 and chatter ~= '' then
  redis.call('ZREMRANGEBYSCORE', raidk, '-inf', now - rwin)
  redis.call('ZADD', raidk, now, chatter)
  redis.call('ZREMRANGEBYRANK', raidk, 0, -(rthr + 1))
  redis.call('PEXPIRE', raidk, rwin)
  if redis.call('ZCARD', raidk) >= rthr then
` + tripShield + `
  end
end
`

// tripShield is the Lua that turns the automatic shield on, unless a
// moderator holds the raid watch off (offk holds until when, in ms): the
// shield key shieldk holds its end, now+quiet, and the shield_mode event
// revent is appended when it was not on already. The key outlives the
// end by shieldGrace, so that the end is still there to be announced
// (endShield). The moderation log entry mentry is recorded with the
// event (modLogAppend). Expects locals now, rquiet, revent, mentry,
// shieldk, offk, modk and liveNotice's logk, seqk, trimk, delk, live, cap.
var tripShield = `
if tonumber(redis.call('GET', offk) or '0') <= now then
  local was = tonumber(redis.call('GET', shieldk) or '0')
  redis.call('SET', shieldk, tostring(now + rquiet), 'PX', rquiet + ` + shieldGrace + `)
  if was <= now then
    local etype, edata, mat = 'shield_mode', revent, now
` + liveNotice + modLogAppend + `
  end
end
`

// shieldGrace (ms) is how long an automatic shield's key outlives its
// end: a day for some replica to announce the end (endShield) before
// Redis forgets it.
const shieldGrace = "86400000"

// countBlocked counts a message a filter refused for the raid watch: the
// sorted set blocked holds the last window's senders (one member per sender, its last refusal's time,
// at most the threshold's newest), and reaching the threshold
// trips the shield (tripShield).
// KEYS: blocked, shield, shieldoff, log, seq, trim, deleted, modlog.
// ARGV: member, now ms, threshold, window ms, quiet ms, shield event json,
// live channel, log cap, shield's moderation log entry json.
var countBlocked = redis.NewScript(`
local blockk, now, rthr, rwin, rquiet, revent = KEYS[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local shieldk, offk, logk, seqk, trimk, delk, live, cap = KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], ARGV[7], ARGV[8]
local modk, mentry = KEYS[8], ARGV[9]
redis.call('ZREMRANGEBYSCORE', blockk, '-inf', now - rwin)
redis.call('ZADD', blockk, now, ARGV[1])
redis.call('ZREMRANGEBYRANK', blockk, 0, -(rthr + 1))
redis.call('PEXPIRE', blockk, rwin)
if redis.call('ZCARD', blockk) >= rthr then
` + tripShield + `
end
return 1
`)

// endShield ends an automatic shield whose end (the shield key, ms) is at
// or before now: the key goes and, unless a moderator's shield is on (the
// settings' shield field), the shield_mode event is appended and the
// automod's shield_off entry recorded. Atomic, so however many replicas
// ask, the end is announced and logged once.
// KEYS: shield, settings, log, seq, trim, deleted, modlog. ARGV: now ms,
// event json, live channel, log cap, entry json. Returns the end (ms) of
// a shield still on, else 0.
var endShield = redis.NewScript(`
local v = tonumber(redis.call('GET', KEYS[1]) or '0')
if v == 0 then return 0 end
if v > tonumber(ARGV[1]) then return v end
redis.call('DEL', KEYS[1])
if redis.call('HGET', KEYS[2], 'shield') ~= '1' then
  local logk, seqk, trimk, delk, etype, edata, live, cap = KEYS[3], KEYS[4], KEYS[5], KEYS[6], 'shield_mode', ARGV[2], ARGV[3], ARGV[4]
` + liveNotice + `
  local modk, mentry, mat = KEYS[7], ARGV[5], ARGV[1]
` + modLogAppend + `
end
return 0
`)

// holdMessage puts a message in a channel's review queue: expired ones
// go first, then a full queue refuses (error "LIMIT held"), else the next
// held id is taken and the message kept (the hash held: id -> json,
// without the id; the sorted set heldq: id by expiry ms), and the raid
// watch counts the sender (raidWatch), and a hold filter's moderation log
// entry is recorded with the held id (set in its json).
// KEYS: held, heldq, heldseq, raid, shield, shieldoff, log, seq, trim,
// deleted, modlog. ARGV: json, now ms, expires ms, max, chatter, raid
// threshold, raid window ms, quiet ms, shield event json, shield's
// moderation log entry json, live channel, log cap, the hold's entry
// json ("" for none), its ms.
// Returns the held id.
var holdMessage = redis.NewScript(`
local now = tonumber(ARGV[2])
for _, old in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)) do redis.call('HDEL', KEYS[1], old) end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then return redis.error_reply('LIMIT held') end
local id = redis.call('INCR', KEYS[3])
redis.call('HSET', KEYS[1], id, ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[3], id)
local chatter = ARGV[5]
local raidk, shieldk, offk, modk = KEYS[4], KEYS[5], KEYS[6], KEYS[11]
local logk, seqk, trimk, delk, live, cap = KEYS[7], KEYS[8], KEYS[9], KEYS[10], ARGV[11], ARGV[12]
local rthr, rwin, rquiet, revent, mentry = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9], ARGV[10]
` + raidWatch + `
if ARGV[13] ~= '' then
  local held = cjson.decode(ARGV[13])
  held['held_id'] = id
  local mentry, mat = cjson.encode(held), ARGV[14]
` + modLogAppend + `
end
return id
`)

// switchShield sets a channel's shield setting; off also ends an
// automatic shield, forgets the raid watch's counts and holds it off
// until ARGV[2] (ms, compared with the caller's clock); the shield_mode
// event is appended in the same step.
// The switch's moderation log entry is recorded in the same step.
// KEYS: settings, shield, shieldoff, raid, log, seq, trim, deleted,
// blocked, modlog. ARGV: "1" or "0", hold-off ms, now ms, event json,
// live channel, log cap, entry json.
var switchShield = redis.NewScript(`
redis.call('HSET', KEYS[1], 'shield', ARGV[1])
if ARGV[1] == '0' then
  redis.call('DEL', KEYS[2], KEYS[4], KEYS[9])
  local ms = tonumber(ARGV[2]) - tonumber(ARGV[3])
  if ms > 0 then redis.call('SET', KEYS[3], ARGV[2], 'PX', ms) end
end
local logk, seqk, trimk, delk, etype, edata, live, cap = KEYS[5], KEYS[6], KEYS[7], KEYS[8], 'shield_mode', ARGV[4], ARGV[5], ARGV[6]
` + liveNotice + `
local modk, mentry, mat = KEYS[10], ARGV[7], ARGV[3]
` + modLogAppend + `
return 1
`)

// punish applies a filter hit's consequence (chat.Punish) in the users'
// slot: with a strike (ARGV[2] "1") it counts it and takes the ladder's
// step for the count (strikeStep); then it changes the user as
// updateUser does and records the step's event and moderation log entry:
// appended on one server (KEYS: user, strikes, log, seq, trim, deleted,
// modlog), stored as one pending entry on a cluster (KEYS: user, strikes,
// pending; pendingEvent carries both).
// ARGV: role, strike, now ms, expiry ms, live channel, revocation
// channel, log cap, number of steps, then eight per step: penalty, timeout
// end, reason, event type ("" for none), event json (on a cluster the
// pending entry), pending key, entry json, entry ms. Returns {strikes, step (1-based), user
// fields...}, or an error status.
var punish = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return redis.error_reply('NOTFOUND') end
if redis.call('HGET', KEYS[1], 'role') ~= ARGV[1] then return redis.error_reply('CONFLICT') end
local strikesk, strike, now, expiry, steps = KEYS[2], ARGV[2], tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[8])
` + strikeStep + `
local b = 9 + (step - 1) * 8
local kind, untilv, reason, etype, edata, pkey = ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5]
if kind == 'timeout' then
  redis.call('HSET', KEYS[1], 'timeout_until', untilv, 'reason', reason)
elseif kind == 'ban' then
  redis.call('HSET', KEYS[1], 'banned', 'true', 'timeout_until', '', 'reason', reason)
  redis.call('PUBLISH', ARGV[6], 'banned ' .. redis.call('HGET', KEYS[1], 'id'))
end
if pkey ~= '' and #KEYS == 3 then
  redis.call('HSET', KEYS[3], pkey, edata)
elseif etype ~= '' then
  local logk, seqk, trimk, delk, live, cap = KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[5], ARGV[7]
` + liveNotice + `
end
if #KEYS == 7 then
  local modk, mentry, mat = KEYS[7], ARGV[b + 6], ARGV[b + 7]
` + modLogAppend + `
end
local out = {n, step}
for _, v in ipairs(redis.call('HGETALL', KEYS[1])) do out[#out + 1] = v end
return out
`)

// strikeStep is the Lua of the strike ladder (chat.Punish), shared by
// punish (platform-wide filters, the users' slot) and punishIn (a
// channel's own, the channel's slot): with strike "1" it counts a strike
// in the hash strikesk (n, last ms; a last strike older than expiry ms
// starts again at 1, and the hash is forgotten expiry ms after the last)
// and takes the ladder's step for the count, the last of steps once past
// the end; without, step 1. Expects locals strikesk, strike, now (ms),
// expiry and steps; leaves n (the count, 0 without a strike) and step
// (1-based).
const strikeStep = `
local n, step = 0, 1
if strike == '1' then
  local last = tonumber(redis.call('HGET', strikesk, 'last') or '0')
  n = tonumber(redis.call('HGET', strikesk, 'n') or '0')
  if now - last > tonumber(expiry) then n = 0 end
  n = n + 1
  redis.call('HSET', strikesk, 'n', n, 'last', now)
  redis.call('PEXPIRE', strikesk, expiry)
  step = math.min(n, steps)
end
`

// entryEpoch is the Lua that finds the log's last entry, prev ("<entry
// id>.<epoch>", or "0-0" for an empty log), and the epoch of the entry
// about to follow it (see chat.Cursor): the first 8 hex digits of the
// SHA-1 of its event json and prev. Another event after the same entry, or
// the same event after another history, has another epoch, so a log that
// lost its tail or restarted empty and hands the same ids out again is
// told apart by any reader that remembers an epoch. Expects locals logk
// and edata; leaves prev and epoch.
const entryEpoch = `
local top = redis.call('XREVRANGE', logk, '+', '-', 'COUNT', 1)
local prev = '0-0'
if #top > 0 then
  prev = top[1][1]
  local f = top[1][2]
  for i = 1, #f - 1, 2 do
    if f[i] == 'e' then prev = prev .. '.' .. f[i + 1] end
  end
end
local epoch = string.sub(redis.sha1hex(edata .. prev), 1, 8)
`

// liveNotice is the Lua that appends an event after the channel's last
// message ("<last>-*" lets Redis pick the next sequence number) and
// announces it on the live shard channel (SPUBLISH) as "<previous entry>
// <entry> <event json>", each entry as "<id>.<epoch>": a replica that
// delivered up to the previous entry applies the event at once, any other
// reads the stream.
// Messages trim the log (appendMessage), events alone never would: a
// channel where moderation outpaces messages, or that has events only,
// would grow without end. So past cap entries the oldest go, messages
// included, and the trim mark becomes the last entry removed ("<id>-<seq>";
// a reader before it has missed something), with the tombstones of the
// messages removed.
// Expects locals logk, seqk, trimk, delk (the channel's keys), etype,
// edata, live and cap (0: no bound).
const liveNotice = entryEpoch + `
local last = redis.call('GET', seqk) or '0'
local eid = redis.call('XADD', logk, last .. '-*', 't', etype, 'd', edata, 'e', epoch)
redis.call('SPUBLISH', live, prev .. ' ' .. eid .. '.' .. epoch .. ' ' .. edata)
local over = 0
if tonumber(cap) > 0 then over = redis.call('XLEN', logk) - tonumber(cap) end
if over > 0 then
  local gone = redis.call('XRANGE', logk, '-', '+', 'COUNT', over)
  local mark = gone[#gone][1]
  local mid, mseq = string.match(mark, '^(%d+)-(%d+)$')
  redis.call('XTRIM', logk, 'MINID', mid .. '-' .. (tonumber(mseq) + 1))
  local old = tonumber(string.match(redis.call('GET', trimk) or '0', '^%d+'))
  redis.call('SET', trimk, mark)
  for i = math.max(old + 1, tonumber(mid) - 1000), tonumber(mid) do redis.call('HDEL', delk, tostring(i)) end
end
`

// appendPending appends a moderation event that a cluster's UpdateUser
// recorded as pending (see pendingEvent), once: the marker key, in the
// channel's slot, records that this pending entry was appended. The marker
// is written after the append, which writes nothing if it fails, so a
// failed attempt leaves no trace and the next one starts clean.
// The entry's moderation log entry, if any, is recorded in the same step.
// KEYS: log, seq, marker, trim, deleted, modlog. ARGV: event type (""
// for none), event json, live channel, marker lifetime (seconds), log
// cap, entry json ("" for none), entry ms. Returns 1 appended, 0
// appended before.
var appendPending = redis.NewScript(`
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
if ARGV[1] ~= '' then
  local logk, seqk, trimk, delk, etype, edata, live, cap = KEYS[1], KEYS[2], KEYS[4], KEYS[5], ARGV[1], ARGV[2], ARGV[3], ARGV[5]
` + liveNotice + `
end
local modk, mentry, mat = KEYS[6], ARGV[6], ARGV[7]
` + modLogAppend + `
redis.call('SET', KEYS[3], '1', 'EX', ARGV[4])
return 1
`)

// deleteMessage marks a message deleted once and appends the
// message_deleted event after the channel's last message, and records
// the moderation log entry (if any) in the same step.
// KEYS: log, seq, deleted, trim, modlog. ARGV: id, deleted_at ms, event
// json, live channel, log cap, entry json, entry ms. Returns 0 not found,
// 1 deleted, 2 already deleted.
var deleteMessage = redis.NewScript(`
local e = redis.call('XRANGE', KEYS[1], ARGV[1] .. '-0', ARGV[1] .. '-0')
if #e == 0 then return 0 end
if redis.call('HSETNX', KEYS[3], ARGV[1], ARGV[2]) == 0 then return 2 end
local logk, seqk, trimk, delk, etype, edata, live, cap = KEYS[1], KEYS[2], KEYS[4], KEYS[3], 'message_deleted', ARGV[3], ARGV[4], ARGV[5]
` + liveNotice + `
local modk, mentry, mat = KEYS[5], ARGV[6], ARGV[7]
` + modLogAppend + `
return 1
`)

// createUser refuses a taken token, name or id, then writes the user and
// its two indexes. KEYS: user, names, tokens, ids. ARGV: id, lower name,
// token hash, then field/value pairs. Returns "" or what is taken.
var createUser = redis.NewScript(`
if redis.call('HEXISTS', KEYS[3], ARGV[3]) == 1 then return 'token' end
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 1 then return 'name' end
if redis.call('EXISTS', KEYS[1]) == 1 then return 'id' end
local fields = {}
for i = 4, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('HSET', KEYS[2], ARGV[2], ARGV[1])
redis.call('HSET', KEYS[3], ARGV[3], ARGV[1])
redis.call('SADD', KEYS[4], ARGV[1])
return ''
`)

// provisionUser creates a platform user or names it again (chat.Store's
// ProvisionUser). KEYS: user, names, ids. ARGV: id, number of names n,
// then n name/lower-name pairs, then the new user's field/value pairs.
// Returns the user's fields, or CONFLICT when a new user can take no name.
// A user already holding the first free name is only read.
var provisionUser = redis.NewScript(`
local exists = redis.call('EXISTS', KEYS[1]) == 1
local n = tonumber(ARGV[2])
for i = 0, n - 1 do
  local name, lname = ARGV[3 + 2 * i], ARGV[4 + 2 * i]
  local owner = redis.call('HGET', KEYS[2], lname)
  if not owner or owner == ARGV[1] then
    if not exists then
      local fields = {}
      for j = 3 + 2 * n, #ARGV do fields[#fields + 1] = ARGV[j] end
      redis.call('HSET', KEYS[1], unpack(fields))
      redis.call('HSET', KEYS[1], 'name', name, 'lname', lname)
      redis.call('HSET', KEYS[2], lname, ARGV[1])
      redis.call('SADD', KEYS[3], ARGV[1])
    elseif redis.call('HGET', KEYS[1], 'name') ~= name then
      local old = redis.call('HGET', KEYS[1], 'lname')
      if old then redis.call('HDEL', KEYS[2], old) end
      redis.call('HSET', KEYS[2], lname, ARGV[1])
      redis.call('HSET', KEYS[1], 'name', name, 'lname', lname)
    end
    return redis.call('HGETALL', KEYS[1])
  end
end
if exists then return redis.call('HGETALL', KEYS[1]) end
return redis.error_reply('CONFLICT')
`)

// updateUser changes fields only if the user still holds the expected role
// and, with an event and a moderation log entry, records them in the same
// step. On one server (KEYS: user, log, seq, trim, deleted, modlog) the
// event is appended to the channel's log and the entry to its moderation
// log right here.
// On a cluster the channel lives in another slot, so the script stores
// both in the users' pending hash instead (KEYS: user, pending; ARGV[3] is
// then the pending entry and ARGV[4] its key), in the same slot as the user:
// the change and the promise of its event are one atomic step, and the
// engine appends the event next (appendPending), once, or any replica's
// repair does later (Store.RepairPending).
// A ban is announced on the revocation channel, so every replica closes
// the user's sockets.
// ARGV: role, event type (empty for none), event json, live channel,
// revocation channel, log cap, entry json ("" for none), entry ms, then
// field/value pairs. Returns the user's fields, or an error status.
var updateUser = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return redis.error_reply('NOTFOUND') end
if redis.call('HGET', KEYS[1], 'role') ~= ARGV[1] then return redis.error_reply('CONFLICT') end
local fields = {}
for i = 9, #ARGV do fields[#fields + 1] = ARGV[i] end
if #fields > 0 then redis.call('HSET', KEYS[1], unpack(fields)) end
for i = 1, #fields - 1, 2 do
  if fields[i] == 'banned' and fields[i + 1] == 'true' then
    redis.call('PUBLISH', ARGV[5], 'banned ' .. redis.call('HGET', KEYS[1], 'id'))
  end
end
if #KEYS == 2 then
  redis.call('HSET', KEYS[2], ARGV[4], ARGV[3])
elseif #KEYS == 6 then
  if ARGV[2] ~= '' then
    local logk, seqk, trimk, delk, etype, edata, live, cap = KEYS[2], KEYS[3], KEYS[4], KEYS[5], ARGV[2], ARGV[3], ARGV[4], ARGV[6]
` + liveNotice + `
  end
  local modk, mentry, mat = KEYS[6], ARGV[7], ARGV[8]
` + modLogAppend + `
end
return redis.call('HGETALL', KEYS[1])
`)

// deleteUser removes a user and its indexes if it still holds the role,
// and announces it on the revocation channel, so every replica closes the
// user's sockets. KEYS: user, names, tokens, ids. ARGV: id, role,
// revocation channel.
var deleteUser = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return redis.error_reply('NOTFOUND') end
if redis.call('HGET', KEYS[1], 'role') ~= ARGV[2] then return redis.error_reply('CONFLICT') end
local lname = redis.call('HGET', KEYS[1], 'lname')
local token = redis.call('HGET', KEYS[1], 'token')
redis.call('DEL', KEYS[1])
if lname then redis.call('HDEL', KEYS[2], lname) end
if token then redis.call('HDEL', KEYS[3], token) end
redis.call('SREM', KEYS[4], ARGV[1])
redis.call('PUBLISH', ARGV[3], 'deleted ' .. ARGV[1])
return 1
`)

// createCommand claims the name and every alias or nothing, so two replicas
// creating the same command concurrently yield one 201 and one 409.
// KEYS: commands, triggers. ARGV: name, json, max, triggers... Returns ""
// or the owner of a taken trigger.
// The command limit (ARGV[3], 0 for none) is checked in the same step:
// error "LIMIT commands" when reached.
var createCommand = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return ARGV[1] end
local max = tonumber(ARGV[3])
if max > 0 and redis.call('HLEN', KEYS[1]) >= max then return redis.error_reply('LIMIT commands') end
for i = 4, #ARGV do
  local owner = redis.call('HGET', KEYS[2], ARGV[i])
  if owner then return owner end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
for i = 4, #ARGV do redis.call('HSET', KEYS[2], ARGV[i], ARGV[1]) end
return ''
`)

// updateCommand replaces a command and moves its alias claims.
// KEYS: commands, triggers. ARGV: name, json, new triggers...
// Returns "" or the owner of a taken trigger; error NOTFOUND if gone.
var updateCommand = redis.NewScript(`
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return redis.error_reply('NOTFOUND') end
for i = 3, #ARGV do
  local owner = redis.call('HGET', KEYS[2], ARGV[i])
  if owner and owner ~= ARGV[1] then return owner end
end
local old = cjson.decode(raw)
if type(old.aliases) == 'table' then
  for _, a in ipairs(old.aliases) do redis.call('HDEL', KEYS[2], a) end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
for i = 3, #ARGV do redis.call('HSET', KEYS[2], ARGV[i], ARGV[1]) end
return ''
`)

// deleteCommand removes a command, its alias claims and its counter.
// KEYS: commands, triggers, counts. ARGV: name.
var deleteCommand = redis.NewScript(`
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
local old = cjson.decode(raw)
if type(old.aliases) == 'table' then
  for _, a in ipairs(old.aliases) do redis.call('HDEL', KEYS[2], a) end
end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
return 1
`)

// countCommand counts a use only while the command exists, so a deleted
// command leaves no stray counter. KEYS: commands, counts. ARGV: name.
var countCommand = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return redis.error_reply('NOTFOUND') end
return redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
`)

// createFilter numbers and stores a filter unless a limit is reached:
// error "LIMIT filters" or "LIMIT regex". Filters are few (bounded by the
// limit), so counting the regex ones is a short scan.
// KEYS: filters, seq. ARGV: json, max filters, max regex filters, kind.
var createFilter = redis.NewScript(`
local max, maxRegex = tonumber(ARGV[2]), tonumber(ARGV[3])
if max > 0 and redis.call('HLEN', KEYS[1]) >= max then return redis.error_reply('LIMIT filters') end
if ARGV[4] == 'regex' and maxRegex > 0 then
  local n = 0
  for _, v in ipairs(redis.call('HVALS', KEYS[1])) do
    if string.find(v, '"kind":"regex"', 1, true) then n = n + 1 end
  end
  if n >= maxRegex then return redis.error_reply('LIMIT regex') end
end
local id = 'f' .. redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], id, ARGV[1])
return id
`)

// passGates is the Lua that passes all gates or none. A gate's value is
// the unix ms until which it is closed, compared with the caller's clock
// (so tests can step time); PX only lets Redis forget it afterwards. This
// is SET NX PX with the clock made explicit. Expects locals first (the
// index of the first gate in KEYS; the gates run to the end of KEYS), darg
// (the ARGV index of its duration ms) and now (ms); leaves wait, the
// longest wait in ms (0: every gate passed and is closed now).
const passGates = `
local wait = 0
for i = first, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v then
    local r = tonumber(v) - now
    if r > wait then wait = r end
  end
end
if wait == 0 then
  for i = first, #KEYS do
    local d = tonumber(ARGV[darg + i - first])
    if d > 0 then redis.call('SET', KEYS[i], tostring(now + d), 'PX', d) end
  end
end
`

// acquire passes all gates or none (passGates). KEYS: gates. ARGV: now
// ms, then one duration ms per gate. Returns the wait in ms (0: passed).
var acquire = redis.NewScript(`
local first, darg, now = 1, 2, tonumber(ARGV[1])
` + passGates + `
return wait
`)

// claimChannel adds a channel to the set of channels unless the set holds
// max (0: no limit) already; an open channel becomes the platform's.
// KEYS: channels, open channels. ARGV: name, max. Returns 1 claimed (now
// or before), 0 limit reached.
var claimChannel = redis.NewScript(`
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return 1 end
local max = tonumber(ARGV[2])
if max > 0 and redis.call('SCARD', KEYS[1]) >= max then return 0 end
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
`)

// claimOpenChannel is chat.Store.ClaimOpenChannel: the open channels are
// a sorted set scored by their last write (ms). KEYS: channels, open
// channels. ARGV: name, now ms, idle ms, max, create (1/0). Returns 1
// claimed, 0 limit reached, -1 no such channel (create 0).
var claimOpenChannel = redis.NewScript(`
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return 1 end
local now = tonumber(ARGV[2])
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  redis.call('ZADD', KEYS[2], now, ARGV[1])
  return 1
end
if ARGV[5] ~= '1' then return -1 end
local max = tonumber(ARGV[4])
if max > 0 and redis.call('ZCARD', KEYS[2]) >= max then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. (now - tonumber(ARGV[3])))
  if redis.call('ZCARD', KEYS[2]) >= max then return 0 end
end
redis.call('ZADD', KEYS[2], now, ARGV[1])
return 1
`)

// userByToken finds a token's user in one round trip: the token index and
// the user share the {users} slot, so the user key, which only the index
// names, is in the script's slot on a Cluster too. KEYS: tokens. ARGV:
// token hash, user key prefix. Returns the user's fields, or an empty
// array for an unknown token.
var userByToken = redis.NewScript(`
local id = redis.call('HGET', KEYS[1], ARGV[1])
if not id then return {} end
return redis.call('HGETALL', ARGV[2] .. id)
`)

// commandByTrigger finds a command by name or alias, with its count, in
// one round trip. KEYS: commands, triggers, counts. ARGV: trigger.
// Returns {json, count} or an empty array.
var commandByTrigger = redis.NewScript(`
local name = redis.call('HGET', KEYS[2], ARGV[1])
if not name then return {} end
local raw = redis.call('HGET', KEYS[1], name)
if not raw then return {} end
return {raw, redis.call('HGET', KEYS[3], name) or '0'}
`)

// countSend is go-redis/redis_rate's GCRA script (allowN, BSD-2-Clause,
// Copyright (c) 2017 Pavel Pravosud, from rwz/redis-gcra), on the Redis
// server's clock so every replica counts a user together. Copied, with the
// same key and arguments, so that it can go into ReadForSend's pipeline
// (redis_rate runs it on its own round trip) and counts kept by earlier
// versions stay valid. KEYS: the user's key. ARGV: burst, rate, period
// (seconds), cost. Returns {allowed, remaining, retry_after (s), reset_after (s)}.
var countSend = redis.NewScript(`
redis.replicate_commands()
local rate_limit_key = KEYS[1]
local burst = ARGV[1]
local rate = ARGV[2]
local period = ARGV[3]
local cost = tonumber(ARGV[4])
local emission_interval = period / rate
local increment = emission_interval * cost
local burst_offset = emission_interval * burst
-- seconds since 2017-01-01 keep the float's precision (good until 2048)
local jan_1_2017 = 1483228800
local now = redis.call("TIME")
now = (now[1] - jan_1_2017) + (now[2] / 1000000)
local tat = redis.call("GET", rate_limit_key)
if not tat then
  tat = now
else
  tat = tonumber(tat)
end
tat = math.max(tat, now)
local new_tat = tat + increment
local allow_at = new_tat - burst_offset
local diff = now - allow_at
local remaining = diff / emission_interval
if remaining < 0 then
  local reset_after = tat - now
  local retry_after = diff * -1
  return {0, 0, tostring(retry_after), tostring(reset_after)}
end
local reset_after = new_tat - now
if reset_after > 0 then
  redis.call("SET", rate_limit_key, new_tat, "EX", math.ceil(reset_after))
end
local retry_after = -1
return {cost, remaining, tostring(retry_after), tostring(reset_after)}
`)
