package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// Moderation events on a Redis Cluster. A timeout or ban changes the user
// (slot {users}) and appends an event to a channel's log (slot {ch:...}):
// no script may span both. So the user change and the event, as a pending
// entry in the hash <prefix>{users}:pending, are one script (updateUser),
// and the event reaches the channel by appendPending, which is idempotent
// per entry (a marker key in the channel's slot). The engine runs it right
// after the change; when that fails (the channel's primary is down, the
// process dies) the entry stays pending and every process repairs it
// (RepairPending, which cmd/chat runs from start to stop, with live
// delivery or without) every pendingDrainEvery, so the event is appended exactly once,
// late rather than never. The partial state that remains visible is a
// moderation whose event is not in the channel yet, for at most as long as
// the channel's primary is unreachable; the moderation itself (what sends
// are checked against) is never half done.

const (
	// pendingDrainEvery is how often RepairPending appends the pending
	// moderation events whose own append failed.
	pendingDrainEvery = 5 * time.Second
	// pendingMarkerTTL keeps an "appended" marker (seconds): far longer
	// than any entry stays pending.
	pendingMarkerTTL = 7 * 24 * 3600
	// pendingDrainMax bounds the entries one drain handles.
	pendingDrainMax = 1000
)

// pendingEvent is one entry of the pending hash: key names it (and its
// marker), encoded is the stored value.
type pendingEvent struct {
	key     string
	encoded string

	Channel string          `json:"c"`
	Type    chat.EventType  `json:"t"` // "" when only Log is pending
	Data    json.RawMessage `json:"d"`
	// Log and LogAt are the action's moderation log entry (json, ms),
	// recorded in the channel's log with the event.
	Log   json.RawMessage `json:"l,omitempty"`
	LogAt int64           `json:"la,omitempty"`
}

// newPendingEvent is a pending entry for the event typ (data its json;
// "" and nil for none) and the moderation log entry log (nil for none).
func newPendingEvent(channel string, typ chat.EventType, data []byte, log *chat.ModEntry) (pendingEvent, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return pendingEvent{}, fmt.Errorf("pending event id: %w", err)
	}
	p := pendingEvent{key: hex.EncodeToString(b[:]), Channel: channel, Type: typ, Data: data}
	if margs, err := modArgs(log); err != nil {
		return pendingEvent{}, err
	} else if data, ok := margs[0].([]byte); ok {
		p.Log, p.LogAt = data, log.At.UnixMilli()
	}
	enc, err := json.Marshal(p)
	if err != nil {
		return pendingEvent{}, fmt.Errorf("encode pending event: %w", err)
	}
	p.encoded = string(enc)
	return p, nil
}

// applyPending appends p to its channel (unless an earlier attempt did)
// and then forgets it.
func (s *Store) applyPending(ctx context.Context, p pendingEvent) error {
	err := appendPending.Run(ctx, s.rdb,
		[]string{s.ck(p.Channel, "log"), s.ck(p.Channel, "seq"), s.ck(p.Channel, "applied:"+p.key), s.ck(p.Channel, "trim"), s.ck(p.Channel, "deleted"),
			s.modKey(p.Channel)},
		string(p.Type), []byte(p.Data), s.ck(p.Channel, "live"), pendingMarkerTTL, s.logCap(), []byte(p.Log), p.LogAt).Err()
	if err != nil {
		return fail("append moderation event", err)
	}
	if err := s.rdb.HDel(ctx, s.uk("pending"), p.key).Err(); err != nil {
		return fail("forget pending event", err)
	}
	return nil
}

// drainPending applies the pending moderation events (at most
// pendingDrainMax per call). An entry that cannot be decoded is dropped:
// no version of this engine writes one.
func (s *Store) drainPending(ctx context.Context) error {
	var cursor uint64
	done := 0
	for {
		kv, next, err := s.rdb.HScan(ctx, s.uk("pending"), cursor, "*", 100).Result()
		if err != nil {
			return fail("read pending events", err)
		}
		for i := 0; i+1 < len(kv) && done < pendingDrainMax; i += 2 {
			var p pendingEvent
			if err := json.Unmarshal([]byte(kv[i+1]), &p); err != nil || p.Channel == "" {
				_ = s.rdb.HDel(ctx, s.uk("pending"), kv[i]).Err()
				continue
			}
			p.key = kv[i]
			if err := s.applyPending(ctx, p); err != nil {
				return err
			}
			done++
		}
		cursor = next
		if cursor == 0 || done >= pendingDrainMax {
			return nil
		}
	}
}

// RepairPending appends the pending moderation events now and every
// pendingDrainEvery until ctx ends. On a Redis Cluster every process runs
// it for as long as it runs (cmd/chat starts it with the engine, apart
// from live delivery, so a replica that serves no socket repairs too);
// elsewhere nothing is ever pending and it returns at once.
func (s *Store) RepairPending(ctx context.Context) {
	if !s.cluster {
		return
	}
	t := time.NewTicker(pendingDrainEvery)
	defer t.Stop()
	for {
		dctx, cancel := context.WithTimeout(ctx, pendingDrainEvery)
		_ = s.drainPending(dctx) // unavailable: the next tick tries again
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
