// Package memory is the in-process chat engine: every Store method under one
// mutex, bounded history per channel, and a broadcast so event readers block
// until something new arrives. One instance only; state dies with it.
package memory

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
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

// ClaimChannel implements chat.Store.
func (s *Store) ClaimChannel(_ context.Context, name string, max int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.claimed[name]; ok {
		return nil
	}
	if max > 0 && len(s.claimed) >= max {
		return chat.LimitReached(chat.QuotaChannels, max)
	}
	s.claimed[name] = struct{}{}
	delete(s.open, name)
	return nil
}

// ClaimOpenChannel implements chat.Store.
func (s *Store) ClaimOpenChannel(_ context.Context, name string, c chat.OpenClaim) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.claimed[name]; ok {
		return nil
	}
	if _, ok := s.open[name]; ok {
		s.open[name] = c.Now
		return nil
	}
	if !c.Create {
		return chat.NotFound("channel " + name)
	}
	if c.Max > 0 && len(s.open) >= c.Max {
		for n, at := range s.open {
			if c.Now.Sub(at) > c.Idle {
				delete(s.open, n)
			}
		}
		if len(s.open) >= c.Max {
			return chat.LimitReached(chat.QuotaOpenChannels, c.Max)
		}
	}
	s.open[name] = c.Now
	return nil
}

// Channel implements chat.Store.
func (s *Store) Channel(_ context.Context, name string) (chat.Channel, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.channels[name]; ok {
		return c.settings, nil
	}
	return chat.Channel{Name: name}, nil
}

// SaveChannel implements chat.Store.
func (s *Store) SaveChannel(_ context.Context, c chat.Channel) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.channel(c.Name)
	c.Shield, c.ShieldUntil = ch.settings.Shield, ch.settings.ShieldUntil
	ch.settings = c
	return nil
}

// CreateUser implements chat.Store.
func (s *Store) CreateUser(_ context.Context, u chat.User) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tokens[u.TokenHash]; ok {
		return &chat.Error{Kind: chat.KindConflict, Message: "token already in use", Reason: "token"}
	}
	if _, ok := s.names[strings.ToLower(u.Name)]; ok {
		return &chat.Error{Kind: chat.KindConflict, Message: "user name " + u.Name + " is taken", Reason: "name"}
	}
	if _, ok := s.users[u.ID]; ok {
		return &chat.Error{Kind: chat.KindConflict, Message: "user id is taken", Reason: "id"}
	}
	s.users[u.ID] = u
	s.names[strings.ToLower(u.Name)] = u.ID
	s.tokens[u.TokenHash] = u.ID
	return nil
}

// User implements chat.Store.
func (s *Store) User(_ context.Context, id string) (chat.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[id]
	if !ok {
		return chat.User{}, chat.NotFound("user")
	}
	return u, nil
}

// UserByTokenHash implements chat.Store.
func (s *Store) UserByTokenHash(_ context.Context, hash string) (chat.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.tokens[hash]
	if !ok {
		return chat.User{}, chat.NotFound("user")
	}
	u := s.users[id]
	// The map lookup already matched; compare once more in constant time
	// so this path never leaks timing about a stored hash.
	if subtle.ConstantTimeCompare([]byte(u.TokenHash), []byte(hash)) != 1 {
		return chat.User{}, chat.NotFound("user")
	}
	return u, nil
}

// ProvisionUser implements chat.Store.
func (s *Store) ProvisionUser(_ context.Context, u chat.User, names []string) (chat.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, exists := s.users[u.ID]
	for _, name := range names {
		lname := strings.ToLower(name)
		if owner, ok := s.names[lname]; ok && owner != u.ID {
			continue
		}
		if !exists {
			u.Name = name
			u.TokenHash = ""
			s.users[u.ID] = u
			s.names[lname] = u.ID
			return u, nil
		}
		if cur.Name != name {
			delete(s.names, strings.ToLower(cur.Name))
			s.names[lname] = u.ID
			cur.Name = name
			s.users[u.ID] = cur
		}
		return cur, nil
	}
	if exists {
		return cur, nil
	}
	return chat.User{}, &chat.Error{Kind: chat.KindConflict, Message: "every name this user may take is taken", Reason: "name"}
}

