package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/redis/go-redis/v9"
)

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
