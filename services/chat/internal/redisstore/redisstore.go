// Package redisstore is the Redis chat engine: one Stream per channel holds
// its messages and moderation events (entry id "<message id>-<seq>"), and
// users, commands and filters live in hashes, so any number of replicas
// share them. Multi-key writes are Lua scripts; every Redis failure is
// reported as the domain's Unavailable error.
package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver/redisconn"
	"github.com/apistack/platform/services/chat/internal/chat"
)

var _ chat.Store = (*Store)(nil)

// Store is the Redis engine.
type Store struct {
	rdb     redis.UniversalClient
	owned   []redis.UniversalClient
	history int
	prefix  string
	// archiveHold: while an archive is on, the most messages a channel's
	// window keeps for it (archive.go); 0: none, trim at history.
	archiveHold int
	// cluster: rdb is a Redis Cluster client; scripts never span slots.
	cluster bool
}

// Options configure the engine.
type Options struct {
	// History is how many messages a channel keeps (CHAT_HISTORY).
	History int
	// Prefix starts every key (default "chat:"); tests use it to share a server.
	Prefix string
	// ArchiveHold, when an archive is on (CHAT_DATABASE_URL), is the most
	// messages a channel keeps while the archive is behind: the window is
	// not trimmed past the archive's mark until it holds this many
	// (CHAT_ARCHIVE_HOLD; at least History). 0: no archive, the window is
	// History.
	ArchiveHold int
}

// New wraps a client. The Store does not own rdb unless built by Open.
func New(rdb redis.UniversalClient, opts Options) *Store {
	if opts.History <= 0 {
		opts.History = chat.DefaultHistory
	}
	if opts.Prefix == "" {
		opts.Prefix = "chat:"
	}
	if opts.ArchiveHold > 0 {
		opts.ArchiveHold = max(opts.ArchiveHold, opts.History)
	}
	_, cluster := rdb.(*redis.ClusterClient)
	return &Store{rdb: rdb, history: opts.History, prefix: opts.Prefix, cluster: cluster, archiveHold: opts.ArchiveHold}
}

// Open connects to the Redis named by a REDIS_URL (one server, Sentinel or
// Cluster: libs/apiserver/redisconn's forms) and checks that it answers.
// Close releases the client.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	rdb, err := redisconn.OpenWith(url, redisconn.Options{NoRetry: true}) // see failWrite
	if err != nil {
		return nil, err
	}
	s := New(rdb, opts)
	s.owned = []redis.UniversalClient{rdb}
	if err := s.Ping(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// Client returns the underlying client.
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// ---- keys ----

// Keys carry hash tags so that every script touches one hash slot, which
// a Redis Cluster requires (and which costs nothing on one server):
//
//	<prefix>{ch:<name>}:<what>  a channel: log, seq, trim, deleted,
//	                            settings, gate:<key>, presence, once:<key>
//	                            (idempotency records), the live Pub/Sub
//	                            channel, and what the channel owns: roles
//	                            (user id -> role given there), bans (user
//	                            id -> json of a ban or timeout held there),
//	                            commands:all|triggers|counts and
//	                            filters:all|seq (its own commands and
//	                            filters)
//	<prefix>{users}:<what>      users: user:<id>, names, tokens, ids
//	<prefix>{commands}:<what>   platform-wide commands: all, triggers, counts
//	<prefix>{filters}:<what>    platform-wide filters: all, seq
//	rate:<prefix>sendlimit:<id> a user's send limit (redis_rate's one-key
//	                            GCRA script, countSend; no tag needed)
//
// The platform-wide keys are those every version before channel scopes
// wrote, unchanged: an upgraded deployment reads its roles, bans, commands
// and filters as platform-wide ones. Channels spread over the cluster by
// name, with everything they own; users, platform-wide commands and
// filters each sit in one slot (they are read on every send but are small and
// change rarely). The one write that spans two groups, a moderation
// event with its user change, is on a cluster a user change that records
// the event as pending in the users' slot, then an idempotent append in
// the channel's (UpdateUser, pending.go).
func (s *Store) ck(channel, what string) string { return s.prefix + "{ch:" + channel + "}:" + what }
func (s *Store) userKey(id string) string       { return s.prefix + "{users}:user:" + id }
func (s *Store) uk(what string) string          { return s.prefix + "{users}:" + what }

// cmdk is a key of the commands of scope: platform-wide ("") or a
// channel's own, in the channel's slot.
func (s *Store) cmdk(scope, what string) string {
	if scope == "" {
		return s.prefix + "{commands}:" + what
	}
	return s.ck(scope, "commands:"+what)
}

// fk is a key of the filters of scope, as cmdk.
func (s *Store) fk(scope, what string) string {
	if scope == "" {
		return s.prefix + "{filters}:" + what
	}
	return s.ck(scope, "filters:"+what)
}

// onceKey is an idempotency record of a channel (chat.Once), in its slot.
func (s *Store) onceKey(channel, key string) string { return s.ck(channel, "once:"+key) }

// revokedKey is the Pub/Sub channel of revocations: "deleted <id>" and
// "banned <id>", published by the scripts that delete or ban a user.
func (s *Store) revokedKey() string { return s.prefix + "{users}:revoked" }

// fail turns a backend error into the domain's Unavailable error, and lets
// context cancellation through as itself.
func fail(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", op, err)
	}
	return chat.Unavailable(op, err)
}

