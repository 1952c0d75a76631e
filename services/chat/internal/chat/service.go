package chat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"
)

// Moderation limits (Twitch's).
const (
	MaxTimeoutSeconds = 1209600 // 14 days
	maxReasonRunes    = 500
	maxUserNameRunes  = 25
)

// Options configure a Service.
type Options struct {
	// Now is the clock; tests inject one to step through cooldowns, slow
	// mode and timeouts without sleeping. Default time.Now.
	Now func() time.Time
	// PublicRead lets anonymous callers read messages, channels and commands.
	PublicRead bool
	// Logger receives what cannot be returned (a bot reply that failed after
	// the user's message was stored). Default slog.Default().
	Logger *slog.Logger
	// Limits bound filters, commands and channels; zero fields take the defaults.
	Limits Limits
}

// Service holds the rules of the chat and runs them against a Store. It is
// safe for concurrent use; several instances may share one Redis.
type Service struct {
	store      Store
	now        func() time.Time
	publicRead bool
	log        *slog.Logger

	limits  Limits
	claimed claimedChannels

	mu      sync.Mutex
	filters map[string]*compiledFilter // compiled once per filter version
}

// NewService returns a Service over store.
func NewService(store Store, opts Options) *Service {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Service{store: store, now: opts.Now, publicRead: opts.PublicRead, log: opts.Logger,
		limits: opts.Limits.WithDefaults(), filters: map[string]*compiledFilter{}}
}

// Limits returns the limits in force.
func (s *Service) Limits() Limits { return s.limits }

// claimChannel makes sure the channel counts against the channel limit
// before anything is written to it.
func (s *Service) claimChannel(ctx context.Context, name string) error {
	if s.claimed.has(name) {
		return nil
	}
	if err := s.store.ClaimChannel(ctx, name, s.limits.Channels); err != nil {
		return fmt.Errorf("channel %s: %w", name, err)
	}
	s.claimed.add(name, s.limits.Channels)
	return nil
}

// Events is the channel event log live delivery reads.
func (s *Service) Events() EventLog { return s.store }

// Ready checks that the store answers (for /readyz).
func (s *Service) Ready(ctx context.Context) error { return s.store.Ping(ctx) }

// PublicRead reports whether anonymous reading is on.
func (s *Service) PublicRead() bool { return s.publicRead }

// clock returns now in UTC at millisecond precision, the precision every
// engine stores, so what Send returns equals what a later read returns.
func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

func deny(a Action) error {
	return &Error{Kind: KindForbidden, Message: fmt.Sprintf("your role may not %s (needs %s or higher)", strings.ReplaceAll(string(a), "_", " "), MinRoleFor(a)), Reason: string(a)}
}

func (s *Service) require(actor User, a Action) error {
	if !Allowed(actor.Role, a) {
		return deny(a)
	}
	return nil
}

func (s *Service) requireOn(actor User, a Action, target User) error {
	if err := s.require(actor, a); err != nil {
		return err
	}
	if !AllowedOn(actor.Role, a, target.Role) {
		return &Error{Kind: KindForbidden, Message: fmt.Sprintf("a %s cannot %s a %s", actor.Role, strings.ReplaceAll(string(a), "_", " "), target.Role), Reason: string(a)}
	}
	return nil
}

// canRead lets anonymous callers (actor nil) read while public reading is on.
func (s *Service) canRead(actor *User) error {
	if actor == nil {
		if s.publicRead {
			return nil
		}
		return &Error{Kind: KindUnauthorized, Message: "reading needs a bearer token"}
	}
	return s.require(*actor, ActionReadMessages)
}

// ---- authentication ----

// Authenticate returns the user owning a bearer token.
func (s *Service) Authenticate(ctx context.Context, token string) (User, error) {
	if token == "" {
		return User{}, &Error{Kind: KindUnauthorized, Message: "missing bearer token"}
	}
	u, err := s.store.UserByTokenHash(ctx, HashToken(token))
	if errors.Is(err, ErrNotFound) {
		return User{}, &Error{Kind: KindUnauthorized, Message: "unknown bearer token"}
	}
	if err != nil {
		return User{}, fmt.Errorf("authenticate: %w", err)
	}
	return u, nil
}

