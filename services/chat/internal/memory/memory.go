// Package memory is the in-process chat engine: every Store method under one
// mutex, bounded history per channel, and a broadcast so event readers block
// until something new arrives. One instance only; state dies with it.
//
// This file holds the state and the log; the methods live in one file per
// role of chat.Store (messages.go, events.go, channels.go, users.go,
// standing.go, moderation.go, held.go, modlog.go, commands.go, filters.go,
// gates.go, send.go) and feed.go.
package memory

import (
	"context"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
)

var (
	_ chat.Store      = (*Store)(nil)
	_ chat.FeedSource = (*Store)(nil)
)

type channel struct {
	settings chat.Channel
	log      []chat.Event // channel order; trimmed from the front
	lastID   int64        // last message id handed out
	lastSeq  int64        // events since the last message
	// trimmed is the place of the last entry removed from the log (a
	// message's, or an event's when events alone filled it); a
	// reader after a cursor below it has missed something.
	trimmed chat.Cursor

	// chatters have sent in the channel; raid holds the first-time
	// chatters the raid watch counted, by when, and blocked the senders
	// of the refused messages it counted, by the last one's time;
	// shieldOff is until when a moderator keeps it from tripping.
	chatters  map[string]struct{}
	raid      map[string]time.Time
	blocked   map[string]time.Time
	shieldOff time.Time
	// held is the review queue, by id.
	held    map[int64]chat.HeldMessage
	heldSeq int64
}

// Store is the memory engine.
type Store struct {
	history int
	// epoch is this store's incarnation, the epoch of every cursor it
	// hands out (chat.Cursor): a cursor from an earlier process, whose
	// log died with it, is not taken for one of this log.
	epoch uint32

	mu       sync.Mutex
	channels map[string]*channel
	claimed  map[string]struct{}  // channels counted against the channel limit
	open     map[string]time.Time // open channels (chat.OpenClaim) by last write
	users    map[string]chat.User
	names    map[string]string // lower-case name -> id
	tokens   map[string]string // token hash -> id
	// scopes holds commands and filters: "" the platform-wide ones, a
	// channel's name its own (created on first write).
	scopes map[string]*scope
	// standings holds what was given or held in a channel, by channel
	// and user id.
	standings map[string]map[string]chat.Standing
	gates     map[string]time.Time
	// sends is each user's GCRA theoretical arrival time (CountSend): once
	// it is past, the user has a full burst again.
	sends map[string]time.Time
	// once holds idempotency records by channel and key (chat.Once).
	once map[onceKey]*onceRecord
	// strikes counts strikes by channel and user (chat.Punish).
	strikes map[onceKey]strikes
	// modlogs holds each channel's moderation log (modlog.go).
	modlogs map[string]*modLog
	feeds   map[*memFeed]struct{}
}

// New returns an empty store keeping history messages per channel.
func New(history int) *Store {
	if history <= 0 {
		history = chat.DefaultHistory
	}
	return &Store{
		history:   history,
		epoch:     newEpoch(),
		channels:  map[string]*channel{},
		claimed:   map[string]struct{}{},
		open:      map[string]time.Time{},
		users:     map[string]chat.User{},
		names:     map[string]string{},
		tokens:    map[string]string{},
		scopes:    map[string]*scope{},
		standings: map[string]map[string]chat.Standing{},
		gates:     map[string]time.Time{},
		sends:     map[string]time.Time{},
		once:      map[onceKey]*onceRecord{},
		strikes:   map[onceKey]strikes{},
		feeds:     map[*memFeed]struct{}{},
	}
}

// newEpoch is a random epoch, never 0 (none).
func newEpoch() uint32 {
	for {
		if e := rand.Uint32(); e != 0 {
			return e
		}
	}
}

// cursor is the cursor of a place in this store's log.
func (s *Store) cursor(id, seq int64) chat.Cursor {
	if id == 0 && seq == 0 {
		return chat.Cursor{} // before the first entry
	}
	return chat.Cursor{ID: id, Seq: seq, Epoch: s.epoch}
}

// channel returns the channel, creating it: writers only. Readers use
// peek, so reading (an anonymous subscriber naming any channel) never makes
// the map grow.
func (s *Store) channel(name string) *channel {
	c, ok := s.channels[name]
	if !ok {
		c = &channel{settings: chat.Channel{Name: name},
			chatters: map[string]struct{}{}, raid: map[string]time.Time{}, held: map[int64]chat.HeldMessage{}}
		s.channels[name] = c
	}
	return c
}

// peek returns the channel, or an empty one that is not stored.
func (s *Store) peek(name string) *channel {
	if c, ok := s.channels[name]; ok {
		return c
	}
	return &channel{}
}

// append adds ev to c's log (caller holds mu) and tells the feeds.
func (s *Store) append(c *channel, ev chat.Event) chat.Event {
	prev := s.cursor(c.lastID, c.lastSeq)
	if ev.Type == chat.EventMessage {
		c.lastID++
		c.lastSeq = 0
		ev.Message.ID = c.lastID
	} else {
		c.lastSeq++
	}
	ev.Cursor = s.cursor(c.lastID, c.lastSeq)
	c.log = append(c.log, ev)
	// Keep the last `history` messages and the events after the oldest
	// kept one's predecessor, exactly like the Redis engine's MINID trim.
	if cut := c.lastID - int64(s.history); cut > c.trimmed.ID {
		i := sort.Search(len(c.log), func(i int) bool { return !c.log[i].Cursor.Less(chat.Cursor{ID: cut, Seq: 1}) })
		c.log = append([]chat.Event(nil), c.log[i:]...) // copy so the old array can be freed
		c.trimmed = chat.Cursor{ID: cut}
	}
	// Events alone never move the cut: past twice the history in entries
	// (a channel where moderation outpaces messages), the oldest go, as
	// the Redis engine's liveNotice does.
	if over := len(c.log) - 2*s.history; over > 0 && ev.Type != chat.EventMessage {
		c.trimmed = c.log[over-1].Cursor
		c.trimmed.Epoch = 0
		c.log = append([]chat.Event(nil), c.log[over:]...)
	}
	for f := range s.feeds {
		if f.watched[ev.Channel] > 0 {
			e := ev
			f.fn(chat.Notice{Channel: ev.Channel, Prev: prev, Event: &e})
		}
	}
	return ev
}

// Ping implements chat.Store.
func (s *Store) Ping(context.Context) error { return nil }

// Close implements chat.Store.
func (s *Store) Close() error { return nil }
