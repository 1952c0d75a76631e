package chat

import (
	"context"
	"time"
)

// Store is what an engine provides: the role interfaces below, one per
// kind of state, so a caller can name the part it uses (and an engine's
// files follow the same cut). Every method that changes more than one
// thing does so atomically (one lock in memory, one Lua script in Redis), so
// several Service instances on one Redis never double-create or lose an
// update. Engines report any backend failure as KindUnavailable and use
// KindNotFound / KindConflict for the outcomes listed below.
type Store interface {
	EventLog
	MessageStore
	ModLogStore
	ModerationStore
	HeldStore
	ChannelStore
	UserStore
	StandingStore
	CommandStore
	FilterStore
	SendReader
	Backend
}

// MessageStore keeps the channels' messages; the event log of each
// channel is EventLog.
type MessageStore interface {
	// AppendMessage assigns the next id of m.Channel, stores m, appends a
	// message event and trims the channel to its history window, at once.
	// With gates (all in m.Channel; slow mode), it is Acquire at
	// m.CreatedAt and the append in one step: if any gate is closed it
	// stores nothing and returns a KindSlowMode *Error whose RetryAfter is
	// the longest wait; otherwise it closes every gate and stores m.
	// With once set, the record once.Key of m.Channel is checked first: if
	// it holds once.Part already, nothing is stored and the error is
	// KindConflict with Reason ReasonKeyInUse; otherwise the stored
	// message (and once.Fingerprint) is recorded there in the same step,
	// kept for once.For.
	AppendMessage(ctx context.Context, m Message, once Once, gates ...Gate) (Message, error)
	// AppendSent is AppendMessage for a user's message, which also tells
	// the channel what w says (Watch: the sender becomes a chatter of the
	// channel; the raid watch counts a first-time chatter and may turn
	// shield mode on), in the same step.
	AppendSent(ctx context.Context, m Message, once Once, w Watch, gates ...Gate) (Message, error)
	// Messages returns one page of a channel, oldest first, tombstones included.
	Messages(ctx context.Context, channel string, p Page) ([]Message, error)
	// Message returns one message (NotFound if unknown or trimmed).
	Message(ctx context.Context, channel string, id int64) (Message, error)
	// DeleteMessage replaces a message by its tombstone and appends a
	// message_deleted event and, when log is not nil, records log in the
	// channel's moderation log, at once. Deleting a tombstone again
	// changes nothing, appends and records nothing.
	DeleteMessage(ctx context.Context, channel string, id int64, at time.Time, log *ModEntry) (Message, error)
}

// ModLogStore keeps each channel's moderation log.
type ModLogStore interface {
	// AppendModLog records e in e.Channel's moderation log, giving it the
	// next id at or after e.At, and forgets the channel's entries older
	// than ModLogWindow before e.At or past MaxModLogPerChannel, at once.
	// The writes that carry a *ModEntry (DeleteMessage, SetModeration,
	// SetChannelRole, Punish's steps, the raid watch, SwitchShield) record
	// it the same way in their own step.
	AppendModLog(ctx context.Context, e ModEntry) error
	// ModLog returns up to limit entries of channel's moderation log,
	// newest first, strictly older than before (nil: from the newest),
	// none older than ModLogWindow before now.
	ModLog(ctx context.Context, channel string, before *ModID, limit int, now time.Time) ([]ModEntry, error)
}