// UsersByID returns the users among ids that exist (live delivery's
// recheck of its sockets' users; the Redis engine has the same method).
func (s *Store) UsersByID(_ context.Context, ids []string) (map[string]chat.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]chat.User, len(ids))
	for _, id := range ids {
		if u, ok := s.users[id]; ok {
			out[id] = u
		}
	}
	return out, nil
}

// Users implements chat.Store.
func (s *Store) Users(_ context.Context) ([]chat.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]chat.User, 0, len(s.users))
	for _, u := range s.users {
		out = append(out, u)
	}
	return out, nil
}

// UpdateUser implements chat.Store.
func (s *Store) UpdateUser(_ context.Context, id string, ifRole chat.Role, p chat.UserPatch, ev *chat.Event, log *chat.ModEntry) (chat.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[id]
	if !ok {
		return chat.User{}, chat.NotFound("user")
	}
	if u.Role != ifRole {
		return chat.User{}, chat.Conflict("the user's role changed meanwhile; try again")
	}
	if p.Role != nil {
		u.Role = *p.Role
	}
	if p.TimedOutUntil != nil {
		u.TimedOutUntil = *p.TimedOutUntil
	}
	if p.Banned != nil {
		u.Banned = *p.Banned
	}
	if p.ModReason != nil {
		u.ModReason = *p.ModReason
	}
	s.users[id] = u
	if ev != nil {
		s.append(s.channel(ev.Channel), *ev)
	}
	s.recordModp(log)
	if p.Banned != nil && *p.Banned {
		s.revoke(chat.Notice{Revoke: chat.RevokeBanned, User: id})
	}
	return u, nil
}

// DeleteUser implements chat.Store.
func (s *Store) DeleteUser(_ context.Context, id string, ifRole chat.Role) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[id]
	if !ok {
		return chat.NotFound("user")
	}
	if u.Role != ifRole {
		return chat.Conflict("the user's role changed meanwhile; try again")
	}
	delete(s.users, id)
	delete(s.names, strings.ToLower(u.Name))
	delete(s.tokens, u.TokenHash)
	delete(s.sends, id)
	s.revoke(chat.Notice{Revoke: chat.RevokeDeleted, User: id})
	return nil
}

// scope is the commands and filters of the platform or of one channel.
type scope struct {
	commands map[string]chat.Command
	triggers map[string]string // name or alias -> name
	filters  map[string]chat.Filter
	filterN  int64
}

// scope returns the scope named name, created when create is set; nil
// when it does not exist (reads never make the map grow). The caller
// holds s.mu.
func (s *Store) scope(name string, create bool) *scope {
	sc, ok := s.scopes[name]
	if !ok && create {
		sc = &scope{commands: map[string]chat.Command{}, triggers: map[string]string{}, filters: map[string]chat.Filter{}}
		s.scopes[name] = sc
	}
	return sc
}

func (sc *scope) triggersFree(c chat.Command) error {
	for _, t := range c.Triggers() {
		if owner, ok := sc.triggers[t]; ok && owner != c.Name {
			return &chat.Error{Kind: chat.KindConflict, Message: "trigger " + t + " is taken by " + owner, Reason: "command"}
		}
	}
	return nil
}

// CreateCommand implements chat.Store.
func (s *Store) CreateCommand(_ context.Context, c chat.Command, max int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := s.scope(c.Channel, true)
	if _, ok := sc.triggers[c.Name]; ok {
		return &chat.Error{Kind: chat.KindConflict, Message: "command " + c.Name + " already exists", Reason: "command"}
	}
	if max > 0 && len(sc.commands) >= max {
		return chat.LimitReached(chat.QuotaCommands, max)
	}
	if err := sc.triggersFree(c); err != nil {
		return err
	}
	c.Aliases = append([]string(nil), c.Aliases...)
	sc.commands[c.Name] = c
	for _, t := range c.Triggers() {
		sc.triggers[t] = c.Name
	}
	return nil
}

// Command implements chat.Store.
func (s *Store) Command(_ context.Context, scope, trigger string) (chat.Command, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.command(scope, trigger)
}

