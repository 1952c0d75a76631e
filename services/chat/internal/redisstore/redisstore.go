// Package redisstore is the Redis chat engine: one Stream per channel holds
// its messages and moderation events (entry id "<message id>-<seq>"), and
// users, commands and filters live in hashes, so any number of replicas
// share them. Multi-key writes are Lua scripts; every Redis failure is
// reported as the domain's Unavailable error.
//
// This file holds the store, its keys and its errors; the methods live in
// one file per role of chat.Store (messages.go, events.go, channels.go,
// users.go, standing.go, moderation.go, held.go, modlog.go, commands.go,
// filters.go, gates.go, send.go), the scripts in scripts.go.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

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
	// cluster: rdb is a Redis Cluster client; scripts never span slots.
	cluster bool
}

// Options configure the engine.
type Options struct {
	// History is how many messages a channel keeps (CHAT_HISTORY).
	History int
	// Prefix starts every key (default "chat:"); tests use it to share a server.
	Prefix string
}

// New wraps a client. The Store does not own rdb unless built by Open.
func New(rdb redis.UniversalClient, opts Options) *Store {
	if opts.History <= 0 {
		opts.History = chat.DefaultHistory
	}
	if opts.Prefix == "" {
		opts.Prefix = "chat:"
	}
	_, cluster := rdb.(*redis.ClusterClient)
	return &Store{rdb: rdb, history: opts.History, prefix: opts.Prefix, cluster: cluster}
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
