package memory

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
)

type onceKey struct{ channel, key string }

// onceRecord is a chat.OnceRecord with its expiry.
type onceRecord struct {
	rec     chat.OnceRecord
	expires time.Time
}

// onceFor returns the live record of k (nil if none); the caller holds mu.
// Records are swept as they are met and, past a size, all expired ones at
// once, so the map holds about one window's keys.
func (s *Store) onceFor(k onceKey) *onceRecord {
	r := s.once[k]
	if r != nil && time.Now().After(r.expires) {
		delete(s.once, k)
		return nil
	}
	return r
}

// AppendMessage implements chat.Store.
func (s *Store) AppendMessage(ctx context.Context, m chat.Message, once chat.Once, gates ...chat.Gate) (chat.Message, error) {
	return s.AppendSent(ctx, m, once, chat.Watch{}, gates...)
}

// AppendSent implements chat.Store.
func (s *Store) AppendSent(_ context.Context, m chat.Message, once chat.Once, w chat.Watch, gates ...chat.Gate) (chat.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range gates {
		if g.Channel != m.Channel {
			return chat.Message{}, fmt.Errorf("append message: gates must be in the message's channel (%s, not %s)", m.Channel, g.Channel)
		}
	}
	k := onceKey{m.Channel, once.Key}
	rec := s.onceFor(k)
	if once.Set() && rec != nil && (once.Part == chat.OnceMessage && rec.rec.Message != nil || once.Part == chat.OnceReply && rec.rec.Reply != nil) {
		return chat.Message{}, &chat.Error{Kind: chat.KindConflict, Reason: chat.ReasonKeyInUse,
			Message: "a send with this Idempotency-Key was stored meanwhile; send it again to get its result"}
	}
	if wait := s.passGates(m.CreatedAt, gates); wait > 0 {
		return chat.Message{}, &chat.Error{Kind: chat.KindSlowMode, RetryAfter: wait, Message: "a gate is closed"}
	}
	c := s.channel(m.Channel)
	ev := s.append(c, chat.Event{Type: chat.EventMessage, Channel: m.Channel, Message: &m})
	if w.Chatter != "" {
		c.chatters[w.Chatter] = struct{}{}
	}
	s.watchRaid(c, w)
	if once.Set() {
		if rec == nil {
			if len(s.once) >= 10000 {
				now := time.Now()
				for k, r := range s.once {
					if now.After(r.expires) {
						delete(s.once, k)
					}
				}
			}
			rec = &onceRecord{}
			s.once[k] = rec
		}
		stored := *ev.Message
		switch once.Part {
		case chat.OnceMessage:
			rec.rec.Message, rec.rec.Fingerprint = &stored, once.Fingerprint
		case chat.OnceReply:
			rec.rec.Reply = &stored
		}
		rec.expires = time.Now().Add(once.For)
	}
	return *ev.Message, nil
}

// find returns the index of the log entry at cursor, or -1.
func (c *channel) find(cur chat.Cursor) int {
	i := sort.Search(len(c.log), func(i int) bool { return !c.log[i].Cursor.Less(cur) })
	if i < len(c.log) && c.log[i].Cursor.At(cur) {
		return i
	}
	return -1
}

// Messages implements chat.Store.
func (s *Store) Messages(_ context.Context, name string, p chat.Page) ([]chat.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.channels[name]
	if !ok {
		return []chat.Message{}, nil
	}
	lo, hi := chat.PageRange(p, c.lastID, c.trimmed.ID)
	out := []chat.Message{}
	if lo > hi {
		return out, nil
	}
	i := sort.Search(len(c.log), func(i int) bool { return !c.log[i].Cursor.Less(chat.Cursor{ID: lo}) })
	for ; i < len(c.log) && c.log[i].Cursor.ID <= hi; i++ {
		if c.log[i].Type == chat.EventMessage {
			out = append(out, *c.log[i].Message)
		}
	}
	return out, nil
}

// Message implements chat.Store.
func (s *Store) Message(_ context.Context, name string, id int64) (chat.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.channels[name]
	if !ok {
		return chat.Message{}, chat.NotFound("message")
	}
	i := c.find(chat.Cursor{ID: id})
	if i < 0 {
		return chat.Message{}, chat.NotFound("message")
	}
	return *c.log[i].Message, nil
}

// DeleteMessage implements chat.Store.
func (s *Store) DeleteMessage(_ context.Context, name string, id int64, at time.Time, log *chat.ModEntry) (chat.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.channels[name]
	if !ok {
		return chat.Message{}, chat.NotFound("message")
	}
	i := c.find(chat.Cursor{ID: id})
	if i < 0 {
		return chat.Message{}, chat.NotFound("message")
	}
	m := *c.log[i].Message
	if m.Deleted {
		return m, nil
	}
	t := m.Tombstone(at)
	// Events hold their own copy so a reader that got the message event
	// earlier never sees it change under it.
	c.log[i].Message = &t
	t2 := t
	s.append(c, chat.Event{Type: chat.EventMessageDeleted, Channel: name, Message: &t2})
	s.recordModp(log)
	return t, nil
}
