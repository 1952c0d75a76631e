package memory

import (
	"context"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// modLog is a channel's moderation log, oldest first.
type modLog struct {
	entries []chat.ModEntry
	ids     []chat.ModID
}

// recordMod records e in its channel's moderation log, as the Redis
// engine's modLogAppend does: the next id at or after e.At, then the
// entries older than chat.ModLogWindow before e.At and those past
// chat.MaxModLogPerChannel go. The caller holds mu.
func (s *Store) recordMod(e chat.ModEntry) {
	if e.Action == "" {
		return // none (a zero chat.Raid.Log or ShieldSwitch.Log)
	}
	if s.modlogs == nil {
		s.modlogs = map[string]*modLog{}
	}
	l := s.modlogs[e.Channel]
	if l == nil {
		l = &modLog{}
		s.modlogs[e.Channel] = l
	}
	id := chat.ModID{MS: e.At.UnixMilli()}
	if n := len(l.ids); n > 0 && !l.ids[n-1].Less(id) {
		id = chat.ModID{MS: l.ids[n-1].MS, N: l.ids[n-1].N + 1}
	}
	e.ID = id.String()
	l.entries = append(l.entries, e)
	l.ids = append(l.ids, id)
	cut := e.At.Add(-chat.ModLogWindow).UnixMilli()
	drop := max(0, len(l.ids)-chat.MaxModLogPerChannel)
	for drop < len(l.ids) && l.ids[drop].MS < cut {
		drop++
	}
	// Reslicing from the front: append copies the live entries into a new
	// array when the old one is full, so a channel at its bound costs
	// amortised O(1) per entry, not a copy of the whole log.
	l.entries, l.ids = l.entries[drop:], l.ids[drop:]
}

// recordModp records e when it is not nil.
func (s *Store) recordModp(e *chat.ModEntry) {
	if e != nil {
		s.recordMod(*e)
	}
}

// AppendModLog implements chat.Store.
func (s *Store) AppendModLog(_ context.Context, e chat.ModEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recordMod(e)
	return nil
}

// ModLog implements chat.Store.
func (s *Store) ModLog(_ context.Context, channel string, before *chat.ModID, limit int, now time.Time) ([]chat.ModEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []chat.ModEntry{}
	l := s.modlogs[channel]
	if l == nil {
		return out, nil
	}
	cut := now.Add(-chat.ModLogWindow).UnixMilli()
	for i := len(l.ids) - 1; i >= 0 && len(out) < limit; i-- {
		id := l.ids[i]
		if before != nil && !id.Less(*before) {
			continue
		}
		if id.MS < cut {
			break
		}
		out = append(out, l.entries[i])
	}
	return out, nil
}
