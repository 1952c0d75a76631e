package chat

import (
	"context"
	"time"
)

// EventType names what happened in a channel.
type EventType string

// Event types, also the frame types of live delivery.
const (
	EventMessage        EventType = "message"
	EventMessageDeleted EventType = "message_deleted"
	EventUserTimedOut   EventType = "user_timed_out"
	EventUserBanned     EventType = "user_banned"
	// EventShieldMode: shield mode went on or off (Event.Shield).
	EventShieldMode EventType = "shield_mode"
)

// Event is one entry of a channel's event log, in channel order.
type Event struct {
	Type    EventType `json:"type"`
	Channel string    `json:"channel"`
	Cursor  Cursor    `json:"cursor"`
	// Message is the new message (message) or its tombstone (message_deleted).
	Message *Message `json:"message,omitempty"`
	// Moderation describes a timeout or a ban.
	Moderation *Moderation `json:"moderation,omitempty"`
	// Shield is shield mode's change (shield_mode).
	Shield *ShieldChange `json:"shield,omitempty"`
}

// Moderation is the payload of user_timed_out and user_banned.
type Moderation struct {
	User   UserRef `json:"user"`
	By     UserRef `json:"by"`
	Reason string  `json:"reason,omitempty"`
	// Until is when a timeout ends; nil for a ban.
	Until *time.Time `json:"until,omitempty"`
	At    time.Time  `json:"at"`
	// Scope is ScopeChannel when the ban or timeout holds in the event's
	// channel only; empty when it holds platform-wide (every event
	// written before channels had their own).
	Scope string `json:"scope,omitempty"`
}

// ScopeChannel is Moderation.Scope of a ban or timeout held in one channel.
const ScopeChannel = "channel"

// EventLog is the per-channel, ordered, bounded log of events that live
// delivery reads (a room, to fill a gap its feed's notices left; a
// connection, to recover from since=). Both engines keep messages and the other events in one
// log per channel (Redis: one Stream), so a reader that remembers the last
// Cursor it handled resumes after a reconnect or a replica restart without a
// gap or a duplicate, on any replica.
type EventLog interface {
	// ReadEvents returns up to limit events of channel strictly after
	// `after`, in channel order, at once: none (and a nil error) when
	// there are none yet. Readers learn when to read again from the
	// engine's feed (FeedSource), never by waiting here. If an event
	// after `after` has already been trimmed from the history window, or `after` lies beyond the log's end
	// (the store was reset), it returns an error of KindHistoryGone: the
	// reader must reload instead of recovering.
	ReadEvents(ctx context.Context, channel string, after Cursor, limit int) ([]Event, error)
	// Recoverable reports whether every event after `after` is still in the
	// history window (the answer a WebSocket hello's `recovered` needs).
	Recoverable(ctx context.Context, channel string, after Cursor) (bool, error)
	// Head returns the cursor of the channel's last event (zero if none).
	Head(ctx context.Context, channel string) (Cursor, error)
}

// Pause waits d or until ctx ends (then it returns ctx.Err()): the wait
// between retries of every loop that rides out a store outage.
func Pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
