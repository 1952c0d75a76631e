// Package webhooks sends a channel's events to the platform's HTTP
// endpoints, signed as the Standard Webhooks specification says, at least
// once, from a durable queue (webhooks/redisq; webhooks/memq in memory).
//
// Events are derived, never handed over: a pump (one replica at a time,
// under a lease) reads each followed channel's event log and moderation
// log from a cursor and enqueues what it finds for every matching
// endpoint, moving the cursor in the same atomic step as the enqueue. An
// action is durable once the store has it, so a replica that dies after
// the action, or in the middle of a pump, loses nothing: the next pump
// reads from the cursor again (README: "Webhooks").
package webhooks
