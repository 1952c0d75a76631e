package webhooks

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"strings"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// Type names an event a webhook subscribes to.
type Type string

// The event types, each documented in the README's table with its JSON
// and in /openapi.json's webhooks.
const (
	MessageCreated Type = "message.created"
	MessageDeleted Type = "message.deleted"
	UserTimedOut   Type = "user.timed_out"
	UserBanned     Type = "user.banned"
	UserUnbanned   Type = "user.unbanned"
	ShieldChanged  Type = "shield.changed"
	HeldCreated    Type = "held.created"
	HeldApproved   Type = "held.approved"
	HeldDenied     Type = "held.denied"
	RoleChanged    Type = "role.changed"
)

// Types lists every event type, in the README's order.
var Types = []Type{MessageCreated, MessageDeleted, UserTimedOut, UserBanned, UserUnbanned, ShieldChanged,
	HeldCreated, HeldApproved, HeldDenied, RoleChanged}

// Valid reports whether t is a known type.
func (t Type) Valid() bool {
	for _, k := range Types {
		if k == t {
			return true
		}
	}
	return false
}

// User is a user as an event shows it, with its role in the channel.
type User struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Role string `json:"role" doc:"The user's role in the channel"`
}

// MessageData is a message.created or message.deleted event's data.
type MessageData struct {
	ID        int64      `json:"id" doc:"The message id, increasing within the channel"`
	Channel   string     `json:"channel"`
	User      User       `json:"user"`
	Text      string     `json:"text" doc:"Empty for message.deleted"`
	CreatedAt time.Time  `json:"created_at"`
	Bot       bool       `json:"bot" doc:"A command reply"`
	Deleted   bool       `json:"deleted,omitempty"`
	DeletedAt *time.Time `json:"deleted_at,omitempty"`
}

// MessageEvent is the body of message.created and message.deleted.
type MessageEvent struct {
	Type      string      `json:"type" enum:"message.created,message.deleted"`
	Timestamp time.Time   `json:"timestamp" doc:"When it happened, RFC 3339, UTC"`
	Channel   string      `json:"channel"`
	Data      MessageData `json:"data"`
}

// ModerationData is the data of every other event: the channel's
// moderation log entry it comes from.
type ModerationData struct {
	LogID     string     `json:"log_id" doc:"The moderation log entry's id (GET /channels/{channel}/modlog)"`
	Action    string     `json:"action" doc:"The moderation log's action: timeout, ban, unban, shield_on, shield_off, filter_hit (held.created by a hold filter), held (held.created otherwise), held_approve, held_deny, role_set, role_remove"`
	Actor     User       `json:"actor" doc:"The moderator, or automod"`
	Rule      string     `json:"rule,omitempty" doc:"When the actor is automod: the filter id, or raid_watch"`
	Target    *User      `json:"target,omitempty" doc:"The user acted on (none for shield.changed)"`
	Reason    string     `json:"reason,omitempty"`
	Until     *time.Time `json:"until,omitempty" doc:"user.timed_out: when it ends; shield.changed: when an automatic shield ends"`
	MessageID int64      `json:"message_id,omitempty" doc:"held.approved: the message stored"`
	HeldID    int64      `json:"held_id,omitempty" doc:"held.*: the held message"`
	Role      string     `json:"role,omitempty" doc:"role.changed: the role given (role_set) or taken back (role_remove)"`
	Shield    *bool      `json:"shield,omitempty" doc:"shield.changed: whether shield mode is now on"`
}

// ModerationEvent is the body of every event but message.*.
type ModerationEvent struct {
	Type      string         `json:"type" enum:"user.timed_out,user.banned,user.unbanned,shield.changed,held.created,held.approved,held.denied,role.changed"`
	Timestamp time.Time      `json:"timestamp" doc:"When it happened, RFC 3339, UTC"`
	Channel   string         `json:"channel"`
	Data      ModerationData `json:"data"`
}

