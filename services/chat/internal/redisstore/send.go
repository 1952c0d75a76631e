package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/redis/go-redis/v9"
)

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