// failPipeline is fail for a command of ReadForSend's pipeline, which
// writes nothing: a deadline there means the store did not answer in time,
// which the caller is told as Unavailable (503, try again), not as an
// internal error. go-redis retries a pipeline whose connection broke for
// longer than a single command (with Redis down, until the deadline rather
// than the ~1.7 s after which a command reports the refused dial), and may
// report "context deadline exceeded" before the deadline when the next
// backoff would pass it. Cancellation is the caller's and stays itself.
func failPipeline(op string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return chat.Unavailable(op, err)
	}
	return fail(op, err)
}

// failWrite is fail for a write. The client sends every command once
// (redisconn.Options.NoRetry: a retried script could run twice), so a
// write that failed was either never sent, and changed nothing, or sent
// without an answer, and may have run or run yet: a paused Redis runs what
// waits in its socket buffer when it resumes. Only the first kind is
// Unavailable; the second is OutcomeUnknown, so no client is told that
// nothing changed when it may have. An error reply of the server (a
// script's own, a MOVED, a LOADING) means the server answered.
func failWrite(op string, err error) error {
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", op, err) // the caller went away: nobody to tell
	}
	if neverSent(err) {
		return chat.Unavailable(op, err)
	}
	return chat.OutcomeUnknown(op, err)
}

// neverSent reports whether err is a failure before a command was
// written: no connection could be had (a refused or timed-out dial, the
// pool exhausted or closed), or the server answered with an error.
func neverSent(err error) bool {
	var op *net.OpError
	var rerr redis.Error
	switch {
	case errors.As(err, &op) && op.Op == "dial":
		return true
	case errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrClosed):
		return true
	case errors.As(err, &rerr):
		return true
	}
	return false
}

// scriptStatus maps the error replies our write scripts use to domain
// errors, and any other failure as failWrite does.
func scriptStatus(op string, err error, what string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "NOTFOUND"):
		return chat.NotFound(what)
	case strings.HasPrefix(msg, "CONFLICT"):
		return chat.Conflict("the " + what + " changed meanwhile; try again")
	}
	return failWrite(op, err)
}

// ---- messages and events ----

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

// AppendMessage implements chat.Store.
func (s *Store) AppendMessage(ctx context.Context, m chat.Message, once chat.Once, gates ...chat.Gate) (chat.Message, error) {
	return s.AppendSent(ctx, m, once, chat.Watch{}, gates...)
}

// AppendSent implements chat.Store: the gates, the idempotency record,
// the append and the raid watch are one script (all keys in the channel's
// slot), so slow mode, unique chat, idempotency and the raid watch cost no
// round trip of their own.
func (s *Store) AppendSent(ctx context.Context, m chat.Message, once chat.Once, w chat.Watch, gates ...chat.Gate) (chat.Message, error) {
	m.ID = 0
	data, err := json.Marshal(chat.Event{Type: chat.EventMessage, Message: &m})
	if err != nil {
		return chat.Message{}, fmt.Errorf("encode message: %w", err)
	}
	ch := m.Channel
	raid, err := raidArgs(w)
	if err != nil {
		return chat.Message{}, err
	}
	keys := s.appendKeys(ch, w)
	args := append([]any{s.history, data, s.ck(ch, "live"), m.CreatedAt.UnixMilli(), "", "", 0, w.Chatter}, append(raid, s.logCap(), s.archiveHold)...)
	if once.Set() {
		keys = append(keys, s.onceKey(ch, once.Key))
		args[4], args[5], args[6] = string(once.Part), once.Fingerprint, once.For.Milliseconds()
	}
	gkeys, gargs, err := s.gateArgs(gates)
	if err != nil {
		return chat.Message{}, err
	}
	if len(gkeys) > 0 && gates[0].Channel != ch {
		return chat.Message{}, fmt.Errorf("append message: gates must be in the message's channel (%s, not %s)", ch, gates[0].Channel)
	}
	res, err := appendMessage.Run(ctx, s.rdb, append(keys, gkeys...), append(args, gargs...)...).Int64Slice()
	if err != nil {
		return chat.Message{}, failWrite("append message", err)
	}
	if len(res) != 2 {
		return chat.Message{}, fail("append message", fmt.Errorf("unexpected reply %v", res))
	}
	if res[1] < 0 {
		return chat.Message{}, &chat.Error{Kind: chat.KindConflict, Reason: chat.ReasonKeyInUse,
			Message: "a send with this Idempotency-Key was stored meanwhile; send it again to get its result"}
	}
	if res[1] > 0 {
		return chat.Message{}, &chat.Error{Kind: chat.KindSlowMode, RetryAfter: time.Duration(res[1]) * time.Millisecond, Message: "a gate is closed"}
	}
	m.ID = res[0]
	return m, nil
}

// applyTombstones replaces deleted messages by their tombstones.
func (s *Store) applyTombstones(ctx context.Context, channel string, ms []chat.Message) error {
	if len(ms) == 0 {
		return nil
	}
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = strconv.FormatInt(m.ID, 10)
	}
	vals, err := s.rdb.HMGet(ctx, s.ck(channel, "deleted"), ids...).Result()
	if err != nil {
		return fail("read tombstones", err)
	}
	for i, v := range vals {
		if str, ok := v.(string); ok {
			ms[i] = ms[i].Tombstone(msTime(str))
		}
	}
	return nil
}