// Bootstrap makes token the token of a broadcaster (CHAT_ADMIN_TOKEN): the
// user holding it is promoted if needed, or a broadcaster is created. It is
// idempotent, and replicas starting together converge on one user because
// the store refuses a second user with the same token hash.
func (s *Service) Bootstrap(ctx context.Context, token string) (User, error) {
	if len(token) < 16 {
		return User{}, Invalid("CHAT_ADMIN_TOKEN", "at least 16 characters")
	}
	hash := HashToken(token)
	for attempt := 0; attempt < 5; attempt++ {
		u, err := s.store.UserByTokenHash(ctx, hash)
		switch {
		case err == nil:
			if u.Role == RoleBroadcaster {
				return u, nil
			}
			r := RoleBroadcaster
			u, err = s.store.UpdateUser(ctx, u.ID, u.Role, UserPatch{Role: &r}, nil)
			if errors.Is(err, ErrConflict) {
				continue // changed meanwhile; look again
			}
			if err != nil {
				return User{}, fmt.Errorf("bootstrap: promote %s: %w", u.ID, err)
			}
			return u, nil
		case !errors.Is(err, ErrNotFound):
			return User{}, fmt.Errorf("bootstrap: %w", err)
		}
		// A stable id and name from the hash: a racing replica creates the
		// very same user, and the loser sees a conflict and reads it back.
		u = User{ID: "u_" + hash[:16], Name: "broadcaster", Role: RoleBroadcaster, CreatedAt: s.clock(), TokenHash: hash}
		if attempt > 0 {
			u.Name = "broadcaster_" + hash[:6]
		}
		err = s.store.CreateUser(ctx, u)
		if err == nil {
			return u, nil
		}
		if !errors.Is(err, ErrConflict) {
			return User{}, fmt.Errorf("bootstrap: create: %w", err)
		}
	}
	return User{}, Conflict("bootstrap: could not create the broadcaster; the name is taken")
}

// ---- messages ----

// SendInput is a message to send.
type SendInput struct {
	Channel string `json:"channel,omitempty"`
	Message string `json:"message"`
}

// SendResult is the stored message and, when it triggered a command, the
// bot's stored reply.
type SendResult struct {
	Message Message  `json:"message"`
	Reply   *Message `json:"reply,omitempty"`
}

// Send runs every rule on a message and stores it: permission, ban and
// timeout, length, filters, slow mode, then storage, then commands. Errors:
// Unauthorized (the user no longer exists), Forbidden (with Until for a
// timeout), Invalid, Blocked (Reason = filter kind), SlowMode (RetryAfter),
// Unavailable. A nil error means the message is stored.
func (s *Service) Send(ctx context.Context, actor User, in SendInput) (SendResult, error) {
	channel, err := NormalizeChannel(in.Channel)
	if err != nil {
		return SendResult{}, err
	}
	// Reload the sender: a WebSocket may hold an actor from before a ban
	// or a role change.
	u, err := s.store.User(ctx, actor.ID)
	if errors.Is(err, ErrNotFound) {
		return SendResult{}, &Error{Kind: KindUnauthorized, Message: "user no longer exists"}
	}
	if err != nil {
		return SendResult{}, fmt.Errorf("send: load sender: %w", err)
	}
	if err := s.require(u, ActionSendMessages); err != nil {
		return SendResult{}, err
	}
	now := s.clock()
	if err := s.checkModeration(u, now); err != nil {
		return SendResult{}, err
	}
	text, err := checkMessageText(in.Message)
	if err != nil {
		return SendResult{}, err
	}
	filters, err := s.compiledFilters(ctx)
	if err != nil {
		return SendResult{}, fmt.Errorf("send: %w", err)
	}
	out := applyFilters(text, u.Role, filters)
	if out.blocked != nil {
		return SendResult{}, &Error{Kind: KindBlocked, Reason: string(out.blocked.Kind),
			Message: fmt.Sprintf("message blocked by a %s filter (%s)", out.blocked.Kind, out.blocked.ID)}
	}
	if err := s.claimChannel(ctx, channel); err != nil {
		return SendResult{}, fmt.Errorf("send: %w", err)
	}
	if !Allowed(u.Role, ActionBypassSlowMode) {
		ch, err := s.store.Channel(ctx, channel)
		if err != nil {
			return SendResult{}, fmt.Errorf("send: channel settings: %w", err)
		}
		if ch.SlowModeSeconds > 0 {
			wait, err := s.store.Acquire(ctx, now, Gate{Channel: channel, Key: "slow:" + u.ID, For: time.Duration(ch.SlowModeSeconds) * time.Second})
			if err != nil {
				return SendResult{}, fmt.Errorf("send: slow mode: %w", err)
			}
			if wait > 0 {
				return SendResult{}, &Error{Kind: KindSlowMode, RetryAfter: wait, Reason: "slow_mode",
					Message: fmt.Sprintf("slow mode is on: wait %s", roundUpSecond(wait))}
			}
		}
	}
	m, err := s.store.AppendMessage(ctx, Message{Channel: channel, User: u.Ref(), Text: out.text, CreatedAt: now})
	if err != nil {
		return SendResult{}, fmt.Errorf("send: store message: %w", err)
	}
	res := SendResult{Message: m}
	reply, err := s.runCommand(ctx, u, m, now)
	if err != nil {
		// The message is stored and must be reported as such; a lost bot
		// reply is not worth failing the request over.
		s.log.WarnContext(ctx, "bot reply failed", "channel", channel, "message_id", m.ID, "err", err)
	}
	res.Reply = reply
	return res, nil
}

