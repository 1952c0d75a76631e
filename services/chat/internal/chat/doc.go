// Package chat is the chat domain: channels, messages, roles and their
// permission table, bot commands, users, moderation and message filters.
//
// It holds the rules only. Storage engines (memory, Redis) implement Store,
// and the HTTP and real-time layers call Service. Nothing here imports an
// HTTP or Redis package, so every rule is tested once against every engine.
package chat