func msTime(s string) time.Time {
	n, _ := strconv.ParseInt(s, 10, 64)
	return time.UnixMilli(n).UTC()
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
// history, so the events among the last History messages always fit;
// twice the archive's hold when that is larger, so that events never
// trim what the hold keeps for the archive.
func (s *Store) logCap() int { return 2 * max(s.history, s.archiveHold) }

// Messages implements chat.Store.
func (s *Store) Messages(ctx context.Context, channel string, p chat.Page) ([]chat.Message, error) {
	last, trimmed, err := s.bounds(ctx, channel)
	if err != nil {
		return nil, err
	}
	out := []chat.Message{}
	lo, hi := chat.PageRange(p, last, trimmed)
	if lo > hi {
		return out, nil
	}
	xs, err := s.rdb.XRange(ctx, s.ck(channel, "log"), strconv.FormatInt(lo, 10)+"-0", strconv.FormatInt(hi, 10)+"-0").Result()
	if err != nil {
		return nil, fail("read messages", err)
	}
	for _, x := range xs {
		if x.Values["t"] != string(chat.EventMessage) {
			continue
		}
		ev, err := decode(channel, x)
		if err != nil {
			return nil, err
		}
		out = append(out, *ev.Message)
	}
	if err := s.applyTombstones(ctx, channel, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Message implements chat.Store.
func (s *Store) Message(ctx context.Context, channel string, id int64) (chat.Message, error) {
	eid := strconv.FormatInt(id, 10) + "-0"
	xs, err := s.rdb.XRange(ctx, s.ck(channel, "log"), eid, eid).Result()
	if err != nil {
		return chat.Message{}, fail("read message", err)
	}
	if len(xs) == 0 {
		return chat.Message{}, chat.NotFound("message")
	}
	ev, err := decode(channel, xs[0])
	if err != nil {
		return chat.Message{}, err
	}
	ms := []chat.Message{*ev.Message}
	if err := s.applyTombstones(ctx, channel, ms); err != nil {
		return chat.Message{}, err
	}
	return ms[0], nil
}

// DeleteMessage implements chat.Store.
func (s *Store) DeleteMessage(ctx context.Context, channel string, id int64, at time.Time, log *chat.ModEntry) (chat.Message, error) {
	m, err := s.Message(ctx, channel, id)
	if err != nil {
		return chat.Message{}, err
	}
	if m.Deleted {
		return m, nil
	}
	t := m.Tombstone(at)
	data, err := json.Marshal(chat.Event{Type: chat.EventMessageDeleted, Message: &t})
	if err != nil {
		return chat.Message{}, fmt.Errorf("encode tombstone: %w", err)
	}
	margs, err := modArgs(log)
	if err != nil {
		return chat.Message{}, err
	}
	res, err := deleteMessage.Run(ctx, s.rdb,
		[]string{s.ck(channel, "log"), s.ck(channel, "seq"), s.ck(channel, "deleted"), s.ck(channel, "trim"), s.modKey(channel)},
		id, at.UnixMilli(), data, s.ck(channel, "live"), s.logCap(), margs[0], margs[1]).Int64()
	if err != nil {
		return chat.Message{}, failWrite("delete message", err)
	}
	switch res {
	case 0:
		return chat.Message{}, chat.NotFound("message")
	case 2: // another replica won the race; report its tombstone
		return s.Message(ctx, channel, id)
	}
	return t, nil
}

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

// ---- channels ----

// ClaimChannel implements chat.Store.
func (s *Store) ClaimChannel(ctx context.Context, name string, max int) error {
	ok, err := claimChannel.Run(ctx, s.rdb, []string{s.prefix + "{channels}:all"}, name, max).Int()
	if err != nil {
		return failWrite("claim channel", err)
	}
	if ok == 0 {
		return chat.LimitReached(chat.QuotaChannels, max)
	}
	return nil
}

// Channel implements chat.Store.
func (s *Store) Channel(ctx context.Context, name string) (chat.Channel, error) {
	var settings *redis.MapStringStringCmd
	var shield *redis.StringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		settings, shield = s.readChannel(ctx, p, name)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return chat.Channel{}, fail("read channel", err)
	}
	return parseChannel(name, settings, shield)
}

// readChannel queues the reads of a channel's settings and the automatic
// shield's end (the shield key, in ms) on p.
func (s *Store) readChannel(ctx context.Context, p redis.Pipeliner, name string) (*redis.MapStringStringCmd, *redis.StringCmd) {
	return p.HGetAll(ctx, s.ck(name, "settings")), p.Get(ctx, s.ck(name, "shield"))
}

// parseChannel reads readChannel's answers. Settings written before the
// modes have only slow_mode_seconds: the rest are off.
func parseChannel(name string, settings *redis.MapStringStringCmd, shield *redis.StringCmd) (chat.Channel, error) {
	if err := settings.Err(); err != nil {
		return chat.Channel{}, err
	}
	if err := shield.Err(); err != nil && !errors.Is(err, redis.Nil) {
		return chat.Channel{}, err
	}
	m := settings.Val()
	num := func(k string) int { n, _ := strconv.Atoi(m[k]); return n }
	c := chat.Channel{Name: name, SlowModeSeconds: num("slow_mode_seconds"), FirstMessageReview: m["first_message_review"] == "1",
		MinAccountAgeSeconds: num("min_account_age_seconds"), UniqueChat: m["unique_chat"] == "1", Shield: m["shield"] == "1",
		AutoShield: m["auto_shield"] == "1", AutoShieldFirstChatters: num("auto_shield_first_chatters"),
		AutoShieldBlocked: num("auto_shield_blocked"), ShieldQuietSeconds: num("shield_quiet_seconds")}
	if ms, err := strconv.ParseInt(shield.Val(), 10, 64); err == nil && ms > 0 {
		t := time.UnixMilli(ms).UTC()
		c.ShieldUntil = &t
	}
	return c, nil
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// SaveChannel implements chat.Store.
func (s *Store) SaveChannel(ctx context.Context, c chat.Channel) error {
	err := s.rdb.HSet(ctx, s.ck(c.Name, "settings"), "slow_mode_seconds", c.SlowModeSeconds,
		"first_message_review", flag(c.FirstMessageReview), "min_account_age_seconds", c.MinAccountAgeSeconds,
		"unique_chat", flag(c.UniqueChat), "auto_shield", flag(c.AutoShield),
		"auto_shield_first_chatters", c.AutoShieldFirstChatters, "auto_shield_blocked", c.AutoShieldBlocked,
		"shield_quiet_seconds", c.ShieldQuietSeconds).Err()
	if err != nil {
		return failWrite("save channel", err)
	}
	return nil
}

// ---- users ----

const timeLayout = time.RFC3339Nano

func userFields(u chat.User) []any {
	until := ""
	if u.TimedOutUntil != nil {
		until = u.TimedOutUntil.UTC().Format(timeLayout)
	}
	return []any{"id", u.ID, "name", u.Name, "lname", strings.ToLower(u.Name), "role", string(u.Role),
		"created_at", u.CreatedAt.UTC().Format(timeLayout), "timeout_until", until,
		"banned", strconv.FormatBool(u.Banned), "reason", u.ModReason, "token", u.TokenHash}
}

func parseUser(m map[string]string) (chat.User, error) {
	if len(m) == 0 {
		return chat.User{}, chat.NotFound("user")
	}
	u := chat.User{ID: m["id"], Name: m["name"], Role: chat.Role(m["role"]), ModReason: m["reason"], TokenHash: m["token"]}
	u.Banned = m["banned"] == "true"
	var err error
	if u.CreatedAt, err = time.Parse(timeLayout, m["created_at"]); err != nil {
		return chat.User{}, fmt.Errorf("user %s: created_at: %w", u.ID, err)
	}
	if v := m["timeout_until"]; v != "" {
		t, err := time.Parse(timeLayout, v)
		if err != nil {
			return chat.User{}, fmt.Errorf("user %s: timeout_until: %w", u.ID, err)
		}
		u.TimedOutUntil = &t
	}
	return u, nil
}

func (s *Store) userIndexKeys(id string) []string {
	return []string{s.userKey(id), s.uk("names"), s.uk("tokens"), s.uk("ids")}
}

// CreateUser implements chat.Store.
func (s *Store) CreateUser(ctx context.Context, u chat.User) error {
	args := append([]any{u.ID, strings.ToLower(u.Name), u.TokenHash}, userFields(u)...)
	taken, err := createUser.Run(ctx, s.rdb, s.userIndexKeys(u.ID), args...).Text()
	if err != nil {
		return failWrite("create user", err)
	}
	switch taken {
	case "":
		return nil
	case "name":
		return &chat.Error{Kind: chat.KindConflict, Message: "user name " + u.Name + " is taken", Reason: "name"}
	case "token":
		return &chat.Error{Kind: chat.KindConflict, Message: "token already in use", Reason: "token"}
	}
	return &chat.Error{Kind: chat.KindConflict, Message: "user id is taken", Reason: taken}
}

// User implements chat.Store.
func (s *Store) User(ctx context.Context, id string) (chat.User, error) {
	m, err := s.rdb.HGetAll(ctx, s.userKey(id)).Result()
	if err != nil {
		return chat.User{}, fail("read user", err)
	}
	return parseUser(m)
}

// UserByTokenHash implements chat.Store in one round trip (a script: the
// user's key is known only once the token index is read). The hash is the
// lookup key, so no stored secret is compared here.
func (s *Store) UserByTokenHash(ctx context.Context, hash string) (chat.User, error) {
	fields, err := userByToken.Run(ctx, s.rdb, []string{s.uk("tokens")}, hash, s.userKey("")).StringSlice()
	if err != nil {
		return chat.User{}, fail("read token", err)
	}
	m := make(map[string]string, len(fields)/2)
	for i := 0; i+1 < len(fields); i += 2 {
		m[fields[i]] = fields[i+1]
	}
	return parseUser(m)
}

// ProvisionUser implements chat.Store in one script in the {users} slot
// (one round trip; no write when the user already has its name).
func (s *Store) ProvisionUser(ctx context.Context, u chat.User, names []string) (chat.User, error) {
	u.TokenHash = ""
	args := []any{u.ID, len(names)}
	for _, name := range names {
		args = append(args, name, strings.ToLower(name))
	}
	args = append(args, userFields(u)...)
	keys := []string{s.userKey(u.ID), s.uk("names"), s.uk("ids")}
	fields, err := provisionUser.Run(ctx, s.rdb, keys, args...).StringSlice()
	if err != nil {
		if strings.HasPrefix(err.Error(), "CONFLICT") {
			return chat.User{}, &chat.Error{Kind: chat.KindConflict, Message: "every name this user may take is taken", Reason: "name"}
		}
		return chat.User{}, failWrite("provision user", err)
	}
	m := make(map[string]string, len(fields)/2)
	for i := 0; i+1 < len(fields); i += 2 {
		m[fields[i]] = fields[i+1]
	}
	return parseUser(m)
}

// UsersByID returns the users among ids that exist, in one pipelined round
// trip (all user keys share the {users} slot, so this holds on a cluster
// too). Live delivery rechecks the users of its open sockets with it after
// its feed reconnects.
func (s *Store) UsersByID(ctx context.Context, ids []string) (map[string]chat.User, error) {
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, s.userKey(id))
		}
		return nil
	})
	if err != nil {
		return nil, fail("read users", err)
	}
	out := make(map[string]chat.User, len(ids))
	for _, c := range cmds {
		if len(c.Val()) == 0 {
			continue
		}
		u, err := parseUser(c.Val())
		if err != nil {
			return nil, err
		}
		out[u.ID] = u
	}
	return out, nil
}