// command finds a command by trigger; the caller holds s.mu.
func (s *Store) command(scope, trigger string) (chat.Command, error) {
	sc := s.scope(scope, false)
	if sc == nil {
		return chat.Command{}, chat.NotFound("command")
	}
	name, ok := sc.triggers[trigger]
	if !ok {
		return chat.Command{}, chat.NotFound("command")
	}
	c := sc.commands[name]
	c.Aliases = append([]string{}, c.Aliases...)
	return c, nil
}

// Commands implements chat.Store.
func (s *Store) Commands(_ context.Context, scope string) ([]chat.Command, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := s.scope(scope, false)
	if sc == nil {
		return []chat.Command{}, nil
	}
	out := make([]chat.Command, 0, len(sc.commands))
	for _, c := range sc.commands {
		c.Aliases = append([]string{}, c.Aliases...)
		out = append(out, c)
	}
	return out, nil
}

// UpdateCommand implements chat.Store.
func (s *Store) UpdateCommand(_ context.Context, name string, c chat.Command) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := s.scope(c.Channel, false)
	if sc == nil {
		return chat.NotFound("command")
	}
	old, ok := sc.commands[name]
	if !ok {
		return chat.NotFound("command")
	}
	if err := sc.triggersFree(c); err != nil {
		return err
	}
	for _, t := range old.Triggers() {
		delete(sc.triggers, t)
	}
	c.Count = old.Count // the counter is owned by CountCommand
	c.Aliases = append([]string(nil), c.Aliases...)
	sc.commands[name] = c
	for _, t := range c.Triggers() {
		sc.triggers[t] = name
	}
	return nil
}

// DeleteCommand implements chat.Store.
func (s *Store) DeleteCommand(_ context.Context, scope, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := s.scope(scope, false)
	if sc == nil {
		return chat.NotFound("command")
	}
	c, ok := sc.commands[name]
	if !ok {
		return chat.NotFound("command")
	}
	for _, t := range c.Triggers() {
		delete(sc.triggers, t)
	}
	delete(sc.commands, name)
	return nil
}

// CountCommand implements chat.Store.
func (s *Store) CountCommand(_ context.Context, scope, name string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := s.scope(scope, false)
	if sc == nil {
		return 0, chat.NotFound("command")
	}
	c, ok := sc.commands[name]
	if !ok {
		return 0, chat.NotFound("command")
	}
	c.Count++
	sc.commands[name] = c
	return c.Count, nil
}

// CreateFilter implements chat.Store.
func (s *Store) CreateFilter(_ context.Context, f chat.Filter, lim chat.Limits) (chat.Filter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := s.scope(f.Channel, true)
	if lim.Filters > 0 && len(sc.filters) >= lim.Filters {
		return chat.Filter{}, chat.LimitReached(chat.QuotaFilters, lim.Filters)
	}
	if f.Kind == chat.FilterRegex && lim.RegexFilters > 0 {
		n := 0
		for _, g := range sc.filters {
			if g.Kind == chat.FilterRegex {
				n++
			}
		}
		if n >= lim.RegexFilters {
			return chat.Filter{}, chat.LimitReached(chat.QuotaRegexFilters, lim.RegexFilters)
		}
	}
	sc.filterN++
	f.ID = "f" + strconv.FormatInt(sc.filterN, 10)
	sc.filters[f.ID] = f
	return f, nil
}

// Filters implements chat.Store.
func (s *Store) Filters(_ context.Context, scope string) ([]chat.Filter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.filterList(scope), nil
}

// filterList copies the filters of a scope; the caller holds s.mu.
func (s *Store) filterList(scope string) []chat.Filter {
	sc := s.scope(scope, false)
	if sc == nil {
		return []chat.Filter{}
	}
	out := make([]chat.Filter, 0, len(sc.filters))
	for _, f := range sc.filters {
		out = append(out, f)
	}
	return out
}

// DeleteFilter implements chat.Store.
func (s *Store) DeleteFilter(_ context.Context, scope, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := s.scope(scope, false)
	if sc == nil {
		return chat.NotFound("filter")
	}
	if _, ok := sc.filters[id]; !ok {
		return chat.NotFound("filter")
	}
	delete(sc.filters, id)
	return nil
}

// Standing implements chat.Store.
func (s *Store) Standing(_ context.Context, channel, id string) (chat.Standing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.standings[channel][id], nil
}