func roundUpSecond(d time.Duration) time.Duration {
	return (d + time.Second - 1).Truncate(time.Second)
}

// checkModeration refuses banned and timed-out users, saying until when.
func (s *Service) checkModeration(u User, now time.Time) error {
	if u.Banned {
		return &Error{Kind: KindForbidden, Reason: "banned", Message: "you are banned from this chat"}
	}
	if u.TimedOutUntil != nil && u.TimedOutUntil.After(now) {
		return &Error{Kind: KindForbidden, Reason: "timed_out", Until: *u.TimedOutUntil,
			Message: "you are timed out until " + u.TimedOutUntil.UTC().Format(time.RFC3339)}
	}
	return nil
}

// runCommand answers a command invocation with a stored bot message, or
// returns nil when the message is no invocation, the command is unknown,
// disabled, above the sender's level or cooling down (bots stay silent then,
// as Nightbot does, instead of spamming "on cooldown").
func (s *Service) runCommand(ctx context.Context, u User, m Message, now time.Time) (*Message, error) {
	inv, ok := parseInvocation(m.Text)
	if !ok {
		return nil, nil
	}
	cmd, err := s.store.Command(ctx, inv.trigger)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("command %s: %w", inv.trigger, err)
	}
	if !cmd.Enabled || !u.Role.AtLeast(cmd.UserLevel) {
		return nil, nil
	}
	if !Allowed(u.Role, ActionBypassCooldowns) {
		var gates []Gate
		if cmd.CooldownSeconds > 0 {
			gates = append(gates, Gate{Channel: m.Channel, Key: "cmd:" + cmd.Name, For: time.Duration(cmd.CooldownSeconds) * time.Second})
		}
		if cmd.UserCooldownSeconds > 0 {
			gates = append(gates, Gate{Channel: m.Channel, Key: "cmdu:" + cmd.Name + ":" + u.ID, For: time.Duration(cmd.UserCooldownSeconds) * time.Second})
		}
		if len(gates) > 0 {
			wait, err := s.store.Acquire(ctx, now, gates...)
			if err != nil {
				return nil, fmt.Errorf("command %s cooldown: %w", cmd.Name, err)
			}
			if wait > 0 {
				return nil, nil
			}
		}
	}
	count, err := s.store.CountCommand(ctx, cmd.Name)
	if err != nil {
		return nil, fmt.Errorf("command %s count: %w", cmd.Name, err)
	}
	text := RenderResponse(cmd.Response, RenderVars{User: u.Name, Args: inv.args, Count: count, Channel: m.Channel})
	reply, err := s.store.AppendMessage(ctx, Message{Channel: m.Channel, User: BotUser, Text: text, CreatedAt: now, Bot: true})
	if err != nil {
		return nil, fmt.Errorf("command %s reply: %w", cmd.Name, err)
	}
	return &reply, nil
}

