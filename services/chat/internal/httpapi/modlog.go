package httpapi

import (
	"net/http"
	"time"

	"github.com/apistack/platform/libs/apiserver"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// ModLogInput is GET /channels/{channel}/modlog.
type ModLogInput struct {
	Channel string `path:"channel" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"Channel name, folded to lower case"`
	Limit   int    `query:"limit" minimum:"1" maximum:"200" default:"50" doc:"How many entries, 1..200"`
	Before  string `query:"before" pattern:"^[0-9]{1,20}-[0-9]{1,20}$" doc:"A page's next: the entries older than it"`
}

// ModEntry is one entry of a channel's moderation log.
type ModEntry struct {
	ID      string    `json:"id" doc:"The entry's place in the log; the next page starts below it" example:"1767323045000-0"`
	Channel string    `json:"channel" example:"general"`
	At      time.Time `json:"at" doc:"When it happened, RFC 3339, UTC"`
	Action  string    `json:"action" enum:"filter_hit,shield_on,shield_off,timeout,ban,unban,delete_message,held_approve,held_deny,role_set,role_remove,purge,held,webhook_disabled"`
	Actor   UserRef   `json:"actor" doc:"The moderator, with its role in the channel; automod for a filter or the raid watch"`
	Rule    string    `json:"rule,omitempty" doc:"When the actor is automod: the filter id, or raid_watch"`
	Target  *UserRef  `json:"target,omitempty" doc:"The user acted on (none for shield switches)"`
	Reason  string    `json:"reason,omitempty"`
	// Details of some actions.
	MessageID    int64      `json:"message_id,omitempty" doc:"delete_message: the message; held_approve: the message stored"`
	HeldID       int64      `json:"held_id,omitempty" doc:"The held message (held_approve, held_deny, a hold filter's hit)"`
	FilterAction string     `json:"filter_action,omitempty" doc:"filter_hit: the filter's action (block, timeout, ban, strike, hold)"`
	Penalty      string     `json:"penalty,omitempty" doc:"filter_hit: what it did to the sender (warn, timeout, ban; none for block and hold)"`
	Until        *time.Time `json:"until,omitempty" doc:"End of a timeout, or of an automatic shield unless it trips again"`
	Role         string     `json:"role,omitempty" doc:"role_set: the role given; role_remove: the role taken back (broadcaster, moderator, vip, subscriber)"`
	Count        int        `json:"count,omitempty" doc:"purge: how many messages were deleted"`
}

// ModLogPage is one page of a moderation log, newest first.
type ModLogPage struct {
	Entries []ModEntry `json:"entries"`
	Next    string     `json:"next,omitempty" doc:"Pass as before for the next (older) page; absent on the last"`
}

func refOf(r *chat.UserRef) *UserRef {
	if r == nil {
		return nil
	}
	return &UserRef{ID: r.ID, Name: r.Name, Role: string(r.Role)}
}

func modEntryOf(e chat.ModEntry) ModEntry {
	return ModEntry{ID: e.ID, Channel: e.Channel, At: e.At, Action: string(e.Action), Actor: *refOf(&e.Actor), Rule: e.Rule,
		Target: refOf(e.Target), Reason: e.Reason, MessageID: e.MessageID, HeldID: e.HeldID, FilterAction: string(e.FilterAction),
		Penalty: string(e.Penalty), Until: e.Until, Role: string(e.Role), Count: e.Count}
}

// UserMessagesInput is GET /channels/{channel}/users/{id}/messages.
type UserMessagesInput struct {
	Channel string `path:"channel" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"Channel name, folded to lower case"`
	ID      string `path:"id" minLength:"1" maxLength:"64" doc:"User id"`
	Limit   int    `query:"limit" minimum:"1" maximum:"100" default:"50" doc:"How many messages, 1..100"`
}

// UserMessages is a user's recent messages in a channel, newest first.
type UserMessages struct {
	Messages []Message `json:"messages"`
}

// PurgeBody is the optional body of a purge.
type PurgeBody struct {
	Reason string `json:"reason,omitempty" maxLength:"500" doc:"Kept in the moderation log: no control character but newline, no bidirectional control (400)"`
}

// PurgeInput is POST /channels/{channel}/users/{id}/purge; the body is optional.
type PurgeInput struct {
	Channel string `path:"channel" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"Channel name, folded to lower case"`
	ID      string `path:"id" minLength:"1" maxLength:"64" doc:"User id"`
	Body    *PurgeBody
}

// PurgeResult says how many messages a purge deleted.
type PurgeResult struct {
	Deleted int `json:"deleted" doc:"Messages replaced by their tombstones now"`
}

func (a *API) registerModLog(srv *apiserver.Server[chat.User]) {
	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodGet, URL: Prefix + "/channels/{channel}/modlog", Tags: []string{tagChannels, tagModeration},
		Summary: "The moderation log",
		Description: "Every moderation action in the channel, newest first: filter hits that refuse or hold a message (actor automod, " +
			"`rule` the filter id), shield mode on and off (by hand, or by the raid watch: `rule` raid_watch), timeouts, bans and " +
			"unbans held in the channel or announced there (platform-wide ones in general), deleted messages (not one's own), " +
			"approved and denied held messages, roles given and taken back in the channel, purges. Kept 7 days and at most the " +
			"newest 10000 entries per channel. `next` pages to older entries.",
	}, chat.ActionReadModLog, nil), a.modLog)

	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodGet, URL: Prefix + "/channels/{channel}/users/{id}/messages", Tags: []string{tagChannels, tagModeration},
		Summary: "A user's recent messages in a channel",
		Description: "Newest first, tombstones left out: up to `limit` among the channel's last 1000 messages (fewer when " +
			"`CHAT_HISTORY` keeps fewer).",
	}, chat.ActionReadModLog, nil), a.userMessages)

	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodPost, URL: Prefix + "/channels/{channel}/users/{id}/purge", Tags: []string{tagChannels, tagModeration},
		Summary: "Purge a user's recent messages in a channel",
		Description: "Deletes the user's messages among the channel's last 1000 (at most 100 per call), each as `DELETE /messages/{id}` " +
			"does: replaced by its tombstone and delivered as a `message_deleted` event. Answers how many; one `purge` entry " +
			"in the moderation log. The target must have a lower role in the channel than the actor.",
	}, chat.ActionPurgeMessages, map[int]string{http.StatusNotFound: "No such user"}), a.purge)
}