// Users implements chat.Store.
func (s *Store) Users(ctx context.Context) ([]chat.User, error) {
	ids, err := s.rdb.SMembers(ctx, s.uk("ids")).Result()
	if err != nil {
		return nil, fail("list users", err)
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, s.userKey(id))
		}
		return nil
	})
	if err != nil {
		return nil, fail("list users", err)
	}
	out := make([]chat.User, 0, len(ids))
	for _, c := range cmds {
		if len(c.Val()) == 0 {
			continue // deleted between SMEMBERS and HGETALL
		}
		u, err := parseUser(c.Val())
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

// UpdateUser implements chat.Store.
func (s *Store) UpdateUser(ctx context.Context, id string, ifRole chat.Role, p chat.UserPatch, ev *chat.Event, log *chat.ModEntry) (chat.User, error) {
	var fields []any
	if p.Role != nil {
		fields = append(fields, "role", string(*p.Role))
	}
	if p.TimedOutUntil != nil {
		v := ""
		if *p.TimedOutUntil != nil {
			v = (*p.TimedOutUntil).UTC().Format(timeLayout)
		}
		fields = append(fields, "timeout_until", v)
	}
	if p.Banned != nil {
		fields = append(fields, "banned", strconv.FormatBool(*p.Banned))
	}
	if p.ModReason != nil {
		fields = append(fields, "reason", *p.ModReason)
	}
	var evData []byte
	if ev != nil {
		var err error
		if evData, err = json.Marshal(ev); err != nil {
			return chat.User{}, fmt.Errorf("encode event: %w", err)
		}
	}
	// On one server the change and its event are one script. A cluster
	// keeps users and channels in different slots: there the script stores
	// the event as pending beside the user (one atomic step), and it is
	// appended to the channel next, once (see pending.go).
	keys := []string{s.userKey(id)}
	args := []any{string(ifRole), "", "", "", s.revokedKey(), 0, "", 0}
	if log != nil && log.Action == "" {
		log = nil
	}
	ch, etype := "", chat.EventType("")
	switch {
	case ev != nil:
		ch, etype = ev.Channel, ev.Type
		if log != nil && log.Channel != ch {
			return chat.User{}, fmt.Errorf("update user: the log entry must be in the event's channel (%s, not %s)", ch, log.Channel)
		}
	case log != nil:
		ch = log.Channel
	}
	var pend pendingEvent
	switch {
	case ch != "" && s.cluster:
		var err error
		if pend, err = newPendingEvent(ch, etype, evData, log); err != nil {
			return chat.User{}, err
		}
		keys = append(keys, s.uk("pending"))
		args = []any{string(ifRole), string(etype), pend.encoded, pend.key, s.revokedKey(), 0, "", 0}
	case ch != "":
		margs, err := modArgs(log)
		if err != nil {
			return chat.User{}, err
		}
		keys = append(keys, s.ck(ch, "log"), s.ck(ch, "seq"), s.ck(ch, "trim"), s.ck(ch, "deleted"), s.modKey(ch))
		args = []any{string(ifRole), string(etype), evData, s.ck(ch, "live"), s.revokedKey(), s.logCap(), margs[0], margs[1]}
	}
	res, err := updateUser.Run(ctx, s.rdb, keys, append(args, fields...)...).StringSlice()
	if err != nil {
		return chat.User{}, scriptStatus("update user", err, "user")
	}
	if pend.key != "" {
		// The change is stored and its event is pending: if this append
		// fails, RepairPending appends it within pendingDrainEvery, so the
		// caller gets the change it asked for either way.
		_ = s.applyPending(ctx, pend)
	}
	m := make(map[string]string, len(res)/2)
	for i := 0; i+1 < len(res); i += 2 {
		m[res[i]] = res[i+1]
	}
	return parseUser(m)
}

// DeleteUser implements chat.Store.
func (s *Store) DeleteUser(ctx context.Context, id string, ifRole chat.Role) error {
	err := deleteUser.Run(ctx, s.rdb, s.userIndexKeys(id), id, string(ifRole), s.revokedKey()).Err()
	return scriptStatus("delete user", err, "user")
}

// ---- commands ----

func (s *Store) commandKeys(scope string) []string {
	return []string{s.cmdk(scope, "all"), s.cmdk(scope, "triggers"), s.cmdk(scope, "counts")}
}

func encodeCommand(c chat.Command) ([]byte, error) {
	c.Count = 0 // the counter lives in its own hash so it is never lost to an update
	if c.Aliases == nil {
		c.Aliases = []string{}
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode command: %w", err)
	}
	return b, nil
}

func triggerArgs(name string, data []byte, c chat.Command) []any {
	args := []any{name, data}
	for _, t := range c.Triggers() {
		args = append(args, t)
	}
	return args
}

func takenBy(owner, trigger string) error {
	return &chat.Error{Kind: chat.KindConflict, Reason: "command", Message: "a trigger of " + trigger + " is taken by " + owner}
}

// CreateCommand implements chat.Store.
func (s *Store) CreateCommand(ctx context.Context, c chat.Command, max int) error {
	data, err := encodeCommand(c)
	if err != nil {
		return err
	}
	args := []any{c.Name, data, max}
	for _, t := range c.Triggers() {
		args = append(args, t)
	}
	owner, err := createCommand.Run(ctx, s.rdb, s.commandKeys(c.Channel)[:2], args...).Text()
	if err != nil && strings.HasPrefix(err.Error(), "LIMIT commands") {
		return chat.LimitReached(chat.QuotaCommands, max)
	}
	if err != nil {
		return failWrite("create command", err)
	}
	if owner == c.Name {
		return &chat.Error{Kind: chat.KindConflict, Reason: "command", Message: "command " + c.Name + " already exists"}
	}
	if owner != "" {
		return takenBy(owner, c.Name)
	}
	return nil
}

// Command implements chat.Store in one round trip (a script: the name is
// known only once the trigger index is read).
func (s *Store) Command(ctx context.Context, scope, trigger string) (chat.Command, error) {
	res, err := commandByTrigger.Run(ctx, s.rdb, s.commandKeys(scope), trigger).StringSlice()
	if err != nil {
		return chat.Command{}, fail("read command", err)
	}
	return decodeCommand(trigger, res)
}

// decodeCommand reads commandByTrigger's answer.
func decodeCommand(trigger string, res []string) (chat.Command, error) {
	if len(res) != 2 {
		return chat.Command{}, chat.NotFound("command")
	}
	var c chat.Command
	if err := json.Unmarshal([]byte(res[0]), &c); err != nil {
		return chat.Command{}, fmt.Errorf("decode command %s: %w", trigger, err)
	}
	c.Count, _ = strconv.ParseInt(res[1], 10, 64)
	return c, nil
}

// Commands implements chat.Store.
func (s *Store) Commands(ctx context.Context, scope string) ([]chat.Command, error) {
	var raw, counts *redis.MapStringStringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		raw = p.HGetAll(ctx, s.cmdk(scope, "all"))
		counts = p.HGetAll(ctx, s.cmdk(scope, "counts"))
		return nil
	})
	if err != nil {
		return nil, fail("list commands", err)
	}
	out := make([]chat.Command, 0, len(raw.Val()))
	for name, data := range raw.Val() {
		var c chat.Command
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return nil, fmt.Errorf("decode command %s: %w", name, err)
		}
		c.Count, _ = strconv.ParseInt(counts.Val()[name], 10, 64)
		out = append(out, c)
	}
	return out, nil
}

