// Package feed is how an engine tells a replica's live delivery that a
// channel's log grew: a notice per appended event, carrying the event and
// the cursor of the one before it, for the channels the replica watches.
//
// A notice is a hint with a shortcut, never the only copy: the event log
// stays the record. A replica applies a notice's event directly when its
// Prev is the last cursor the replica delivered in that channel (the common
// case: nothing in between was missed), and otherwise reads the log from
// its own cursor. A notice without an event (Event nil) only says "read the
// log": engines send one when a watch becomes active and after they
// reconnect, so whatever was appended while nobody listened is found.
package feed

import (
	"context"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// Revocation reasons: why a user's open sockets must close.
const (
	// Deleted: the user was deleted (its token no longer exists).
	Deleted = "deleted"
	// Banned: the user was banned.
	Banned = "banned"
	// Recheck: revocations may have been missed (the feed reconnected):
	// check every user that has a socket open.
	Recheck = "recheck"
)

// Failure reasons: what went wrong with a feed's connection to its engine
// (a closed set, as they label a metric).
const (
	// FailConnect: a connection could not be opened.
	FailConnect = "connect"
	// FailSubscribe: the engine refused a (re)subscription with an error
	// reply.
	FailSubscribe = "subscribe"
	// FailReceive: an open connection broke, or went silent.
	FailReceive = "receive"
	// FailPlace: the server that owns a channel could not be found (a
	// Redis Cluster's slot map could not be read).
	FailPlace = "place"
)

// Failure is a failure the feed met and recovers from by itself (it
// retries, and every watched channel reads its log once its subscription
// is back): reported so the replica logs and counts it.
type Failure struct {
	Reason string // FailConnect, FailSubscribe, FailReceive or FailPlace
	// Server names the engine's server ("" for the only one).
	Server string
	Err    error
}

// Notice says that Channel's log has new events, or, with Revoke set,
// that a user's sockets must close, or, with Failure set, that the feed
// failed (and nothing else).
type Notice struct {
	Failure *Failure

	// Revoke is a revocation reason (Deleted, Banned, Recheck); empty for
	// a channel notice. User names the user (empty with Recheck).
	Revoke string
	User   string

	Channel string
	// Prev is the cursor of the event before Event in the log (zero for
	// the channel's first event).
	Prev chat.Cursor
	// Event is the appended event, or nil: read the log.
	Event *chat.Event
}

// Source is implemented by engines whose log can notify.
type Source interface {
	// Subscribe starts a feed that calls fn with the notices of every
	// channel it watches, and with every revocation. fn may be called from
	// several goroutines at once (the Redis engine has one per server it
	// listens to), and a channel's notices come in its order except while
	// the feed moves the channel from one connection to another (a Redis
	// Cluster slot moved): a notice is a hint, and a room that gets one
	// out of order reads its log. fn must not block: it hands the notice to
	// the channel's worker. Engines announce a revocation in the same step
	// as the deletion or ban it follows from.
	Subscribe(fn func(Notice)) (Feed, error)
}

// Feed is one replica's subscription. Its cost is fixed (the Redis engine
// uses one connection per server whatever the number of channels); a
// channel it does not watch costs it nothing.
type Feed interface {
	// Watch starts notices for channel. Watches are counted: a channel
	// stays watched until Unwatch was called as often as Watch. Once the
	// watch is active the feed sends a notice without an event, so a
	// caller that read the log's head before may have missed nothing.
	Watch(ctx context.Context, channel string) error
	// Unwatch ends one Watch of channel.
	Unwatch(ctx context.Context, channel string) error
	// Close stops the feed.
	Close() error
}
