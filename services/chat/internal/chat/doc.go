// Package chat is the chat domain: channels, messages, roles and their
// permission table, bot commands, users, moderation and message filters.
//
// It holds the rules only. Storage engines (memory, Redis) implement Store,
// and the HTTP and real-time layers call Service. Nothing here imports an
// HTTP or Redis package, so every rule is tested once against every engine.
//
// Round trips: a send's cost on a busy replica is mostly its sequential
// round trips to the store, not Redis's work (0.1-1 ms): while the replica's
// CPU fans messages out, a goroutine waiting on a reply resumes only when
// the scheduler gets to it, so every round trip can cost milliseconds
// (TestSendRoundTrips; docs/benchmarks.md). So Send reads everything it needs before
// it writes in one Store.ReadForSend (one Redis pipeline), passes slow mode
// in the same step as the append, and does not read again a user the
// request in hand just authenticated (Sender: Fresh for HTTP, Held for a
// WebSocket session, which is read again). An HTTP send is three round
// trips (token, reads, append), a WebSocket send two.
package chat