// UpdateCommand implements chat.Store.
func (s *Store) UpdateCommand(ctx context.Context, name string, c chat.Command) error {
	data, err := encodeCommand(c)
	if err != nil {
		return err
	}
	owner, err := updateCommand.Run(ctx, s.rdb, s.commandKeys(c.Channel)[:2], triggerArgs(name, data, c)...).Text()
	if err != nil {
		return scriptStatus("update command", err, "command")
	}
	if owner != "" {
		return takenBy(owner, name)
	}
	return nil
}

// DeleteCommand implements chat.Store.
func (s *Store) DeleteCommand(ctx context.Context, scope, name string) error {
	n, err := deleteCommand.Run(ctx, s.rdb, s.commandKeys(scope), name).Int()
	if err != nil {
		return failWrite("delete command", err)
	}
	if n == 0 {
		return chat.NotFound("command")
	}
	return nil
}

// CountCommand implements chat.Store.
func (s *Store) CountCommand(ctx context.Context, scope, name string) (int64, error) {
	n, err := countCommand.Run(ctx, s.rdb, []string{s.cmdk(scope, "all"), s.cmdk(scope, "counts")}, name).Int64()
	if err != nil {
		return 0, scriptStatus("count command", err, "command")
	}
	return n, nil
}

// ---- filters ----

