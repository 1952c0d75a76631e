package redisstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/redis/go-redis/v9"
)

// HoldMessage implements chat.Store (holdMessage).
func (s *Store) HoldMessage(ctx context.Context, h chat.HeldMessage, max int, w chat.Watch, log *chat.ModEntry) (chat.HeldMessage, error) {
	h.ID = 0
	data, err := json.Marshal(h)
	if err != nil {
		return chat.HeldMessage{}, fmt.Errorf("encode held message: %w", err)
	}
	raid, err := raidArgs(w)
	if err != nil {
		return chat.HeldMessage{}, err
	}
	ch := h.Channel
	keys := []string{s.ck(ch, "held"), s.ck(ch, "heldq"), s.ck(ch, "heldseq"), s.ck(ch, "raid"), s.ck(ch, "shield"), s.ck(ch, "shieldoff"),
		s.ck(ch, "log"), s.ck(ch, "seq"), s.ck(ch, "trim"), s.ck(ch, "deleted"), s.modKey(ch)}
	args := append([]any{data, h.CreatedAt.UnixMilli(), h.ExpiresAt.UnixMilli(), max, w.Chatter}, raid...)
	margs, err := modArgs(log)
	if err != nil {
		return chat.HeldMessage{}, err
	}
	args = append(args, s.ck(ch, "live"), s.logCap(), margs[0], margs[1])
	id, err := holdMessage.Run(ctx, s.rdb, keys, args...).Int64()
	if err != nil && strings.HasPrefix(err.Error(), "LIMIT held") {
		return chat.HeldMessage{}, chat.LimitReached(chat.QuotaHeld, max)
	}
	if err != nil {
		return chat.HeldMessage{}, failWrite("hold message", err)
	}
	h.ID = id
	return h, nil
}

func decodeHeld(id, data string) (chat.HeldMessage, error) {
	var h chat.HeldMessage
	if err := json.Unmarshal([]byte(data), &h); err != nil {
		return chat.HeldMessage{}, fmt.Errorf("decode held message %s: %w", id, err)
	}
	h.ID, _ = strconv.ParseInt(id, 10, 64)
	return h, nil
}

// HeldMessages implements chat.Store.
func (s *Store) HeldMessages(ctx context.Context, channel string, now time.Time) ([]chat.HeldMessage, error) {
	var ids *redis.StringSliceCmd
	var all *redis.MapStringStringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		ids = p.ZRangeByScore(ctx, s.ck(channel, "heldq"), &redis.ZRangeBy{Min: "(" + strconv.FormatInt(now.UnixMilli(), 10), Max: "+inf"})
		all = p.HGetAll(ctx, s.ck(channel, "held"))
		return nil
	})
	if err != nil {
		return nil, fail("read held messages", err)
	}
	out := make([]chat.HeldMessage, 0, len(ids.Val()))
	for _, id := range ids.Val() {
		data, ok := all.Val()[id]
		if !ok {
			continue
		}
		h, err := decodeHeld(id, data)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	// The queue is ordered by expiry, which is arrival plus HeldTTL; ids
	// order arrivals exactly.
	slices.SortFunc(out, func(a, b chat.HeldMessage) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// HeldMessage implements chat.Store.
func (s *Store) HeldMessage(ctx context.Context, channel string, id int64, now time.Time) (chat.HeldMessage, error) {
	key := strconv.FormatInt(id, 10)
	var data *redis.StringCmd
	var exp *redis.FloatCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		data = p.HGet(ctx, s.ck(channel, "held"), key)
		exp = p.ZScore(ctx, s.ck(channel, "heldq"), key)
		return nil
	})
	if errors.Is(data.Err(), redis.Nil) || errors.Is(exp.Err(), redis.Nil) || err == nil && int64(exp.Val()) <= now.UnixMilli() {
		return chat.HeldMessage{}, chat.NotFound("held message")
	}
	if err != nil {
		return chat.HeldMessage{}, fail("read held message", err)
	}
	return decodeHeld(key, data.Val())
}

// DropHeld implements chat.Store.
func (s *Store) DropHeld(ctx context.Context, channel string, id int64) error {
	key := strconv.FormatInt(id, 10)
	var n *redis.IntCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		n = p.HDel(ctx, s.ck(channel, "held"), key)
		p.ZRem(ctx, s.ck(channel, "heldq"), key)
		return nil
	})
	if err != nil {
		return failWrite("drop held message", err)
	}
	if n.Val() == 0 {
		return chat.NotFound("held message")
	}
	return nil
}
