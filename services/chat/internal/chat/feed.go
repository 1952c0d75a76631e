package chat

import "context"

// The live-delivery contract: how an engine tells a replica that a
// channel's log grew, or that a user's sockets must close. Both engines
// implement FeedSource beside Store; live delivery (internal/realtime) is
// handed one and never looks into the engine.
//
// A notice is a hint with a shortcut, never the only copy: the event log
// stays the record. A replica applies a notice's event directly when its
// Prev is the last cursor the replica delivered in that channel (the common
// case: nothing in between was missed), and otherwise reads the log from
// its own cursor. A notice without an event (Event nil) only says "read the
// log": engines send one when a watch becomes active and after they
// reconnect, so whatever was appended while nobody listened is found.

// Revocation reasons: why a user's open sockets must close.
const (
	// RevokeDeleted: the user was deleted (its token no longer exists).
	RevokeDeleted = "deleted"
	// RevokeBanned: the user was banned.
	RevokeBanned = "banned"
	// RevokeRecheck: revocations may have been missed (the feed
	// reconnected): check every user that has a socket open.
	RevokeRecheck = "recheck"
)

// Feed failure reasons: what went wrong with a feed's connection to its
// engine (a closed set, as they label a metric).
const (
	// FeedFailConnect: a connection could not be opened.
	FeedFailConnect = "connect"
	// FeedFailSubscribe: the engine refused a (re)subscription with an
	// error reply.
	FeedFailSubscribe = "subscribe"
	// FeedFailReceive: an open connection broke, or went silent.
	FeedFailReceive = "receive"
	// FeedFailPlace: the server that owns a channel could not be found (a
	// Redis Cluster's slot map could not be read).
	FeedFailPlace = "place"
)

// FeedFailure is a failure the feed met and recovers from by itself (it
// retries, and every watched channel reads its log once its subscription
// is back): reported so the replica logs and counts it.
type FeedFailure struct {
	Reason string // FeedFailConnect, FeedFailSubscribe, FeedFailReceive or FeedFailPlace
	// Server names the engine's server ("" for the only one).
	Server string
	Err    error
}

// Notice says that Channel's log has new events, or, with Revoke set,
// that a user's sockets must close, or, with Failure set, that the feed
// failed (and nothing else).
type Notice struct {
	Failure *FeedFailure

	// Revoke is a revocation reason (RevokeDeleted, RevokeBanned,
	// RevokeRecheck); empty for a channel notice. User names the user
	// (empty with RevokeRecheck).
	Revoke string
	User   string

	Channel string
	// Prev is the cursor of the event before Event in the log (zero for
	// the channel's first event).
	Prev Cursor
	// Event is the appended event, or nil: read the log.
	Event *Event
}

// FeedSource is implemented by engines whose log can notify (both do).
type FeedSource interface {
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

// UserLookup finds users by id: what a RevokeRecheck needs of the engine
// (every Store is one).
type UserLookup interface {
	// UsersByID returns the users among ids that exist.
	UsersByID(ctx context.Context, ids []string) (map[string]User, error)
}

var _ UserLookup = Store(nil)