// ChannelRoles implements chat.Store.
func (s *Store) ChannelRoles(_ context.Context, channel string) (map[string]chat.Role, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]chat.Role{}
	for id, st := range s.standings[channel] {
		if st.Role != "" {
			out[id] = st.Role
		}
	}
	return out, nil
}

// SetChannelRole implements chat.Store.
func (s *Store) SetChannelRole(_ context.Context, channel, id string, ifRole, role chat.Role, max int, log *chat.ModEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sts := s.standings[channel]
	st := sts[id]
	if st.Role != ifRole {
		return chat.Conflict("the user's role in the channel changed meanwhile; try again")
	}
	if role != "" && st.Role == "" && max > 0 {
		n := 0
		for _, o := range sts {
			if o.Role != "" {
				n++
			}
		}
		if n >= max {
			return chat.LimitReached(chat.QuotaChannelRoles, max)
		}
	}
	st.Role = role
	s.putStanding(channel, id, st)
	s.recordModp(log)
	return nil
}

// SetModeration implements chat.Store.
func (s *Store) SetModeration(_ context.Context, channel, id string, m chat.Standing, ev *chat.Event, log *chat.ModEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.standings[channel][id]
	st.Banned, st.TimedOutUntil, st.ModReason = m.Banned, m.TimedOutUntil, m.ModReason
	s.putStanding(channel, id, st)
	if ev != nil {
		s.append(s.channel(ev.Channel), *ev)
	}
	s.recordModp(log)
	return nil
}

// putStanding stores st, or forgets it when it is none; the caller holds
// s.mu.
func (s *Store) putStanding(channel, id string, st chat.Standing) {
	sts := s.standings[channel]
	if st == (chat.Standing{}) {
		delete(sts, id)
		return
	}
	if sts == nil {
		sts = map[string]chat.Standing{}
		s.standings[channel] = sts
	}
	sts[id] = st
}

// ReadForSend implements chat.Store: what a send reads, under one lock.
func (s *Store) ReadForSend(_ context.Context, r chat.SendReads) chat.SendState {
	s.mu.Lock()
	defer s.mu.Unlock()
	var st chat.SendState
	if r.User != "" {
		u, ok := s.users[r.User]
		if ok {
			st.User = u
		} else {
			st.UserErr = chat.NotFound("user")
		}
	}
	st.Filters = s.filterList("")
	st.ChannelFilters = []chat.Filter{}
	if r.In != "" {
		st.ChannelFilters = s.filterList(r.In)
	}
	if r.Member != "" {
		st.Standing = s.standings[r.In][r.Member]
	}
	if r.Channel != "" {
		st.Channel = chat.Channel{Name: r.Channel}
		if c, ok := s.channels[r.Channel]; ok {
			st.Channel = c.settings
			_, st.Chatter = c.chatters[r.Chatter]
		}
	}
	if r.Unique.Key != "" {
		if until, ok := s.gates[r.Unique.Channel+"\x00"+r.Unique.Key]; ok && until.After(r.Now) {
			st.UniqueWait = until.Sub(r.Now)
		}
	}
	if r.CountUser != "" {
		st.SendWait, st.CountErr = s.countSend(r.CountUser, r.Limit, r.Now)
	}
	if r.Trigger != "" {
		st.Command, st.CommandErr = s.command(r.In, r.Trigger)
		if errors.Is(st.CommandErr, chat.ErrNotFound) && r.In != "" {
			st.Command, st.CommandErr = s.command("", r.Trigger)
		}
	}
	if r.Once.Key != "" {
		if rec := s.onceFor(onceKey{r.Once.Channel, r.Once.Key}); rec != nil {
			st.Once = rec.rec
		}
	}
	return st
}

// countSend counts with GCRA, as redis_rate computes it in Redis: each
// message moves the user's arrival time on by Window/Max; a message may go
// while that time is at most Window ahead. The caller holds s.mu.
func (s *Store) countSend(user string, l chat.SendLimit, now time.Time) (time.Duration, error) {
	if err := l.Validate(); err != nil || l.Off() {
		return 0, err
	}
	tat := s.sends[user]
	if tat.Before(now) {
		tat = now
	}
	emission := l.Window / time.Duration(l.Max)
	next := tat.Add(emission)
	if wait := next.Sub(now) - emission*time.Duration(l.Max); wait > 0 {
		return wait, nil
	}
	s.sends[user] = next
	// Forget users with a full burst now and then; the map holds at most
	// one entry per user anyway.
	if len(s.sends) > 10000 {
		for k, t := range s.sends {
			if !t.After(now) {
				delete(s.sends, k)
			}
		}
	}
	return 0, nil
}