// ModerationStore applies what moderation decides: a filter hit's
// punishment and shield mode (the raid watch).
type ModerationStore interface {
	// Punish applies a filter hit's consequence (see Punish) in one step:
	// with p.Strike it counts a strike of p.User in p.Channel, forgetting
	// strikes older than StrikeExpiry, and applies the ladder's step for
	// the count; it changes the user (a timeout, a ban, the reason) if it
	// still holds p.IfRole (Conflict otherwise, NotFound when gone) and
	// appends the step's event, as UpdateUser does.
	Punish(ctx context.Context, p Punish) (Punishment, error)
	// SwitchShield sets the channel's Shield to sw.On, and switching off
	// ends an automatic shield, forgets the raid watch's counts and keeps
	// it from tripping until sw.HoldOff; sw.Event is appended in the same
	// step.
	SwitchShield(ctx context.Context, channel string, sw ShieldSwitch) error
	// CountBlocked counts a message a filter refused in channel for the
	// raid watch (see Raid), which may turn shield mode on, at once.
	CountBlocked(ctx context.Context, channel string, r Raid) error
	// EndShield ends the channel's automatic shield if its end is at or
	// before e.Now (see ShieldEnd) and returns the end of one still on
	// (zero when none is).
	EndShield(ctx context.Context, channel string, e ShieldEnd) (time.Time, error)
}

// HeldStore keeps the messages held for review.
type HeldStore interface {
	// HoldMessage assigns the next held id of h.Channel and keeps h until
	// h.ExpiresAt, unless max held messages of the channel are waiting
	// (LimitReached(QuotaHeld, max)), runs w's raid watch and, when log is
	// not nil, records it with HeldID set to the new id, at once.
	HoldMessage(ctx context.Context, h HeldMessage, max int, w Watch, log *ModEntry) (HeldMessage, error)
	// HeldMessages returns the channel's held messages not expired at
	// now, oldest first.
	HeldMessages(ctx context.Context, channel string, now time.Time) ([]HeldMessage, error)
	// HeldMessage returns one (NotFound when denied, approved or expired).
	HeldMessage(ctx context.Context, channel string, id int64, now time.Time) (HeldMessage, error)
	// DropHeld removes one (NotFound when it is not there).
	DropHeld(ctx context.Context, channel string, id int64) error
}

// ChannelStore keeps which channels exist and their settings.
type ChannelStore interface {
	// ClaimChannel records that the channel exists before anything is
	// written to it: claiming a claimed channel succeeds; a new one fails
	// with LimitReached(QuotaChannels, max) once max channels exist (max
	// <= 0: no limit). The count and the insert are one atomic step.
	ClaimChannel(ctx context.Context, name string, max int) error
	// ClaimOpenChannel is ClaimChannel for a viewer's write under
	// CHAT_OPEN_CHANNELS (see OpenClaim): a channel the platform claimed,
	// or an open one (whose last write becomes c.Now), passes; a new
	// open channel is created only when c.Create, after the open channels
	// idle for c.Idle are reclaimed, and fails with
	// LimitReached(QuotaOpenChannels, c.Max) once c.Max open channels
	// exist; without c.Create it is NotFound. Open channels never count
	// against ClaimChannel's max, so viewers cannot deny channels to the
	// platform; ClaimChannel on an open channel makes it the platform's.
	ClaimOpenChannel(ctx context.Context, name string, c OpenClaim) error
	// Channel returns the settings of a channel (defaults when never set).
	Channel(ctx context.Context, name string) (Channel, error)
	// SaveChannel saves what a moderator sets; Shield and ShieldUntil
	// are SwitchShield's and the raid watch's, and stay as they are.
	SaveChannel(ctx context.Context, c Channel) error
}

// UserStore keeps the users and their tokens.
type UserStore interface {
	// CreateUser stores a new user; Conflict (Reason "name" or "token") when
	// the name (case-insensitively) or the token hash is taken.
	CreateUser(ctx context.Context, u User) error
	User(ctx context.Context, id string) (User, error)
	UserByTokenHash(ctx context.Context, hash string) (User, error)
	// ProvisionUser creates the platform user u (no token) or, when a user
	// with u.ID exists, names it again, in one atomic step: the user takes
	// the first of names that nobody else holds (case-insensitively; its
	// own name counts as free) and is returned. An existing user for whom
	// none is free keeps its name; a new one is Conflict (Reason "name").
	// Nothing else of an existing user changes.
	ProvisionUser(ctx context.Context, u User, names []string) (User, error)
	Users(ctx context.Context) ([]User, error)
	// UpdateUser applies p if the user still holds ifRole (Conflict
	// otherwise, so a check made on a stale role is never acted on) and, when
	// ev is not nil, appends ev to ev.Channel's log, and when log is not nil
	// records it in log.Channel's moderation log (ev.Channel's, when both),
	// in the same step (on a Redis Cluster: the user's change and a pending
	// entry, appended to the channel once, see redisstore/pending.go).
	UpdateUser(ctx context.Context, id string, ifRole Role, p UserPatch, ev *Event, log *ModEntry) (User, error)
	// DeleteUser removes the user and its token if it still holds ifRole.
	DeleteUser(ctx context.Context, id string, ifRole Role) error
	// UsersByID returns the users among ids that exist.
	UsersByID(ctx context.Context, ids []string) (map[string]User, error)
}