// CreateFilter implements chat.Store.
func (s *Store) CreateFilter(ctx context.Context, f chat.Filter, lim chat.Limits) (chat.Filter, error) {
	f.ID = ""
	scope := f.Channel
	f.Channel = "" // the key says it
	data, err := json.Marshal(f)
	if err != nil {
		return chat.Filter{}, fmt.Errorf("encode filter: %w", err)
	}
	id, err := createFilter.Run(ctx, s.rdb, []string{s.fk(scope, "all"), s.fk(scope, "seq")}, data, lim.Filters, lim.RegexFilters, string(f.Kind)).Text()
	switch {
	case err == nil:
	case strings.HasPrefix(err.Error(), "LIMIT filters"):
		return chat.Filter{}, chat.LimitReached(chat.QuotaFilters, lim.Filters)
	case strings.HasPrefix(err.Error(), "LIMIT regex"):
		return chat.Filter{}, chat.LimitReached(chat.QuotaRegexFilters, lim.RegexFilters)
	default:
		return chat.Filter{}, failWrite("create filter", err)
	}
	f.ID, f.Channel = id, scope
	return f, nil
}

// Filters implements chat.Store.
func (s *Store) Filters(ctx context.Context, scope string) ([]chat.Filter, error) {
	m, err := s.rdb.HGetAll(ctx, s.fk(scope, "all")).Result()
	if err != nil {
		return nil, fail("list filters", err)
	}
	return decodeFilters(scope, m)
}