func (a *API) modLog(c *apiserver.Context[chat.User], in *ModLogInput) (ModLogPage, error) {
	actor, err := Actor(c)
	if err != nil {
		return ModLogPage{}, err
	}
	p, err := a.svc.ModLog(c.Request.Context(), actor, in.Channel, in.Limit, in.Before)
	if err != nil {
		return ModLogPage{}, StatusError(renameField(err, "channel", "params.channel"), inQuery)
	}
	out := ModLogPage{Entries: make([]ModEntry, 0, len(p.Entries)), Next: p.Next}
	for _, e := range p.Entries {
		out.Entries = append(out.Entries, modEntryOf(e))
	}
	return out, nil
}

func (a *API) userMessages(c *apiserver.Context[chat.User], in *UserMessagesInput) (UserMessages, error) {
	actor, err := Actor(c)
	if err != nil {
		return UserMessages{}, err
	}
	ms, err := a.svc.UserMessages(c.Request.Context(), actor, in.Channel, in.ID, in.Limit)
	if err != nil {
		return UserMessages{}, StatusError(renameField(err, "channel", "params.channel"), inQuery)
	}
	return UserMessages{Messages: messagesOf(ms)}, nil
}

func (a *API) purge(c *apiserver.Context[chat.User], in *PurgeInput) (PurgeResult, error) {
	actor, err := Actor(c)
	if err != nil {
		return PurgeResult{}, err
	}
	var b chat.PurgeInput
	if in.Body != nil {
		b.Reason = in.Body.Reason
	}
	r, err := a.svc.Purge(c.Request.Context(), actor, in.Channel, in.ID, b)
	if err != nil {
		return PurgeResult{}, StatusError(renameField(err, "channel", "params.channel"), inBody)
	}
	return PurgeResult{Deleted: r.Deleted}, nil
}