// Event is one derived event, ready to be delivered: ID is its
// webhook-id, the same for every endpoint and every attempt, derived from
// where it sits in the channel's logs, so an event enqueued twice (a pump
// that died before moving its cursor) is the same id twice.
type Event struct {
	ID      string
	Type    Type
	Channel string
	At      time.Time
	Body    []byte
}

func userOf(r chat.UserRef) User { return User{ID: r.ID, Name: r.Name, Role: string(r.Role)} }

// eventID names an event by its place: the channel, which log and the
// entry's position there.
func eventID(channel, log, pos string) string {
	h := sha256.Sum256([]byte(channel + "\x00" + log + "\x00" + pos))
	return "msg_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(h[:16]))
}

// FromLogEvent derives the webhook event of a channel event log entry:
// messages and their deletion (the moderation log has the rest). ok is
// false for the entries that are not webhook events.
func FromLogEvent(e chat.Event) (Event, bool) {
	var t Type
	switch e.Type {
	case chat.EventMessage:
		t = MessageCreated
	case chat.EventMessageDeleted:
		t = MessageDeleted
	default:
		return Event{}, false
	}
	if e.Message == nil {
		return Event{}, false
	}
	m := e.Message
	at := m.CreatedAt
	if m.DeletedAt != nil {
		at = *m.DeletedAt
	}
	body := MessageEvent{Type: string(t), Timestamp: at.UTC(), Channel: e.Channel, Data: MessageData{
		ID: m.ID, Channel: m.Channel, User: userOf(m.User), Text: m.Text, CreatedAt: m.CreatedAt.UTC(), Bot: m.Bot,
		Deleted: m.Deleted, DeletedAt: m.DeletedAt}}
	b, err := json.Marshal(body)
	if err != nil {
		return Event{}, false
	}
	return Event{ID: eventID(e.Channel, "events", string(t)+"/"+e.Cursor.String()), Type: t, Channel: e.Channel, At: at, Body: b}, true
}

// ModWebhookDisabled is the moderation log's entry of a webhook disabled
// after failing for DisableAfter.
const ModWebhookDisabled chat.ModAction = "webhook_disabled"

// modType maps a moderation log entry to its event type.
func modType(e chat.ModEntry) (Type, bool) {
	switch e.Action {
	case chat.ModTimeout:
		return UserTimedOut, true
	case chat.ModBan:
		return UserBanned, true
	case chat.ModUnban:
		return UserUnbanned, true
	case chat.ModShieldOn, chat.ModShieldOff:
		return ShieldChanged, true
	case chat.ModHeldApprove:
		return HeldApproved, true
	case chat.ModHeldDeny:
		return HeldDenied, true
	case chat.ModRoleSet, chat.ModRoleRemove:
		return RoleChanged, true
	case chat.ModHeld:
		return HeldCreated, true
	case chat.ModFilterHit:
		if e.FilterAction == chat.ActionHold && e.HeldID != 0 {
			return HeldCreated, true
		}
	}
	return "", false
}

// FromModEntry derives the webhook event of a moderation log entry.
func FromModEntry(e chat.ModEntry) (Event, bool) {
	t, ok := modType(e)
	if !ok {
		return Event{}, false
	}
	d := ModerationData{LogID: e.ID, Action: string(e.Action), Actor: userOf(e.Actor), Rule: e.Rule, Reason: e.Reason,
		Until: e.Until, MessageID: e.MessageID, HeldID: e.HeldID, Role: string(e.Role)}
	if e.Target != nil {
		u := userOf(*e.Target)
		d.Target = &u
	}
	if t == ShieldChanged {
		on := e.Action == chat.ModShieldOn
		d.Shield = &on
	}
	b, err := json.Marshal(ModerationEvent{Type: string(t), Timestamp: e.At.UTC(), Channel: e.Channel, Data: d})
	if err != nil {
		return Event{}, false
	}
	return Event{ID: eventID(e.Channel, "modlog", e.ID), Type: t, Channel: e.Channel, At: e.At, Body: b}, true
}