// Acquire implements chat.Store.
func (s *Store) Acquire(_ context.Context, now time.Time, gates ...chat.Gate) (time.Duration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.passGates(now, gates), nil
}

// passGates passes every gate or none (Acquire); the caller holds s.mu.
func (s *Store) passGates(now time.Time, gates []chat.Gate) time.Duration {
	var wait time.Duration
	for _, g := range gates {
		if until, ok := s.gates[g.Channel+"\x00"+g.Key]; ok {
			wait = max(wait, until.Sub(now))
		}
	}
	if wait > 0 {
		return wait
	}
	for _, g := range gates {
		s.gates[g.Channel+"\x00"+g.Key] = now.Add(g.For)
	}
	// Forget expired gates now and then so the map does not grow forever.
	if len(s.gates) > 10000 {
		for k, until := range s.gates {
			if !until.After(now) {
				delete(s.gates, k)
			}
		}
	}
	return 0
}

// Ping implements chat.Store.
func (s *Store) Ping(context.Context) error { return nil }

// Close implements chat.Store.
func (s *Store) Close() error { return nil }

// strikes is a user's strike count in a channel and when the last came.
type strikes struct {
	n    int
	last time.Time
}

// Punish implements chat.Store.
func (s *Store) Punish(_ context.Context, p chat.Punish) (chat.Punishment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[p.User]
	if !ok {
		return chat.Punishment{}, chat.NotFound("user")
	}
	role := u.Role
	if p.InChannel {
		role = s.standings[p.Channel][p.User].Role
	}
	if role != p.IfRole {
		return chat.Punishment{}, chat.Conflict("the user's role changed meanwhile; try again")
	}
	var out chat.Punishment
	if p.Strike {
		k := onceKey{p.Channel, p.User}
		if p.InChannel {
			// A channel's own filters count strikes apart from the
			// platform-wide ones, as the Redis engine does.
			k.channel = "own:" + p.Channel
		}
		st := s.strikes[k]
		if p.Now.Sub(st.last) > chat.StrikeExpiry {
			st.n = 0
		}
		st.n++
		st.last = p.Now
		s.strikes[k] = st
		out.Strike = st.n
		out.Step = min(st.n, len(p.Ladder)) - 1
	}
	step := p.Ladder[out.Step]
	if p.InChannel {
		st := s.standings[p.Channel][p.User]
		switch step.Penalty.Kind {
		case chat.PenaltyTimeout:
			st.TimedOutUntil, st.ModReason = step.Until, step.Reason
		case chat.PenaltyBan:
			st.Banned, st.TimedOutUntil, st.ModReason = true, nil, step.Reason
		}
		s.putStanding(p.Channel, p.User, st)
	} else {
		switch step.Penalty.Kind {
		case chat.PenaltyTimeout:
			u.TimedOutUntil, u.ModReason = step.Until, step.Reason
		case chat.PenaltyBan:
			u.Banned, u.TimedOutUntil, u.ModReason = true, nil, step.Reason
		}
		s.users[u.ID] = u
	}
	if step.Event != nil {
		s.append(s.channel(step.Event.Channel), *step.Event)
	}
	s.recordModp(step.Log)
	if step.Penalty.Kind == chat.PenaltyBan && !p.InChannel {
		s.revoke(chat.Notice{Revoke: chat.RevokeBanned, User: u.ID})
	}
	out.User = u
	return out, nil
}

// watchRaid counts w's first-time chatter and turns shield mode on when
// the count reaches the threshold (chat.Raid); the caller holds mu.
func (s *Store) watchRaid(c *channel, w chat.Watch) {
	r := w.Raid
	if r == nil || w.Chatter == "" {
		return
	}
	since := r.Now.Add(-chat.AutoShieldWindow)
	for u, at := range c.raid {
		if !at.After(since) {
			delete(c.raid, u)
		}
	}
	c.raid[w.Chatter] = r.Now
	if len(c.raid) >= r.Threshold {
		s.tripShield(c, *r)
	}
}