// Messages returns a page of a channel, oldest first. Limit 0 means
// DefaultLimit; Before and After are message ids (exclusive). actor nil is
// an anonymous reader.
func (s *Service) Messages(ctx context.Context, actor *User, channel string, p Page) ([]Message, error) {
	if err := s.canRead(actor); err != nil {
		return nil, err
	}
	channel, err := NormalizeChannel(channel)
	if err != nil {
		return nil, err
	}
	var v validation
	if p.Limit == 0 {
		p.Limit = DefaultLimit
	}
	if p.Limit < 1 || p.Limit > MaxLimit {
		v.add("limit", "must be 1..%d", MaxLimit)
	}
	if p.Before < 0 {
		v.add("before", "must be a message id")
	}
	if p.After < 0 {
		v.add("after", "must be a message id")
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	ms, err := s.store.Messages(ctx, channel, p)
	if err != nil {
		return nil, fmt.Errorf("list messages: %w", err)
	}
	return ms, nil
}

// DeleteMessage replaces a message with its tombstone. Moderators delete
// messages of lower roles, their own and bot replies; nobody deletes the
// broadcaster's, and a moderator cannot delete another moderator's.
func (s *Service) DeleteMessage(ctx context.Context, actor User, channel string, id int64) (Message, error) {
	if err := s.require(actor, ActionDeleteMessages); err != nil {
		return Message{}, err
	}
	channel, err := NormalizeChannel(channel)
	if err != nil {
		return Message{}, err
	}
	m, err := s.store.Message(ctx, channel, id)
	if err != nil {
		return Message{}, fmt.Errorf("delete message %d: %w", id, err)
	}
	if !m.Bot && m.User.ID != actor.ID {
		author := User{ID: m.User.ID, Role: m.User.Role}
		if cur, err := s.store.User(ctx, m.User.ID); err == nil {
			author = cur // judge by today's role: a demoted moderator's lines can go
		} else if !errors.Is(err, ErrNotFound) {
			return Message{}, fmt.Errorf("delete message %d: load author: %w", id, err)
		}
		if err := s.requireOn(actor, ActionDeleteMessages, author); err != nil {
			return Message{}, err
		}
	}
	t, err := s.store.DeleteMessage(ctx, channel, id, s.clock())
	if err != nil {
		return Message{}, fmt.Errorf("delete message %d: %w", id, err)
	}
	return t, nil
}

// ---- channels ----

// ChannelPatch changes channel settings.
type ChannelPatch struct {
	SlowModeSeconds *int `json:"slow_mode_seconds,omitempty"`
}

// Channel returns a channel's settings.
func (s *Service) Channel(ctx context.Context, actor *User, name string) (Channel, error) {
	if err := s.canRead(actor); err != nil {
		return Channel{}, err
	}
	name, err := NormalizeChannel(name)
	if err != nil {
		return Channel{}, err
	}
	c, err := s.store.Channel(ctx, name)
	if err != nil {
		return Channel{}, fmt.Errorf("channel %s: %w", name, err)
	}
	return c, nil
}

// UpdateChannel changes a channel's settings (moderators).
func (s *Service) UpdateChannel(ctx context.Context, actor User, name string, p ChannelPatch) (Channel, error) {
	if err := s.require(actor, ActionManageChannel); err != nil {
		return Channel{}, err
	}
	name, err := NormalizeChannel(name)
	if err != nil {
		return Channel{}, err
	}
	c, err := s.store.Channel(ctx, name)
	if err != nil {
		return Channel{}, fmt.Errorf("channel %s: %w", name, err)
	}
	if p.SlowModeSeconds != nil {
		if *p.SlowModeSeconds < 0 || *p.SlowModeSeconds > MaxSlowModeSeconds {
			return Channel{}, Invalid("slow_mode_seconds", fmt.Sprintf("must be 0..%d", MaxSlowModeSeconds))
		}
		c.SlowModeSeconds = *p.SlowModeSeconds
	}
	if err := s.claimChannel(ctx, name); err != nil {
		return Channel{}, err
	}
	if err := s.store.SaveChannel(ctx, c); err != nil {
		return Channel{}, fmt.Errorf("channel %s: save: %w", name, err)
	}
	return c, nil
}

// ---- commands ----

// CreateCommand adds a bot command (moderators). Conflict if the trigger or
// an alias is taken.
func (s *Service) CreateCommand(ctx context.Context, actor User, in CommandInput) (Command, error) {
	if err := s.require(actor, ActionManageCommands); err != nil {
		return Command{}, err
	}
	name, err := NormalizeTrigger(in.Command)
	if err != nil {
		return Command{}, err
	}
	now := s.clock()
	c := Command{Name: name, Response: strings.TrimSpace(in.Response), Aliases: in.Aliases, Enabled: true,
		CooldownSeconds: DefaultCooldownSeconds, UserLevel: RoleViewer, CreatedAt: now, UpdatedAt: now}
	if in.Enabled != nil {
		c.Enabled = *in.Enabled
	}
	if in.CooldownSeconds != nil {
		c.CooldownSeconds = *in.CooldownSeconds
	}
	if in.UserCooldownSeconds != nil {
		c.UserCooldownSeconds = *in.UserCooldownSeconds
	}
	if in.UserLevel != "" {
		c.UserLevel = in.UserLevel
	}
	if err := c.validate(); err != nil {
		return Command{}, err
	}
	if err := s.store.CreateCommand(ctx, c, s.limits.Commands); err != nil {
		return Command{}, fmt.Errorf("create command %s: %w", name, err)
	}
	return c, nil
}

// Commands lists the bot commands, sorted by name.
func (s *Service) Commands(ctx context.Context, actor *User) ([]Command, error) {
	if err := s.canRead(actor); err != nil {
		return nil, err
	}
	cs, err := s.store.Commands(ctx)
	if err != nil {
		return nil, fmt.Errorf("list commands: %w", err)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	return cs, nil
}

// Command returns one command by name or alias ("hello", "!Hello").
func (s *Service) Command(ctx context.Context, actor *User, name string) (Command, error) {
	if err := s.canRead(actor); err != nil {
		return Command{}, err
	}
	t, err := NormalizeTrigger(name)
	if err != nil {
		return Command{}, err
	}
	c, err := s.store.Command(ctx, t)
	if err != nil {
		return Command{}, fmt.Errorf("command %s: %w", t, err)
	}
	return c, nil
}

// UpdateCommand changes a command (moderators).
func (s *Service) UpdateCommand(ctx context.Context, actor User, name string, p CommandPatch) (Command, error) {
	if err := s.require(actor, ActionManageCommands); err != nil {
		return Command{}, err
	}
	t, err := NormalizeTrigger(name)
	if err != nil {
		return Command{}, err
	}
	c, err := s.store.Command(ctx, t)
	if err != nil {
		return Command{}, fmt.Errorf("command %s: %w", t, err)
	}
	if p.Response != nil {
		c.Response = strings.TrimSpace(*p.Response)
	}
	if p.Aliases != nil {
		c.Aliases = *p.Aliases
	}
	if p.Enabled != nil {
		c.Enabled = *p.Enabled
	}
	if p.CooldownSeconds != nil {
		c.CooldownSeconds = *p.CooldownSeconds
	}
	if p.UserCooldownSeconds != nil {
		c.UserCooldownSeconds = *p.UserCooldownSeconds
	}
	if p.UserLevel != nil {
		c.UserLevel = *p.UserLevel
	}
	c.UpdatedAt = s.clock()
	if err := c.validate(); err != nil {
		return Command{}, err
	}
	if err := s.store.UpdateCommand(ctx, c.Name, c); err != nil {
		return Command{}, fmt.Errorf("update command %s: %w", c.Name, err)
	}
	return c, nil
}

// DeleteCommand removes a command and its aliases (moderators).
func (s *Service) DeleteCommand(ctx context.Context, actor User, name string) error {
	if err := s.require(actor, ActionManageCommands); err != nil {
		return err
	}
	t, err := NormalizeTrigger(name)
	if err != nil {
		return err
	}
	c, err := s.store.Command(ctx, t)
	if err != nil {
		return fmt.Errorf("command %s: %w", t, err)
	}
	if err := s.store.DeleteCommand(ctx, c.Name); err != nil {
		return fmt.Errorf("delete command %s: %w", c.Name, err)
	}
	return nil
}

// ---- users ----

// CreateUserInput creates a user.
type CreateUserInput struct {
	Name string `json:"name"`
	Role Role   `json:"role,omitempty"`
}

func validateUserName(name string) error {
	if n := runeLen(name); n < 2 || n > maxUserNameRunes {
		return Invalid("name", fmt.Sprintf("must be 2..%d characters", maxUserNameRunes))
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return Invalid("name", "use letters a-z, digits and '_'")
		}
	}
	if strings.EqualFold(name, BotUser.Name) {
		return Invalid("name", "reserved for the bot")
	}
	return nil
}

// CreateUser adds a user (broadcaster) and returns its bearer token, which
// is shown only this once: only its hash is stored.
func (s *Service) CreateUser(ctx context.Context, actor User, in CreateUserInput) (User, string, error) {
	if err := s.require(actor, ActionManageUsers); err != nil {
		return User{}, "", err
	}
	name := strings.TrimSpace(in.Name)
	if err := validateUserName(name); err != nil {
		return User{}, "", err
	}
	role := in.Role
	if role == "" {
		role = RoleViewer
	}
	if !role.Valid() {
		return User{}, "", Invalid("role", "must be one of moderator, vip, subscriber, viewer")
	}
	if !actor.Role.Above(role) {
		return User{}, "", Forbidden(fmt.Sprintf("a %s cannot create a %s", actor.Role, role))
	}
	token, err := NewToken()
	if err != nil {
		return User{}, "", err
	}
	id, err := newID("u_")
	if err != nil {
		return User{}, "", err
	}
	u := User{ID: id, Name: name, Role: role, CreatedAt: s.clock(), TokenHash: HashToken(token)}
	if err := s.store.CreateUser(ctx, u); err != nil {
		return User{}, "", fmt.Errorf("create user %s: %w", name, err)
	}
	return u, token, nil
}

// Users lists users by name (moderators).
func (s *Service) Users(ctx context.Context, actor User) ([]User, error) {
	if err := s.require(actor, ActionListUsers); err != nil {
		return nil, err
	}
	us, err := s.store.Users(ctx)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	sort.Slice(us, func(i, j int) bool { return strings.ToLower(us[i].Name) < strings.ToLower(us[j].Name) })
	return us, nil
}

// User returns one user: oneself, or anyone for moderators.
func (s *Service) User(ctx context.Context, actor User, id string) (User, error) {
	if id != actor.ID {
		if err := s.require(actor, ActionListUsers); err != nil {
			return User{}, err
		}
	}
	u, err := s.store.User(ctx, id)
	if err != nil {
		return User{}, fmt.Errorf("user %s: %w", id, err)
	}
	return u, nil
}

// loadTarget reads the user an action is about.
func (s *Service) loadTarget(ctx context.Context, id string) (User, error) {
	u, err := s.store.User(ctx, id)
	if err != nil {
		return User{}, fmt.Errorf("user %s: %w", id, err)
	}
	return u, nil
}

// SetRole changes a user's role (broadcaster). Nobody is made or unmade
// broadcaster through here: that role comes only from CHAT_ADMIN_TOKEN.
func (s *Service) SetRole(ctx context.Context, actor User, id string, role Role) (User, error) {
	if err := s.require(actor, ActionChangeRoles); err != nil {
		return User{}, err
	}
	if !role.Valid() {
		return User{}, Invalid("role", "must be one of moderator, vip, subscriber, viewer")
	}
	t, err := s.loadTarget(ctx, id)
	if err != nil {
		return User{}, err
	}
	if err := s.requireOn(actor, ActionChangeRoles, t); err != nil {
		return User{}, err
	}
	if !actor.Role.Above(role) {
		return User{}, Forbidden(fmt.Sprintf("a %s cannot grant the %s role", actor.Role, role))
	}
	u, err := s.store.UpdateUser(ctx, id, t.Role, UserPatch{Role: &role}, nil)
	if err != nil {
		return User{}, fmt.Errorf("set role of %s: %w", id, err)
	}
	return u, nil
}

// DeleteUser removes a user and revokes its token (broadcaster).
func (s *Service) DeleteUser(ctx context.Context, actor User, id string) error {
	if err := s.require(actor, ActionManageUsers); err != nil {
		return err
	}
	t, err := s.loadTarget(ctx, id)
	if err != nil {
		return err
	}
	if err := s.requireOn(actor, ActionManageUsers, t); err != nil {
		return err
	}
	if err := s.store.DeleteUser(ctx, id, t.Role); err != nil {
		return fmt.Errorf("delete user %s: %w", id, err)
	}
	return nil
}

// TimeoutInput times a user out.
type TimeoutInput struct {
	Seconds int    `json:"seconds"`
	Reason  string `json:"reason,omitempty"`
	// Channel is where the user_timed_out event is announced (default
	// general); the timeout itself holds in every channel.
	Channel string `json:"channel,omitempty"`
}

// BanInput bans a user.
type BanInput struct {
	Reason  string `json:"reason,omitempty"`
	Channel string `json:"channel,omitempty"`
}

func validateReason(reason string) error {
	if runeLen(reason) > maxReasonRunes {
		return Invalid("reason", fmt.Sprintf("at most %d characters", maxReasonRunes))
	}
	return nil
}

// Timeout stops a user from sending for 1..1209600 seconds (moderators,
// on lower roles). A banned user must be unbanned first (Conflict).
func (s *Service) Timeout(ctx context.Context, actor User, id string, in TimeoutInput) (User, error) {
	if err := s.require(actor, ActionTimeoutUsers); err != nil {
		return User{}, err
	}
	var v validation
	if in.Seconds < 1 || in.Seconds > MaxTimeoutSeconds {
		v.add("seconds", "must be 1..%d", MaxTimeoutSeconds)
	}
	if runeLen(in.Reason) > maxReasonRunes {
		v.add("reason", "at most %d characters", maxReasonRunes)
	}
	if err := v.err(); err != nil {
		return User{}, err
	}
	channel, err := NormalizeChannel(in.Channel)
	if err != nil {
		return User{}, err
	}
	t, err := s.loadTarget(ctx, id)
	if err != nil {
		return User{}, err
	}
	if err := s.requireOn(actor, ActionTimeoutUsers, t); err != nil {
		return User{}, err
	}
	if t.Banned {
		return User{}, Conflict("user is banned; unban before a timeout")
	}
	if err := s.claimChannel(ctx, channel); err != nil {
		return User{}, err
	}
	now := s.clock()
	until := now.Add(time.Duration(in.Seconds) * time.Second)
	untilp := &until
	reason := strings.TrimSpace(in.Reason)
	ev := &Event{Type: EventUserTimedOut, Channel: channel,
		Moderation: &Moderation{User: t.Ref(), By: actor.Ref(), Reason: reason, Until: untilp, At: now}}
	u, err := s.store.UpdateUser(ctx, id, t.Role, UserPatch{TimedOutUntil: &untilp, ModReason: &reason}, ev)
	if err != nil {
		return User{}, fmt.Errorf("timeout %s: %w", id, err)
	}
	return u, nil
}

// Ban stops a user from sending until unbanned (moderators, on lower roles).
func (s *Service) Ban(ctx context.Context, actor User, id string, in BanInput) (User, error) {
	if err := s.require(actor, ActionBanUsers); err != nil {
		return User{}, err
	}
	if err := validateReason(in.Reason); err != nil {
		return User{}, err
	}
	channel, err := NormalizeChannel(in.Channel)
	if err != nil {
		return User{}, err
	}
	t, err := s.loadTarget(ctx, id)
	if err != nil {
		return User{}, err
	}
	if err := s.requireOn(actor, ActionBanUsers, t); err != nil {
		return User{}, err
	}
	if t.Banned {
		return User{}, Conflict("user is already banned")
	}
	if err := s.claimChannel(ctx, channel); err != nil {
		return User{}, err
	}
	reason := strings.TrimSpace(in.Reason)
	banned := true
	var none *time.Time
	ev := &Event{Type: EventUserBanned, Channel: channel,
		Moderation: &Moderation{User: t.Ref(), By: actor.Ref(), Reason: reason, At: s.clock()}}
	u, err := s.store.UpdateUser(ctx, id, t.Role, UserPatch{Banned: &banned, TimedOutUntil: &none, ModReason: &reason}, ev)
	if err != nil {
		return User{}, fmt.Errorf("ban %s: %w", id, err)
	}
	return u, nil
}

// Unban lifts a ban and any timeout; unbanning someone in good standing
// changes nothing and succeeds.
func (s *Service) Unban(ctx context.Context, actor User, id string) (User, error) {
	if err := s.require(actor, ActionBanUsers); err != nil {
		return User{}, err
	}
	t, err := s.loadTarget(ctx, id)
	if err != nil {
		return User{}, err
	}
	if err := s.requireOn(actor, ActionBanUsers, t); err != nil {
		return User{}, err
	}
	banned := false
	var none *time.Time
	empty := ""
	u, err := s.store.UpdateUser(ctx, id, t.Role, UserPatch{Banned: &banned, TimedOutUntil: &none, ModReason: &empty}, nil)
	if err != nil {
		return User{}, fmt.Errorf("unban %s: %w", id, err)
	}
	return u, nil
}

// ---- filters ----

// Filters lists filters in the order they run (moderators: the list
// reveals the blocked terms).
func (s *Service) Filters(ctx context.Context, actor User) ([]Filter, error) {
	if err := s.require(actor, ActionManageFilters); err != nil {
		return nil, err
	}
	fs, err := s.sortedFilters(ctx)
	if err != nil {
		return nil, fmt.Errorf("list filters: %w", err)
	}
	return fs, nil
}

// CreateFilter validates, compiles and stores a filter (moderators).
func (s *Service) CreateFilter(ctx context.Context, actor User, in FilterInput) (Filter, error) {
	if err := s.require(actor, ActionManageFilters); err != nil {
		return Filter{}, err
	}
	f, _, err := newFilter(in, s.clock())
	if err != nil {
		return Filter{}, err
	}
	f, err = s.store.CreateFilter(ctx, f, s.limits)
	if err != nil {
		return Filter{}, fmt.Errorf("create filter: %w", err)
	}
	return f, nil
}

// DeleteFilter removes a filter (moderators).
func (s *Service) DeleteFilter(ctx context.Context, actor User, id string) error {
	if err := s.require(actor, ActionManageFilters); err != nil {
		return err
	}
	if err := s.store.DeleteFilter(ctx, id); err != nil {
		return fmt.Errorf("delete filter %s: %w", id, err)
	}
	return nil
}

func (s *Service) sortedFilters(ctx context.Context) ([]Filter, error) {
	fs, err := s.store.Filters(ctx)
	if err != nil {
		return nil, err
	}
	sort.Slice(fs, func(i, j int) bool {
		if !fs[i].CreatedAt.Equal(fs[j].CreatedAt) {
			return fs[i].CreatedAt.Before(fs[j].CreatedAt)
		}
		if len(fs[i].ID) != len(fs[j].ID) {
			return len(fs[i].ID) < len(fs[j].ID)
		}
		return fs[i].ID < fs[j].ID
	})
	return fs, nil
}

// compiledFilters returns the current filters ready to run. Filters live in
// the store (so every replica applies the same ones) but each is compiled
// once per process: the cache is keyed by everything that shapes a matcher.
func (s *Service) compiledFilters(ctx context.Context) ([]*compiledFilter, error) {
	fs, err := s.sortedFilters(ctx)
	if err != nil {
		return nil, fmt.Errorf("load filters: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[string]*compiledFilter, len(fs))
	out := make([]*compiledFilter, 0, len(fs))
	for _, f := range fs {
		key := fmt.Sprintf("%s|%s|%s|%s|%s|%d|%d", f.ID, f.Kind, f.Action, f.MinRole, f.Pattern, f.Threshold, f.MinLength)
		c, ok := s.filters[key]
		if !ok {
			c, err = compileFilter(f)
			if err != nil {
				// Stored filters were valid when created; one that no longer
				// compiles (an older version's syntax) is skipped, not fatal.
				s.log.WarnContext(ctx, "skipping filter that does not compile", "filter", f.ID, "err", err)
				continue
			}
		}
		next[key] = c
		out = append(out, c)
	}
	s.filters = next
	return out, nil
}