// decodeFilters reads the filters of scope; the scope is the key's, not
// stored in each filter.
func decodeFilters(scope string, m map[string]string) ([]chat.Filter, error) {
	out := make([]chat.Filter, 0, len(m))
	for id, data := range m {
		var f chat.Filter
		if err := json.Unmarshal([]byte(data), &f); err != nil {
			return nil, fmt.Errorf("decode filter %s: %w", id, err)
		}
		f.ID, f.Channel = id, scope
		out = append(out, f)
	}
	return out, nil
}

// DeleteFilter implements chat.Store.
func (s *Store) DeleteFilter(ctx context.Context, scope, id string) error {
	n, err := s.rdb.HDel(ctx, s.fk(scope, "all"), id).Result()
	if err != nil {
		return failWrite("delete filter", err)
	}
	if n == 0 {
		return chat.NotFound("filter")
	}
	return nil
}

// ---- gates ----

// Acquire implements chat.Store.
func (s *Store) Acquire(ctx context.Context, now time.Time, gates ...chat.Gate) (time.Duration, error) {
	if len(gates) == 0 {
		return 0, nil
	}
	keys, durations, err := s.gateArgs(gates)
	if err != nil {
		return 0, err
	}
	ms, err := acquire.Run(ctx, s.rdb, keys, append([]any{now.UnixMilli()}, durations...)...).Int64()
	if err != nil {
		return 0, failWrite("acquire gate", err)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// gateArgs are the keys and durations (ms) of gates for passGates.
func (s *Store) gateArgs(gates []chat.Gate) ([]string, []any, error) {
	keys := make([]string, len(gates))
	durations := make([]any, len(gates))
	for i, g := range gates {
		if g.Channel != gates[0].Channel {
			// One script, one slot: a channel's gates pass together.
			return nil, nil, fmt.Errorf("acquire gates: all gates must be in one channel (%s and %s)", gates[0].Channel, g.Channel)
		}
		keys[i] = s.ck(g.Channel, "gate:"+g.Key)
		durations[i] = g.For.Milliseconds()
	}
	return keys, durations, nil
}

// ---- sends ----

// ReadForSend implements chat.Store with one pipeline: the user, the
// filters, the channel's settings, the send-limit count and the command are
// independent, so they go to Redis together (on a Cluster, go-redis sends
// each node its part at once). Only the first send after Redis lost its
// scripts pays one more round trip per script (the count, the command).
func (s *Store) ReadForSend(ctx context.Context, r chat.SendReads) chat.SendState {
	var (
		st       chat.SendState
		user     *redis.MapStringStringCmd
		filters  *redis.MapStringStringCmd
		own      *redis.MapStringStringCmd
		standing *standingCmds
		settings *redis.MapStringStringCmd
		shield   *redis.StringCmd
		chatter  *redis.BoolCmd
		unique   *redis.StringCmd
		count    *redis.Cmd
		command  *redis.Cmd
		ownCmd   *redis.Cmd
		once     *redis.MapStringStringCmd
	)
	countKeys, countArgs, countErr := s.countArgs(r)
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		if r.User != "" {
			user = p.HGetAll(ctx, s.userKey(r.User))
		}
		filters = p.HGetAll(ctx, s.fk("", "all"))
		if r.In != "" {
			own = p.HGetAll(ctx, s.fk(r.In, "all"))
			if r.Member != "" {
				cmds := s.queueStanding(ctx, p, r.In, r.Member)
				standing = &cmds
			}
		}
		if r.Channel != "" {
			settings, shield = s.readChannel(ctx, p, r.Channel)
			if r.Chatter != "" {
				chatter = p.SIsMember(ctx, s.ck(r.Channel, "seen"), r.Chatter)
			}
		}
		if r.Unique.Key != "" {
			unique = p.Get(ctx, s.ck(r.Unique.Channel, "gate:"+r.Unique.Key))
		}
		if countKeys != nil {
			count = countSend.EvalSha(ctx, p, countKeys, countArgs...)
		}
		if r.Trigger != "" {
			command = commandByTrigger.EvalSha(ctx, p, s.commandKeys(""), r.Trigger)
			if r.In != "" {
				ownCmd = commandByTrigger.EvalSha(ctx, p, s.commandKeys(r.In), r.Trigger)
			}
		}
		if r.Once.Key != "" {
			once = p.HGetAll(ctx, s.onceKey(r.Once.Channel, r.Once.Key))
		}
		return nil
	})
	if user != nil {
		if err := user.Err(); err != nil {
			st.UserErr = failPipeline("read user", err)
		} else {
			st.User, st.UserErr = parseUser(user.Val())
		}
	}
	if err := filters.Err(); err != nil {
		st.FiltersErr = failPipeline("list filters", err)
	} else {
		st.Filters, st.FiltersErr = decodeFilters("", filters.Val())
	}
	if own != nil {
		if err := own.Err(); err != nil {
			st.ChannelFiltersErr = failPipeline("list channel filters", err)
		} else {
			st.ChannelFilters, st.ChannelFiltersErr = decodeFilters(r.In, own.Val())
		}
	}
	if standing != nil {
		st.Standing, st.StandingErr = standing.standing("read standing")
	}
	if settings != nil {
		c, err := parseChannel(r.Channel, settings, shield)
		if err != nil {
			st.ChannelErr = failPipeline("read channel", err)
		}
		st.Channel = c
	}
	if chatter != nil {
		if err := chatter.Err(); err != nil {
			st.ChatterErr = failPipeline("read chatter", err)
		}
		st.Chatter = chatter.Val()
	}
	if unique != nil {
		// A gate holds the unix ms until which it is closed (passGates).
		switch until, err := unique.Int64(); {
		case err == nil:
			st.UniqueWait = max(0, time.UnixMilli(until).Sub(r.Now))
		case !errors.Is(err, redis.Nil):
			st.UniqueErr = failPipeline("read unique chat", err)
		}
	}
	switch {
	case countErr != nil:
		st.CountErr = countErr
	case count != nil:
		if redis.HasErrorPrefix(count.Err(), "NOSCRIPT") {
			count = countSend.Eval(ctx, s.rdb, countKeys, countArgs...) // EVAL also caches it
		}
		st.SendWait, st.CountErr = sendWait(count)
	}
	if command != nil {
		// The channel's own command wins over the platform-wide one.
		st.Command, st.CommandErr = s.sentCommand(ctx, r.In, r.Trigger, ownCmd)
		if ownCmd == nil || errors.Is(st.CommandErr, chat.ErrNotFound) {
			st.Command, st.CommandErr = s.sentCommand(ctx, "", r.Trigger, command)
		}
	}
	if once != nil {
		if err := once.Err(); err != nil {
			st.OnceErr = failPipeline("read idempotency record", err)
		} else {
			st.Once, st.OnceErr = decodeOnce(r.Once.Channel, once.Val())
		}
	}
	return st
}

