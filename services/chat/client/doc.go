// Package client is the chat service's Go client, for anyone to import:
// the REST API (sends with Idempotency-Key, history paging, users, roles,
// moderation) and the WebSocket, at two levels.
//
// Subscribe is what a reader wants: it keeps one channel's events coming
// over as many sockets as it takes, reconnecting with exponential backoff
// and jitter and resuming with since=<the last cursor it saw>, so nothing
// is missed or repeated while the server still holds the events (a hello
// with Recovered false says when it does not); a TokenSource renews a
// platform token before its exp with a refresh frame, and after a refusal.
//
// Dial, Conn and the frame functions (ParseFrame, ScanFrame, WSURL) are the
// low level, for tools that measure the server: ScanFrame reads message
// events without encoding/json, so a load generator costs less than what
// it loads.
//
// The protocol itself is documented by the service (GET /docs, the
// README's "WebSocket protocol"); this package is its one Go
// implementation, used by the repository's own tools (deploy/scripts/e2e,
// deploy/scripts/faults, bench).
package client
