package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/redis/go-redis/v9"
)

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