// sentCommand reads a commandByTrigger of ReadForSend's pipeline for the
// commands of scope (NotFound when cmd is nil), running it again when
// Redis had lost the script.
func (s *Store) sentCommand(ctx context.Context, scope, trigger string, cmd *redis.Cmd) (chat.Command, error) {
	if cmd == nil {
		return chat.Command{}, chat.NotFound("command")
	}
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		cmd = commandByTrigger.Eval(ctx, s.rdb, s.commandKeys(scope), trigger)
	}
	res, err := cmd.StringSlice()
	if err != nil {
		return chat.Command{}, failPipeline("read command", err)
	}
	return decodeCommand(trigger, res)
}

// decodeOnce reads an idempotency record written by appendMessage: each
// part's id and event json, and the fingerprint.
func decodeOnce(channel string, fields map[string]string) (chat.OnceRecord, error) {
	rec := chat.OnceRecord{Fingerprint: fields["f"]}
	for _, part := range []chat.OncePart{chat.OnceMessage, chat.OnceReply} {
		id, ok := fields[string(part)]
		if !ok {
			continue
		}
		ev, err := decode(channel, redis.XMessage{ID: id + "-0", Values: map[string]any{"d": fields[string(part)+"d"]}})
		if err != nil || ev.Message == nil {
			return chat.OnceRecord{}, fmt.Errorf("idempotency record of %s: %s: %v", channel, part, err)
		}
		if part == chat.OnceMessage {
			rec.Message = ev.Message
		} else {
			rec.Reply = ev.Message
		}
	}
	return rec, nil
}

// countArgs are the keys and arguments of the countSend script for r, or
// no keys when r counts nothing. The key is "rate:<prefix>sendlimit:<user>",
// the one redis_rate (which the HTTP layer's limiter used before the limit
// moved into the domain) gives, so a rolling upgrade keeps counts. One key
// per script, so it needs no hash tag on a Cluster.
func (s *Store) countArgs(r chat.SendReads) ([]string, []any, error) {
	if r.CountUser == "" || r.Limit.Off() {
		return nil, nil, nil
	}
	if err := r.Limit.Validate(); err != nil {
		return nil, nil, err
	}
	return []string{"rate:" + s.prefix + "sendlimit:" + r.CountUser},
		[]any{r.Limit.Max, r.Limit.Max, r.Limit.Window.Seconds(), 1}, nil
}

// sendWait reads countSend's answer: 0 when the message may go, else the
// wait (at least a nanosecond).
func sendWait(c *redis.Cmd) (time.Duration, error) {
	vals, err := c.Slice()
	if err != nil {
		return 0, failPipeline("count send", err)
	}
	if len(vals) != 4 {
		return 0, fail("count send", fmt.Errorf("unexpected reply %v", vals))
	}
	if allowed, _ := vals[0].(int64); allowed > 0 {
		return 0, nil
	}
	retry, _ := vals[2].(string)
	secs, err := strconv.ParseFloat(retry, 64)
	if err != nil {
		return 0, fail("count send", fmt.Errorf("retry after %q: %w", retry, err))
	}
	return max(time.Duration(secs*float64(time.Second)), time.Nanosecond), nil
}

// Ping implements chat.Store.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fail("ping", err)
	}
	return nil
}

// Close implements chat.Store: it closes the clients Open made; a Store
// built with New leaves its clients to their owner.
func (s *Store) Close() error {
	var errs []error
	for _, c := range s.owned {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