// tripShield turns the automatic shield on (or keeps it on) until
// r.Now+r.Quiet unless a moderator holds the watch off, announcing it
// when it was not on already; the caller holds mu.
func (s *Store) tripShield(c *channel, r chat.Raid) {
	if c.shieldOff.After(r.Now) {
		return
	}
	was := c.settings.ShieldUntil
	until := r.Now.Add(r.Quiet)
	c.settings.ShieldUntil = &until
	if was == nil || !was.After(r.Now) {
		s.append(c, r.Event)
		s.recordMod(r.Log)
	}
}

// CountBlocked implements chat.Store: the times of the refused messages
// of the last window, at most the threshold's newest.
func (s *Store) CountBlocked(_ context.Context, name string, r chat.Raid) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.channel(name)
	since := r.Now.Add(-chat.AutoShieldWindow)
	if c.blocked == nil {
		c.blocked = map[string]time.Time{}
	}
	for u, at := range c.blocked {
		if !at.After(since) {
			delete(c.blocked, u)
		}
	}
	c.blocked[r.Sender] = r.Now
	if len(c.blocked) >= r.Threshold {
		s.tripShield(c, r)
	}
	return nil
}

// EndShield implements chat.Store.
func (s *Store) EndShield(_ context.Context, name string, e chat.ShieldEnd) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.channels[name]
	if !ok || c.settings.ShieldUntil == nil {
		return time.Time{}, nil
	}
	if until := *c.settings.ShieldUntil; until.After(e.Now) {
		return until, nil
	}
	c.settings.ShieldUntil = nil
	if !c.settings.Shield {
		s.append(c, e.Event)
		s.recordMod(e.Log)
	}
	return time.Time{}, nil
}

// HoldMessage implements chat.Store.
func (s *Store) HoldMessage(_ context.Context, h chat.HeldMessage, max int, w chat.Watch, log *chat.ModEntry) (chat.HeldMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.channel(h.Channel)
	s.expireHeld(c, h.CreatedAt)
	if len(c.held) >= max {
		return chat.HeldMessage{}, chat.LimitReached(chat.QuotaHeld, max)
	}
	c.heldSeq++
	h.ID = c.heldSeq
	c.held[h.ID] = h
	s.watchRaid(c, w)
	if log != nil {
		e := *log
		e.HeldID = h.ID
		s.recordMod(e)
	}
	return h, nil
}

// expireHeld drops the held messages expired at now; the caller holds mu.
func (s *Store) expireHeld(c *channel, now time.Time) {
	for id, h := range c.held {
		if !h.ExpiresAt.After(now) {
			delete(c.held, id)
		}
	}
}

// HeldMessages implements chat.Store.
func (s *Store) HeldMessages(_ context.Context, name string, now time.Time) ([]chat.HeldMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []chat.HeldMessage{}
	c, ok := s.channels[name]
	if !ok {
		return out, nil
	}
	s.expireHeld(c, now)
	for _, h := range c.held {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// HeldMessage implements chat.Store.
func (s *Store) HeldMessage(_ context.Context, name string, id int64, now time.Time) (chat.HeldMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.channels[name]; ok {
		if h, ok := c.held[id]; ok && h.ExpiresAt.After(now) {
			return h, nil
		}
	}
	return chat.HeldMessage{}, chat.NotFound("held message")
}

// DropHeld implements chat.Store.
func (s *Store) DropHeld(_ context.Context, name string, id int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.channels[name]; ok {
		if _, ok := c.held[id]; ok {
			delete(c.held, id)
			return nil
		}
	}
	return chat.NotFound("held message")
}

// SwitchShield implements chat.Store.
func (s *Store) SwitchShield(_ context.Context, name string, sw chat.ShieldSwitch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.channel(name)
	c.settings.Shield = sw.On
	if !sw.On {
		c.settings.ShieldUntil = nil
		c.shieldOff = sw.HoldOff
		clear(c.raid)
		clear(c.blocked)
	}
	s.append(c, sw.Event)
	s.recordMod(sw.Log)
	return nil
}
