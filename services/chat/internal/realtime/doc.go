// Package realtime is the chat's live delivery: the WebSocket endpoint
// GET /api/v1/ws, history recovery, presence, and the embedded browser client.
//
// Each replica runs one reader per channel that has subscribers here. The
// reader tails the channel's event log (chat.EventLog: one Redis Stream per
// channel, or the memory engine's log) from the last cursor it handled, so a
// message stored by any replica reaches every subscriber on every replica in
// the channel's order, once; a Redis outage only pauses the reader, which
// resumes from the same cursor. Each event is encoded once and the same bytes
// are queued on every subscriber; a subscriber that is behind gets up to 16
// events in one frame. After each batch the reader waits DefaultCoalesce
// before reading again, so a busy channel's events go out a window's worth
// at a time, one frame and one write per subscriber. A subscriber whose
// queue overflows is closed (4008) and recovers with since=, never slowing
// the others.
package realtime

// Protocol documents the WebSocket protocol; /docs shows it on the
// endpoint and the README carries the same text.
const Protocol = "`GET /api/v1/ws?channel=<name>&since=<cursor>` upgrades to a WebSocket. " +
	"Frames are JSON text; one frame may carry several objects, **one per line** (`\\n`-separated).\n\n" +
	"**Reading** is anonymous while `CHAT_PUBLIC_READ=true`. Otherwise authenticate with an `Authorization: Bearer <token>` " +
	"header, or (browsers cannot set headers) send `{\"type\":\"auth\",\"token\":\"...\"}` as the first frame within 10 s. " +
	"`Origin`, when sent, must match `CORS_ORIGIN` (or be this server's own origin): otherwise 403 before the upgrade.\n\n" +
	"**Server to client**\n\n" +
	"| type | fields |\n|---|---|\n" +
	"| `hello` | `channel`, `last_id` (the channel's cursor when the subscription started), `recovered`, `user` (when authenticated), `replica`. First frame. `recovered:true`: every event after `since` follows, then live ones, no gap, no duplicate. `recovered:false` (no `since`, or it left the history window): load `GET /messages?channel=&before=<last_id's message id + 1>`; live events after `last_id` follow. |\n" +
	"| `message` | `channel`, `cursor`, `message` {`id`, `channel`, `user`{`id`,`name`,`role`}, `text`, `created_at`, `bot`} (`bot:true` marks a command reply) |\n" +
	"| `message_deleted` | `channel`, `cursor`, `message` (the tombstone: `deleted:true`, empty `text`) |\n" +
	"| `user_timed_out`, `user_banned` | `channel`, `cursor`, `moderation` {`user`, `by`, `reason`, `until` (timeouts), `at`} |\n" +
	"| `presence` | `channel`, `count`: connections in the channel over all replicas (after hello, then on change) |\n" +
	"| `ack` | `id` (the client's), and `message` + `reply` (the bot's, if any) for a send, or `user` for an auth |\n" +
	"| `pong` | `id` |\n" +
	"| `error` | `id`, `code`, `status` (what `POST /messages/send` would answer), `message`, and `reason`, `retry_after_seconds`, `until`, `details` when they apply. Codes: the domain's (`invalid`, `unauthorized`, `forbidden`, `blocked`, `slow_mode`, `unavailable` = 503, nothing stored, ...), `bad_request`, `rate_limited` (per-connection limit), `internal` |\n\n" +
	"`cursor` orders a channel's events: `\"42\"` is message 42, `\"42-1\"` the first event (deletion, timeout, ban) after it. " +
	"Remember the last `cursor` seen and reconnect with `since=<cursor>` (a message id also works).\n\n" +
	"**Client to server**: `{\"type\":\"auth\",\"token\":\"...\",\"id\":1}`, `{\"type\":\"send\",\"message\":\"hi\",\"id\":2}` " +
	"(to the connection's channel; the same rules as `POST /messages/send`: permissions, filters, commands, slow mode, per-user limit, storage; " +
	"answered by `ack` once stored, or `error`), `{\"type\":\"ping\",\"id\":3}`. `id` is optional and echoed. " +
	"Auth and send frames are limited per connection (5/s, burst 10).\n\n" +
	"**Close codes**: 1000 normal; 1001 server shutting down (reconnect with `since`); 1003 binary frame; 1009 frame over 4 KiB; " +
	"1011 internal error; 1013 store unavailable while subscribing (retry later, same `since`); " +
	"4001 unauthorized (reading needs a token); 4008 too slow: more than 1024 events queued (reconnect with `since`); " +
	"4010 resync: the replica lost its place in the log (reconnect with `since`). The server pings every 25 s and drops a peer that does not answer within 10 s."
