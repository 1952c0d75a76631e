package memory

import (
	"context"
	"sort"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// ReadEvents implements chat.EventLog.
func (s *Store) ReadEvents(_ context.Context, name string, after chat.Cursor, limit int) ([]chat.Event, error) {
	if limit <= 0 {
		limit = 100
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.peek(name)
	if !s.recoverable(c, after) {
		return nil, chat.ErrHistoryGone
	}
	i := sort.Search(len(c.log), func(i int) bool { return after.Less(c.log[i].Cursor) })
	if i == len(c.log) {
		return nil, nil
	}
	n := min(limit, len(c.log)-i)
	out := make([]chat.Event, n)
	copy(out, c.log[i:i+n])
	return out, nil
}

// recoverable reports whether a reader after `after` missed nothing: no
// event after it was trimmed, it lies within the log, and its epoch, if
// any, is this store's.
func (s *Store) recoverable(c *channel, after chat.Cursor) bool {
	if after.Less(c.trimmed) || after.ID > c.lastID {
		return false
	}
	if after.Epoch != 0 && after.Epoch != s.epoch {
		return false
	}
	return !(after.ID == c.lastID && after.Seq > c.lastSeq)
}

// Recoverable implements chat.EventLog.
func (s *Store) Recoverable(_ context.Context, name string, after chat.Cursor) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.peek(name)
	return s.recoverable(c, after), nil
}

// Head implements chat.EventLog.
func (s *Store) Head(_ context.Context, name string) (chat.Cursor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.peek(name)
	return s.cursor(c.lastID, c.lastSeq), nil
}
