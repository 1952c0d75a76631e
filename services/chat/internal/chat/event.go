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
// delivery reads. Both engines keep messages and the other events in one
// log per channel (Redis: one Stream), so a reader that remembers the last
// Cursor it handled resumes after a reconnect or a replica restart without a
// gap or a duplicate, on any replica.
type EventLog interface {
	// ReadEvents returns up to limit events of channel strictly after
	// `after`, in channel order. When there are none it waits up to block
	// (0: do not wait) for the next ones; an empty result with a nil error
	// means the wait ended. If an event after `after` has already been
	// trimmed from the history window, or `after` lies beyond the log's end
	// (the store was reset), it returns an error of KindHistoryGone: the
	// reader must reload instead of recovering.
	ReadEvents(ctx context.Context, channel string, after Cursor, limit int, block time.Duration) ([]Event, error)
	// Recoverable reports whether every event after `after` is still in the
	// history window (the answer a WebSocket hello's `recovered` needs).
	Recoverable(ctx context.Context, channel string, after Cursor) (bool, error)
	// Head returns the cursor of the channel's last event (zero if none).
	Head(ctx context.Context, channel string) (Cursor, error)
}

// TailOptions tune Tail; zero values take the defaults.
type TailOptions struct {
	// Limit is the most events per read (default 100).
	Limit int
	// Block is the longest single wait for new events (default 2 s). It
	// also bounds how long a cancelled ctx may go unnoticed by an engine
	// whose blocking read cannot be interrupted.
	Block time.Duration
	// MinBackoff and MaxBackoff bound the retry delay while the store is
	// unavailable (defaults 100 ms and 5 s).
	MinBackoff, MaxBackoff time.Duration
	// OnError sees each error that Tail retries (for logs and metrics).
	OnError func(error)
	// Coalesce is a pause after each batch shorter than Limit before the
	// next read (default 0: none), so that events appended meanwhile come
	// back as one batch. A channel's first event after a quiet spell is
	// read at once; only events following it within Coalesce wait, at most
	// that long. A full batch means more is waiting: the next read follows
	// at once, so the pause never caps throughput.
	Coalesce time.Duration
}

// Tail calls fn with every event of channel after `after`, in channel
// order, each once, until ctx ends or fn fails. While the store is
// unavailable it retries with capped exponential backoff from the last
// cursor fn accepted, so a Redis restart or a network blip skips nothing
// that is still in the history window. It returns an error of
// KindHistoryGone when the position has left the window (the caller must
// reload and start again from Head), ctx.Err(), or fn's error.
//
// Live delivery runs one Tail per channel per replica and fans the events
// out to that replica's subscribers.
func Tail(ctx context.Context, log EventLog, channel string, after Cursor, fn func([]Event) error, opts TailOptions) error {
	if opts.Limit <= 0 {
		opts.Limit = 100
	}
	if opts.Block <= 0 {
		opts.Block = 2 * time.Second
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 100 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(5*time.Second, opts.MinBackoff)
	}
	backoff := opts.MinBackoff
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		evs, err := log.ReadEvents(ctx, channel, after, opts.Limit, opts.Block)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if KindOf(err) != KindUnavailable {
				return err
			}
			if opts.OnError != nil {
				opts.OnError(err)
			}
			if err := Pause(ctx, backoff); err != nil {
				return err
			}
			backoff = min(backoff*2, opts.MaxBackoff)
			continue
		}
		backoff = opts.MinBackoff
		if len(evs) == 0 {
			continue
		}
		if err := fn(evs); err != nil {
			return err
		}
		after = evs[len(evs)-1].Cursor
		if opts.Coalesce > 0 && len(evs) < opts.Limit {
			if err := Pause(ctx, opts.Coalesce); err != nil {
				return err
			}
		}
	}
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