// StandingStore keeps what users are given or held to in a channel:
// channel roles, bans and timeouts.
type StandingStore interface {
	// Standing returns id's standing in channel: the zero Standing when
	// nothing was given or held there.
	Standing(ctx context.Context, channel, id string) (Standing, error)
	// ChannelRoles returns the roles given in channel, by user id.
	ChannelRoles(ctx context.Context, channel string) (map[string]Role, error)
	// SetChannelRole gives id role in channel, or takes its role there
	// back when role is "", if its role there is still ifRole ("" for
	// none; Conflict otherwise). Giving a role to one more user when max
	// (> 0) users hold one there is LimitReached(QuotaChannelRoles, max),
	// checked atomically with the write, as is recording log (when not
	// nil) in the channel's moderation log.
	SetChannelRole(ctx context.Context, channel, id string, ifRole, role Role, max int, log *ModEntry) error
	// SetModeration replaces the ban, timeout and reason of id's standing
	// in channel with m's (its Role is ignored) and, when ev is not nil,
	// appends ev to channel's log, and when log is not nil records it in
	// the channel's moderation log, in the same step.
	SetModeration(ctx context.Context, channel, id string, m Standing, ev *Event, log *ModEntry) error
}

// CommandStore keeps bot commands and the rate gates of their
// cooldowns. Commands and filters live in a scope: "" is platform-wide, a
// channel name is that channel's own. Each scope has its own names,
// triggers, ids and limits.
type CommandStore interface {
	// CreateCommand stores c in c.Channel; Conflict if its name or an alias
	// is any command's name or alias there, LimitReached(QuotaCommands,
	// max) if max commands exist there (max <= 0: no limit), checked
	// atomically with the insert.
	CreateCommand(ctx context.Context, c Command, max int) error
	// Command finds a command of scope by name or alias (normalised
	// triggers).
	Command(ctx context.Context, scope, trigger string) (Command, error)
	Commands(ctx context.Context, scope string) ([]Command, error)
	// UpdateCommand replaces the command named name in c.Channel (aliases
	// re-checked).
	UpdateCommand(ctx context.Context, name string, c Command) error
	DeleteCommand(ctx context.Context, scope, name string) error
	// CountCommand adds one use and returns the new count.
	CountCommand(ctx context.Context, scope, name string) (int64, error)
	// Acquire passes every gate or none: if any gate is closed at now it
	// returns the longest remaining wait and changes nothing; otherwise it
	// closes every gate until now+gate.For and returns 0. Command cooldowns
	// use it (slow mode passes its gate in AppendMessage); "now" comes from
	// the Service clock so tests need no sleep.
	Acquire(ctx context.Context, now time.Time, gates ...Gate) (time.Duration, error)
}

// FilterStore keeps message filters, in scopes as CommandStore says.
type FilterStore interface {
	// CreateFilter assigns an id and stores f in f.Channel, unless
	// lim.Filters filters exist there, or f is a regex and lim.RegexFilters
	// regex filters exist there (LimitReached; a limit <= 0 is none),
	// checked atomically with the insert.
	CreateFilter(ctx context.Context, f Filter, lim Limits) (Filter, error)
	Filters(ctx context.Context, scope string) ([]Filter, error)
	DeleteFilter(ctx context.Context, scope, id string) error
}

