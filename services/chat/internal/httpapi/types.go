package httpapi

import (
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// The API's own shapes. They mirror the domain types field for field but
// carry the documentation and constraints /docs shows and the library
// enforces; the domain types stay free of transport tags.

// UserRef names the author of a message.
type UserRef struct {
	ID   string `json:"id" doc:"User id (\"bot\" for command replies)"`
	Name string `json:"name" doc:"Display name"`
	Role string `json:"role" enum:"broadcaster,moderator,vip,subscriber,viewer" doc:"Role when the message was sent"`
}

// Message is a stored chat message or its tombstone.
type Message struct {
	ID        int64      `json:"id" doc:"Increases by one per message in its channel; use it as a cursor (before, after)" example:"42"`
	Channel   string     `json:"channel" doc:"Channel name" example:"general"`
	User      UserRef    `json:"user"`
	Text      string     `json:"text" doc:"The text as stored (masked by filters where they apply); empty for a tombstone"`
	CreatedAt time.Time  `json:"created_at" doc:"RFC 3339, UTC, millisecond precision"`
	Bot       bool       `json:"bot" doc:"True for a bot command's reply"`
	Deleted   bool       `json:"deleted,omitempty" doc:"True for a tombstone: the message was deleted by a moderator"`
	DeletedAt *time.Time `json:"deleted_at,omitempty" doc:"When the message was deleted"`
}

func messageOf(m chat.Message) Message {
	return Message{ID: m.ID, Channel: m.Channel, User: UserRef{ID: m.User.ID, Name: m.User.Name, Role: string(m.User.Role)},
		Text: m.Text, CreatedAt: m.CreatedAt, Bot: m.Bot, Deleted: m.Deleted, DeletedAt: m.DeletedAt}
}

func messagesOf(ms []chat.Message) []Message {
	out := make([]Message, 0, len(ms))
	for _, m := range ms {
		out = append(out, messageOf(m))
	}
	return out
}

// MessagePage is one page of a channel, oldest first.
type MessagePage struct {
	Channel  string    `json:"channel" doc:"The channel read, normalised"`
	Messages []Message `json:"messages" doc:"Oldest first. For older messages pass the first id as before; for newer ones the last id as after"`
}

// SentMessage is the stored message and, when it triggered a bot command,
// the bot's stored reply; or, answered 202, the message held for review.
type SentMessage struct {
	Message
	Reply *Message     `json:"reply,omitempty" doc:"The bot's reply when the message triggered a command (stored and delivered like any message)"`
	Held  *HeldMessage `json:"held,omitempty" doc:"Answered 202: the message waits for review and nothing was stored; the body's id is then the review id (held.id, not a message id: the message gets one when a moderator approves it)"`
}

// HeldMessage is a message waiting in a channel's review queue.
type HeldMessage struct {
	ID        int64     `json:"id" doc:"Review id in the channel (not a message id)" example:"7"`
	Channel   string    `json:"channel" example:"general"`
	User      UserRef   `json:"user"`
	Text      string    `json:"text" doc:"What the sender wrote"`
	Reason    string    `json:"reason" enum:"filter,first_message" doc:"filter: a hold filter (filter_id); first_message: first-message review or shield mode"`
	FilterID  string    `json:"filter_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at" doc:"Dropped unreviewed then (an hour after it was sent)"`
}

func heldOf(h chat.HeldMessage) HeldMessage {
	return HeldMessage{ID: h.ID, Channel: h.Channel, User: UserRef{ID: h.User.ID, Name: h.User.Name, Role: string(h.User.Role)},
		Text: h.Text, Reason: h.Reason, FilterID: h.FilterID, CreatedAt: h.CreatedAt, ExpiresAt: h.ExpiresAt}
}

// HeldList is a channel's review queue, oldest first.
type HeldList struct {
	Held []HeldMessage `json:"held"`
}

// User is an account as the API shows it (never its token).
type User struct {
	ID               string     `json:"id" example:"u_3f2a9c0d1e4b5a6c"`
	Name             string     `json:"name" doc:"2..25 of A-Z, a-z, 0-9 and _; unique regardless of case"`
	Role             string     `json:"role" enum:"broadcaster,moderator,vip,subscriber,viewer"`
	CreatedAt        time.Time  `json:"created_at"`
	TimedOutUntil    *time.Time `json:"timed_out_until,omitempty" doc:"End of the last timeout (in the past once it has run out)"`
	Banned           bool       `json:"banned"`
	ModerationReason string     `json:"moderation_reason,omitempty" doc:"Reason given with the last ban or timeout"`
	// Channel is the user as seen in one channel, on answers about one.
	Channel *InChannel `json:"channel,omitempty" doc:"On answers about one channel (a role given, a ban or timeout held there): the user's standing there. The fields above stay the platform-wide ones"`
}

// InChannel is a user's standing in one channel.
type InChannel struct {
	Name             string     `json:"name" doc:"The channel" example:"general"`
	Role             string     `json:"role" enum:"broadcaster,moderator,vip,subscriber,viewer" doc:"The role held there: the higher of the platform-wide role and the role given there"`
	GivenRole        string     `json:"given_role,omitempty" doc:"The role given in the channel: broadcaster, moderator, vip or subscriber (absent: none)"`
	TimedOutUntil    *time.Time `json:"timed_out_until,omitempty" doc:"End of the last timeout there"`
	Banned           bool       `json:"banned" doc:"Banned from that channel (sends there answer 403 reason banned)"`
	ModerationReason string     `json:"moderation_reason,omitempty" doc:"Reason given with the last ban or timeout there"`
}

func userOf(u chat.User) User {
	return User{ID: u.ID, Name: u.Name, Role: string(u.Role), CreatedAt: u.CreatedAt,
		TimedOutUntil: u.TimedOutUntil, Banned: u.Banned, ModerationReason: u.ModReason}
}

// memberOf is a user with, when m is in a channel, its standing there.
func memberOf(m chat.Member) User {
	u := userOf(m.User)
	if m.Channel != "" {
		st := m.Standing
		u.Channel = &InChannel{Name: m.Channel, Role: string(m.Role()), GivenRole: string(st.Role),
			TimedOutUntil: st.TimedOutUntil, Banned: st.Banned, ModerationReason: st.ModReason}
	}
	return u
}

// ChannelRole is one role given in a channel.
type ChannelRole struct {
	UserID string `json:"user_id" example:"u_3f2a9c0d1e4b5a6c"`
	Name   string `json:"name"`
	Role   string `json:"role" enum:"broadcaster,moderator,vip,subscriber" doc:"The role given in the channel"`
}

// ChannelRoles is every role given in a channel, highest first.
type ChannelRoles struct {
	Roles []ChannelRole `json:"roles"`
}

// CreatedUser is a new user with its bearer token, shown this once.
type CreatedUser struct {
	User
	Token string `json:"token" doc:"Bearer token for Authorization: Bearer <token>. Shown only in this response: the service keeps only its SHA-256 hash"`
}

// UserList is every user, by name.
type UserList struct {
	Users []User `json:"users"`
}

// Command is a bot command.
type Command struct {
	Command             string    `json:"command" doc:"Normalised trigger, e.g. !hello" example:"!hello"`
	Channel             string    `json:"channel,omitempty" doc:"The channel whose own command this is; absent: platform-wide"`
	Response            string    `json:"response" doc:"Reply template: ${user}, ${touser}, ${args}, ${count}, ${channel}"`
	Aliases             []string  `json:"aliases" doc:"Other triggers, normalised"`
	Enabled             bool      `json:"enabled"`
	CooldownSeconds     int       `json:"cooldown_seconds" doc:"Wait between two uses in a channel, by anyone"`
	UserCooldownSeconds int       `json:"user_cooldown_seconds" doc:"Wait between two uses by the same user"`
	UserLevel           string    `json:"user_level" enum:"broadcaster,moderator,vip,subscriber,viewer" doc:"Lowest role that may trigger it"`
	Count               int64     `json:"count" doc:"Times used (the ${count} of the last reply)"`
	CreatedAt           time.Time `json:"created_at"`
	UpdatedAt           time.Time `json:"updated_at"`
}

func commandOf(c chat.Command) Command {
	aliases := c.Aliases
	if aliases == nil {
		aliases = []string{}
	}
	return Command{Command: c.Name, Channel: c.Channel, Response: c.Response, Aliases: aliases, Enabled: c.Enabled,
		CooldownSeconds: c.CooldownSeconds, UserCooldownSeconds: c.UserCooldownSeconds, UserLevel: string(c.UserLevel),
		Count: c.Count, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
}

// CommandList is every command, by trigger.
type CommandList struct {
	Commands []Command `json:"commands"`
}

// Filter is a message filter.
type Filter struct {
	ID        string `json:"id" doc:"Unique within its scope (the platform, or one channel)"`
	Channel   string `json:"channel,omitempty" doc:"The channel whose own filter this is; absent: platform-wide"`
	Kind      string `json:"kind" enum:"blocked_term,regex,links,caps"`
	Pattern   string `json:"pattern,omitempty" doc:"The blocked term or the regular expression"`
	Action    string `json:"action" enum:"block,mask,timeout,ban,hold,strike" doc:"What a match does, in the filter's scope: a channel's own filter times out or bans in that channel only"`
	MinRole   string `json:"min_role" enum:"broadcaster,moderator,vip,subscriber,viewer" doc:"Lowest role the filter does not apply to"`
	Threshold int    `json:"threshold,omitempty" doc:"caps: percent of capitals above which a message matches"`
	MinLength int    `json:"min_length,omitempty" doc:"caps: letters below which a message is never checked"`
	// TimeoutSeconds is the timeout of action timeout.
	TimeoutSeconds int       `json:"timeout_seconds,omitempty" doc:"timeout: seconds the sender is timed out"`
	CreatedAt      time.Time `json:"created_at"`
}

func filterOf(f chat.Filter) Filter {
	return Filter{ID: f.ID, Channel: f.Channel, Kind: string(f.Kind), Pattern: f.Pattern, Action: string(f.Action), MinRole: string(f.MinRole),
		Threshold: f.Threshold, MinLength: f.MinLength, TimeoutSeconds: f.TimeoutSeconds, CreatedAt: f.CreatedAt}
}

// FilterList is every filter in the order they run.
type FilterList struct {
	Filters []Filter `json:"filters"`
}

// Channel is a channel's settings and modes.
type Channel struct {
	Name                    string     `json:"name" example:"general"`
	SlowModeSeconds         int        `json:"slow_mode_seconds" doc:"Least seconds between two messages of one sender below vip; 0 is off" minimum:"0" maximum:"120"`
	FirstMessageReview      bool       `json:"first_message_review" doc:"A sender's first message in the channel is held for review"`
	MinAccountAgeSeconds    int        `json:"min_account_age_seconds" doc:"Accounts younger than this may not send (403 account_too_new, until); 0 is off"`
	UniqueChat              bool       `json:"unique_chat" doc:"The same text from the same sender within 30 s is refused (429 unique_chat)"`
	Shield                  bool       `json:"shield" doc:"Shield mode switched on by a moderator"`
	ShieldActive            bool       `json:"shield_active" doc:"Shield mode is in force now (switched on, or by the raid watch until shield_until): slow mode at least 10 s, first-message review, accounts at least an hour old"`
	ShieldUntil             *time.Time `json:"shield_until,omitempty" doc:"End of an automatic shield, unless the raid watch trips again"`
	AutoShield              bool       `json:"auto_shield" doc:"The raid watch: auto_shield_first_chatters senders never seen in the channel, or auto_shield_blocked messages refused by filters, within a minute turn shield mode on until shield_quiet_seconds after the last trip"`
	AutoShieldFirstChatters int        `json:"auto_shield_first_chatters" doc:"The raid watch's threshold of first-time chatters per minute (0: the default, 30)"`
	AutoShieldBlocked       int        `json:"auto_shield_blocked" doc:"The raid watch's threshold of messages refused by filters per minute (0: the default, 30)"`
	ShieldQuietSeconds      int        `json:"shield_quiet_seconds" doc:"How long an automatic shield lasts after the last trip (0: the default, 300); its end is a shield_mode event"`
}

func channelOf(c chat.Channel, now time.Time) Channel {
	out := Channel{Name: c.Name, SlowModeSeconds: c.SlowModeSeconds, FirstMessageReview: c.FirstMessageReview,
		MinAccountAgeSeconds: c.MinAccountAgeSeconds, UniqueChat: c.UniqueChat, Shield: c.Shield, ShieldActive: c.ShieldOn(now),
		AutoShield: c.AutoShield, AutoShieldFirstChatters: c.AutoShieldFirstChatters,
		AutoShieldBlocked: c.AutoShieldBlocked, ShieldQuietSeconds: c.ShieldQuietSeconds}
	if c.ShieldUntil != nil && c.ShieldUntil.After(now) {
		out.ShieldUntil = c.ShieldUntil
	}
	return out
}

// PermissionRow is one action of the permission table.
type PermissionRow struct {
	Action  string          `json:"action" example:"delete_messages"`
	What    string          `json:"what"`
	MinRole string          `json:"min_role" enum:"broadcaster,moderator,vip,subscriber,viewer" doc:"Lowest role allowed"`
	Target  bool            `json:"target_must_rank_below" doc:"Acting on another user also needs a strictly higher role than theirs"`
	Where   string          `json:"where" enum:"channel,channel or platform,platform" doc:"channel: checked with the role held in the channel concerned; channel or platform: on a channel's own things with the role held there, on platform-wide ones with the platform-wide role; platform: the platform-wide role only"`
	Roles   map[string]bool `json:"roles" doc:"Every role and whether it may"`
}

// Permissions is the permission table the service enforces.
type Permissions struct {
	Roles       []string        `json:"roles" doc:"Highest first"`
	Permissions []PermissionRow `json:"permissions"`
}

func permissionsOf() Permissions {
	p := Permissions{Roles: make([]string, 0, len(chat.Roles)), Permissions: make([]PermissionRow, 0, len(chat.PermissionTable))}
	for _, r := range chat.Roles {
		p.Roles = append(p.Roles, string(r))
	}
	for _, row := range chat.PermissionTable {
		roles := make(map[string]bool, len(chat.Roles))
		for _, r := range chat.Roles {
			roles[string(r)] = chat.Allowed(r, row.Action)
		}
		p.Permissions = append(p.Permissions, PermissionRow{Action: string(row.Action), What: row.What,
			MinRole: string(row.MinRole), Target: row.Target == chat.TargetBelow, Where: string(row.Where), Roles: roles})
	}
	return p
}
