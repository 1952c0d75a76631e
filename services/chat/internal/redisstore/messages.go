package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
)

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
	args := append([]any{s.history, data, s.ck(ch, "live"), m.CreatedAt.UnixMilli(), "", "", 0, w.Chatter}, append(raid, s.logCap())...)
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