// SendReader is the read port of a send: one call, so a send's round
// trips do not grow with what it reads (TestSendRoundTrips).
type SendReader interface {
	// ReadForSend makes the reads and the count a send needs before it
	// writes, all at once: one pipelined round trip in Redis (see
	// SendReads). Each part's outcome, error included, is in SendState.
	ReadForSend(ctx context.Context, r SendReads) SendState
}

// Backend is the engine's connection itself.
type Backend interface {
	// Ping checks that the backend answers (readiness).
	Ping(ctx context.Context) error
	Close() error
}

// UserPatch lists the fields UpdateUser changes; nil leaves a field alone.
type UserPatch struct {
	Role          *Role
	TimedOutUntil **time.Time
	Banned        *bool
	ModReason     *string
}

// Gate is one rate gate: Key names it within a channel, For is how long it
// stays closed once passed.
type Gate struct {
	Channel string
	Key     string
	For     time.Duration
}

// SendReads is what Service.Send reads before it writes. None depends on
// another, so an engine asks for them together: on a replica whose CPU is
// busy delivering, each sequential round trip waits for the Go scheduler to
// notice the reply (milliseconds), and a send costs what its round trips
// cost (TestSendRoundTrips; docs/benchmarks.md). Filters are always read.
type SendReads struct {
	// User, when not empty, is read again (a Held sender).
	User string
	// Channel, when not empty, has its settings read (slow mode, the
	// modes, the automatic shield's state).
	Channel string
	// Chatter, when not empty (with Channel), is asked whether it has
	// sent in Channel before (SendState.Chatter).
	Chatter string
	// Unique, when its Key is set, is a gate whose wait is read
	// (SendState.UniqueWait) without passing it: unique chat.
	Unique Gate
	// CountUser, when not empty, has one message counted against Limit
	// with GCRA (Limit.Max at once, then Limit.Max per Limit.Window): the
	// answer is 0 when it may go, or how long to wait; a refused message
	// counts nothing. Every Service on one backend counts a user together.
	// Now is the Service clock; an engine whose backend has its own clock
	// shared by replicas (Redis) uses that.
	CountUser string
	Limit     SendLimit
	Now       time.Time
	// Trigger, when not empty, is a command trigger looked up as Command
	// does (the message looks like a command invocation): In's own command
	// if it has one, else the platform-wide one.
	Trigger string
	// In is the channel the message goes to: its own filters are read
	// (besides the platform-wide ones), and its own command for Trigger.
	In string
	// Member, when not empty, is a user whose standing in In is read.
	Member string
	// Once, when its Key is set, names an idempotency record to read (see
	// Once): a send under a key seen before answers with what the first
	// one stored.
	Once OnceRef
}

// OnceRef names the idempotency record Key of Channel.
type OnceRef struct {
	Channel string
	Key     string
}

// SendState is what ReadForSend found. Each part keeps its own error,
// because Send treats them differently: a user gone is Unauthorized, a
// counter that cannot be reached lets the message through.
type SendState struct {
	User    User
	UserErr error // NotFound when the user no longer exists
	// Filters are the platform-wide filters, ChannelFilters In's own.
	Filters           []Filter
	FiltersErr        error
	ChannelFilters    []Filter
	ChannelFiltersErr error
	// Standing is Member's standing in In.
	Standing    Standing
	StandingErr error
	Channel     Channel
	ChannelErr  error
	// Chatter: SendReads.Chatter has sent in the channel before.
	Chatter    bool
	ChatterErr error
	// UniqueWait is how long SendReads.Unique stays closed (0: open).
	UniqueWait time.Duration
	UniqueErr  error
	// SendWait is the count's answer: 0 when the message may go.
	SendWait time.Duration
	CountErr error
	// Command is Trigger's command (In's own first); CommandErr is
	// NotFound when there is none.
	Command    Command
	CommandErr error
	// Once is the record of SendReads.Once (empty when none was stored).
	Once    OnceRecord
	OnceErr error
}
