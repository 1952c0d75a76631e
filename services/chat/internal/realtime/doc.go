// Package realtime is the chat's live delivery: the WebSocket endpoint
// GET /api/v1/ws, history recovery and presence (the browser client that
// speaks it is package web).
//
// # How events reach a replica
//
// Every channel's events live in its log (chat.EventLog: one Redis Stream
// per channel, or the memory engine's log); the log is the record that
// recovery (since=), history and ordering rest on. A replica learns that a
// log grew from the engine's feed (chat.FeedSource, which cmd/chat hands the hub): every script that appends
// to a channel's stream also publishes the new entry, prefixed by the id of
// the entry before it, on the channel's "live" shard channel (SPUBLISH, in
// the channel's hash slot). Each replica holds ONE Pub/Sub connection per
// Redis primary that owns a channel it watches (one on a single server,
// at most one per primary on a Cluster), subscribed (SSUBSCRIBE) to the
// live keys of the channels that have subscribers on it, whatever their
// number, plus one for revocations; Redis sends a replica nothing for the
// other channels, so a channel nobody watches here costs this replica
// nothing, and a watched but quiet one costs a subscription. Sharded, not
// classic, Pub/Sub because a Cluster relays a classic PUBLISH to every
// node over its bus (measured p99 33 ms between two primaries, against
// 0.44 ms on one node), while a shard message is delivered by the primary
// that ran the append. When a slot moves, its old primary ends the
// subscription (sunsubscribe); the feed subscribes on the new owner, and
// that confirmation makes the room read its log (below), so the move
// skips and repeats nothing.
//
// Each channel with subscribers here is a room. A room holds its position
// (the last event it fanned out) and an inbox. A notice whose "previous
// entry" is the room's position is fanned out as it is: no read, no wait.
// A notice that does not follow (notices were lost: the connection dropped
// and came back) or one without an event (the engine sends one when a watch
// becomes active, including after each reconnect) makes the room read its
// log from its own position with short non-blocking XRANGEs on the shared
// pool until it has everything, so nothing in the history window is ever
// skipped, repeated or reordered; a position that left the window (or a
// reset store) closes the room's subscribers with 4010, and they recover
// with since=. A new room watches first and reads the head second, so no
// event falls between the two.
//
// Why not the alternatives. One blocking XREAD per channel (what this
// replaced) holds a pooled connection per active channel: at 1,000 channels
// the pool of 20 queued reads behind one another (p99 4 s, and sends timed
// out behind them). One XREAD over many streams per reader shard fixes the
// connection count on one server, but a Redis Cluster refuses multi-key
// reads across slots, and adding a channel means interrupting the blocked
// read. Pub/Sub alone loses what was published while a connection was down
// (at most once); here it is only the doorbell, with the event attached as
// a shortcut, and the stream stays the source of truth (the design of
// Centrifugo's Redis broker: publish with an offset, recover from the
// stream on a gap; Centrifugo also moved to sharded Pub/Sub for Cluster).
//
// # Batching
//
// A room waits for nothing to batch. The feed's goroutines only append
// notices to the room's inbox; a worker goroutine, started when there is
// work and none is running (an idle room has no goroutine), takes
// everything the inbox holds,
// encodes it once into frames of up to Options.Batch events and queues the
// same bytes on every subscriber. A lone message goes out as soon as it is
// read; notices that arrive while the worker fans out go out together in
// its next round.
//
// Sockets are written by the hub's writer pool, not a goroutine each: a
// connection with something queued is put once on a ready FIFO, and
// Options.Writers runners (GOMAXPROCS-1, at least 1; CHAT_WS_WRITERS)
// take connections from its head, write what each has queued as one
// frame (joined up to Batch events) and put it back at the tail while
// more is queued. Why: with a writer per socket, one event readied ~500
// goroutines per replica, each woken and parked again to write one event,
// and they filled the run queues that HTTP requests and Redis replies wait
// in; sends were slow, arrived one by one, and each event went out alone:
// one write syscall per event per socket, the most expensive equilibrium
// (on one Redis: 1.3-1.4 events per frame). Bounded runners leave a P to
// the network, wake no goroutine per subscriber, and a pass over the FIFO
// writes in one frame everything that arrived meanwhile: at saturation
// frames carry many events and a socket costs one write per batch, while
// at moderate rates each event costs one write and no delay. A write to a
// slow peer (full TCP buffers) that lasts over 2 ms gets its runner
// replaced, so it holds up nobody else, and the janitor closes a socket
// whose write is stuck for WriteTimeout.
//
// The one wait: a socket that stays backlogged (three writes in a row
// carried several events each, but not a full frame, at a rate that fills
// a paced write with at least four) is paced, written at most once per
// Options.Pace (16 ms). Unpaced, at saturation the runners
// go round as fast as they can and each pass writes the few events that
// came during the last: a write per socket per pass, most of a delivery's
// CPU. Paced, a write carries the events of 16 ms, and the CPU the writes
// no longer take goes to the sends. A socket that keeps up (one event per
// write, or the two or three the feed hands over together at a moderate
// rate) is never held back, so a moderate rate pays no delay.
//
// A subscriber whose queue overflows is closed (4008) and recovers with
// since=, never slowing the others.
//
// # Revocations
//
// Deleting or banning a user publishes "deleted <id>" or "banned <id>" on
// one revocation key, which every replica's feed subscribes to; the replica
// closes that user's sockets (4003, 4004). Pub/Sub is at most once, so a
// revocation published while a feed was disconnected is lost: when the
// feed (re)subscribes it asks the hub to recheck, and the hub looks up
// every user with a socket open here, 100 per round trip, one recheck at a
// time (a reconnect during one makes it run once more), retrying until the
// store answers, and closes the sockets of users that no longer exist or
// were banned after their socket authenticated (a user banned before may
// still read, as the protocol says).
//
// A ban held in one channel needs no revocation: its user_banned event
// (moderation.scope "channel") is in that channel's log, which every
// replica with sockets on the channel reads anyway; the room closes the
// banned user's sockets there (4005) when it fans the event out, also
// when it catches up after a gap.

package realtime

// Protocol documents the WebSocket protocol; /docs shows it on the
// endpoint and the README carries the same text.
const Protocol = "`GET /api/v1/ws?channel=<name>&since=<cursor>` upgrades to a WebSocket. " +
	"Frames are JSON text; one frame may carry several objects, **one per line** (`\\n`-separated).\n\n" +
	"**Reading** is anonymous while `CHAT_PUBLIC_READ=true`. Otherwise authenticate with an `Authorization: Bearer <token>` " +
	"header, or (browsers cannot set headers) offer it as a subprotocol, `new WebSocket(url, [\"chat\", \"bearer.<token>\"])` " +
	"(the server selects `chat`), or send `{\"type\":\"auth\",\"token\":\"...\"}` as the first frame within 10 s. " +
	"A socket with a token in its handshake counts as its user's from the start (see the limits below). " +
	"`Origin`, when sent, must match `CORS_ORIGIN` (or be this server's own origin): otherwise 403 before the upgrade. " +
	"A malformed `Authorization` header or an unknown token is 401 (as over REST), a store that cannot check the token 503.\n\n" +
	"**Platform tokens** (JWTs, with `CHAT_JWT_SECRET` or `CHAT_JWKS_URL`) are taken wherever a token is: the handshake, `auth`. " +
	"A socket signed in with one is closed with **4002** at the token's `exp` unless, before then, the client sends " +
	"`{\"type\":\"refresh\",\"token\":\"<fresh JWT>\",\"id\":4}` with a valid token for the same user (same `sub`): " +
	"`ack` with `user`, and the socket now closes at the new `exp`. A refresh that fails leaves the socket as it was (to close at the old `exp`) " +
	"and is answered by an `error`: `unauthorized` (401) for an invalid or expired token, `forbidden` (403) for another user's, " +
	"`bad_request` (400) for a chat token or on a socket that holds no platform token. Chat tokens do not expire.\n\n" +
	"**Limits** (before the upgrade, with the error body and `Retry-After`): 429 `reason: too_many_sockets_per_user` past " +
	"`CHAT_WS_MAX_SOCKETS_PER_USER` open sockets of one user (default 20; the broadcaster is not bound), 429 " +
	"`reason: too_many_sockets_per_ip` past `CHAT_WS_MAX_SOCKETS_PER_IP` open sockets from one address (default 100), 429 " +
	"`reason: too_many_sockets_per_net` past `CHAT_WS_MAX_SOCKETS_PER_NET` from one network (default 1000; an IPv4 /24, an IPv6 /48: " +
	"`CHAT_WS_IPV4_NET_PREFIX`, `CHAT_WS_IPV6_NET_PREFIX`), 429 `reason: too_many_channels_per_ip` for a socket " +
	"on a new channel past `CHAT_WS_MAX_CHANNELS_PER_IP` distinct channels from one address (default 20), 503 " +
	"`reason: too_many_sockets` past `CHAT_WS_MAX_SOCKETS` on this replica (default 10000), 503 `reason: too_many_anonymous_sockets` " +
	"for a socket without a token when anonymous ones hold all but the share kept for users (`CHAT_WS_USER_RESERVE_PERCENT`, default 20%): " +
	"connect with a token in the handshake (header or subprotocol) to use it. Counted per replica; an IPv6 " +
	"address counts by its prefix, as for the rate limit (`RATE_LIMIT_IPV6_PREFIX`, /64 by default). A socket is anonymous until it " +
	"authenticates; an `auth` frame for a user with all its sockets is answered by an `error` (`rate_limited`, 429, " +
	"`reason: too_many_sockets_per_user`): the socket stays as it was, or, when reading needs the token, is closed with 4029.\n\n" +
	"**Server to client**\n\n" +
	"| type | fields |\n|---|---|\n" +
	"| `hello` | `channel`, `last_id` (the channel's cursor when the subscription started), `recovered`, `user` (when authenticated), `replica` (the serving replica's host name: its container's or pod's). First frame. `recovered:true`: every event after `since` follows, then live ones, no gap, no duplicate. `recovered:false` (no `since`, it left the history window, or its epoch says the store lost or reset that part of the log): load `GET /messages?channel=&before=<last_id's message id + 1>`; live events after `last_id` follow. |\n" +
	"| `message` | `channel`, `cursor`, `message` {`id`, `channel`, `user`{`id`,`name`,`role`}, `text`, `created_at`, `bot`} (`bot:true` marks a command reply) |\n" +
	"| `message_deleted` | `channel`, `cursor`, `message` (the tombstone: `deleted:true`, empty `text`) |\n" +
	"| `user_timed_out`, `user_banned` | `channel`, `cursor`, `moderation` {`user`, `by`, `reason`, `until` (timeouts), `at`, `scope` (`channel` when it holds in this channel only; absent when platform-wide)} |\n" +
	"| `shield_mode` | `channel`, `cursor`, `shield` {`on`, `auto`, `until`, `by`, `reason`, `at`}: shield mode switched by a moderator, on by the raid watch (`auto:true`, `by` automod, until `until` unless it trips again), or off by itself after the quiet period (`on:false`, `auto:true`) |\n" +
	"| `presence` | `channel`, `count`: connections in the channel over all replicas (after hello, then on change) |\n" +
	"| `ack` | `id` (the client's), and `message` + `reply` (the bot's, if any) for a send (`replayed:true` when an earlier send with the same `idempotency_key` answers), or `user` for an auth |\n" +
	"| `pong` | `id` |\n" +
	"| `error` | `id`, `code`, `status` (what `POST /messages/send` would answer), `message`, and `reason`, `retry_after_seconds`, `until`, `limit`, `details` (fields named as over REST: `body.message`) when they apply. Codes: the domain's (`invalid`, `unauthorized`, `forbidden`, `blocked`, `slow_mode`, `unavailable` = 503, nothing stored, ...), `bad_request`, `rate_limited` (per-connection limit), `internal` |\n\n" +
	"`cursor` orders a channel's events: `\"42.9f2c01a4\"` is message 42, `\"42-1.5b0e77c3\"` the first event (deletion, timeout, ban) after it; " +
	"the part after the dot is the entry's epoch, which tells it from another entry at the same place after the store lost or reset its log. " +
	"Remember the last `cursor` seen, as written, and reconnect with `since=<cursor>` (a bare message id also works, unchecked).\n\n" +
	"**Client to server**: `{\"type\":\"auth\",\"token\":\"...\",\"id\":1}`, `{\"type\":\"refresh\",\"token\":\"...\"}` (above), `{\"type\":\"send\",\"message\":\"hi\",\"id\":2}` " +
	"(to the connection's channel; the same rules as `POST /messages/send`: permissions, filters, commands, slow mode, per-user limit, storage; " +
	"answered by `ack` once stored, or `error`; `\"idempotency_key\":\"...\"` makes it happen once, like the HTTP `Idempotency-Key`: resend with it " +
	"after an `unavailable` error whose `reason` is `outcome_unknown`), `{\"type\":\"ping\",\"id\":3}`. `id` is optional and echoed. " +
	"Auth, refresh and send frames are limited per connection (5/s, burst 10).\n\n" +
	"**Close codes**: 1000 normal; 1001 server shutting down (reconnect with `since`); 1003 binary frame; 1009 frame over 4 KiB; " +
	"1011 internal error; 1013 store unavailable while subscribing (retry later, same `since`); " +
	"4001 unauthorized (reading needs a token); 4002 the platform token expired without a refresh (get a fresh token, reconnect with `since`); 4003 the authenticated user was deleted (do not reconnect with that token); " +
	"4004 the authenticated user was banned (sending is refused; reading follows the usual rules); 4005 the authenticated user was banned from this channel (a ban with `channel`, after its `user_banned` event; sending there is refused, other channels are not affected); 4008 too slow: more than 1024 events queued (reconnect with `since`); " +
	"4029 too many sockets for this user (reading needs the token; close another socket of the user first); " +
	"4010 resync: the replica lost its place in the log (reconnect with `since`). The server pings every 25 s and drops a peer that does not answer within 10 s."
