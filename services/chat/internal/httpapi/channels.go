package httpapi

import (
	"net/http"

	"github.com/apistack/platform/libs/apiserver"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// ChannelInput names a channel in the path.
type ChannelInput struct {
	Channel string `path:"channel" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"Channel name, folded to lower case"`
}

// ChannelPatchBody changes channel settings; absent fields stay.
type ChannelPatchBody struct {
	SlowModeSeconds         *int  `json:"slow_mode_seconds,omitempty" minimum:"0" maximum:"120" doc:"Least seconds between two messages of one sender below vip; 0 turns slow mode off"`
	FirstMessageReview      *bool `json:"first_message_review,omitempty" doc:"Hold a sender's first message in the channel for review"`
	MinAccountAgeSeconds    *int  `json:"min_account_age_seconds,omitempty" minimum:"0" maximum:"7776000" doc:"Accounts younger than this may not send; 0 is off"`
	UniqueChat              *bool `json:"unique_chat,omitempty" doc:"Refuse the same text from the same sender within 30 s"`
	Shield                  *bool `json:"shield,omitempty" doc:"Switch shield mode on or off (announced as a shield_mode event); off also ends an automatic shield, and the raid watch counts again from the off and cannot switch it back on for a minute"`
	AutoShield              *bool `json:"auto_shield,omitempty" doc:"The raid watch: turn shield mode on by itself when first-time chatters or messages blocked by filters flood in"`
	AutoShieldFirstChatters *int  `json:"auto_shield_first_chatters,omitempty" minimum:"0" maximum:"10000" doc:"First-time chatters per minute that trip the raid watch (0: the default, 30)"`
	AutoShieldBlocked       *int  `json:"auto_shield_blocked,omitempty" minimum:"0" maximum:"10000" doc:"Messages refused by filters per minute that trip the raid watch (0: the default, 30)"`
	ShieldQuietSeconds      *int  `json:"shield_quiet_seconds,omitempty" minimum:"0" maximum:"86400" doc:"60..86400 seconds an automatic shield lasts after the last trip (0: the default, 300)"`
}

// HeldInput names a held message of a channel.
type HeldInput struct {
	Channel string `path:"channel" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"Channel name, folded to lower case"`
	ID      int64  `path:"id" minimum:"1" doc:"Review id of the held message"`
}

// UpdateChannelInput is PATCH /channels/{channel}.
type UpdateChannelInput struct {
	Channel string `path:"channel" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"Channel name, folded to lower case"`
	Body    ChannelPatchBody
}

// ChannelRoleInput names a user in a channel.
type ChannelRoleInput struct {
	Channel string `path:"channel" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"Channel name, folded to lower case"`
	UserID  string `path:"user_id" minLength:"1" maxLength:"64" doc:"User id"`
}

// ChannelRoleBody gives a role in a channel.
type ChannelRoleBody struct {
	Role string `json:"role" enum:"broadcaster,moderator,vip,subscriber" doc:"The role given in the channel. broadcaster: by the platform's administrator only; the others by the channel's broadcaster"`
}

// SetChannelRoleInput is PUT /channels/{channel}/roles/{user_id}.
type SetChannelRoleInput struct {
	Channel string `path:"channel" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"Channel name, folded to lower case"`
	UserID  string `path:"user_id" minLength:"1" maxLength:"64" doc:"User id"`
	Body    ChannelRoleBody
}

// PermissionsInput takes no parameters.
type PermissionsInput struct{}

func (a *API) registerChannels(srv *apiserver.Server[chat.User]) {
	apiserver.Register(srv, a.readOp(apiserver.Operation{
		Method: http.MethodGet, URL: Prefix + "/channels/{channel}", Tags: []string{tagChannels},
		Summary: "Channel settings", Description: "Channels exist implicitly: any valid name has default settings until changed.",
	}, nil), a.getChannel)

	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodPatch, URL: Prefix + "/channels/{channel}", Tags: []string{tagChannels},
		Summary: "Change channel settings",
		Description: "Slow mode: senders below vip wait `slow_mode_seconds` between messages (429 with `Retry-After`). " +
			"Modes, for senders below vip: `first_message_review` holds a sender's first message in the channel for review; " +
			"`min_account_age_seconds` refuses younger accounts (403 `account_too_new` with `until`); `unique_chat` refuses the " +
			"same text from the same sender within 30 s (429 `unique_chat`). Shield mode (`shield`) is a preset on top: slow mode " +
			"at least 10 s, first-message review, accounts at least an hour old. With `auto_shield`, the raid watch turns shield " +
			"mode on by itself when `auto_shield_first_chatters` (default 30) senders never seen in the channel send within a " +
			"minute, or `auto_shield_blocked` (default 30) messages are refused by filters (422) within a minute, and off again " +
			"`shield_quiet_seconds` (default 300) after the last trip; each switch, the automatic off included, is a `shield_mode` " +
			"event on the socket. A moderator's `shield: false` wins: the raid watch counts again from it and cannot switch shield " +
			"mode back on within a minute, only after, if the threshold is reached again by what came after the off.",
	}, chat.ActionManageChannel, map[int]string{http.StatusConflict: "A new channel past `CHAT_MAX_CHANNELS` (`reason: limit`, `limit`)"}), a.updateChannel)

	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodGet, URL: Prefix + "/channels/{channel}/roles", Tags: []string{tagChannels},
		Summary: "Roles given in a channel",
		Description: "Every user given a role in the channel, highest role first, then by name. A user's role in a channel is the " +
			"higher of the platform-wide role and the role given there. For the channel's moderators (and platform-wide ones).",
	}, chat.ActionListUsers, nil), a.listChannelRoles)

	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodPut, URL: Prefix + "/channels/{channel}/roles/{user_id}", Tags: []string{tagChannels},
		Summary: "Give a role in a channel",
		Description: "The platform's administrator (a platform-wide broadcaster, `CHAT_ADMIN_TOKEN`) names the channel's broadcaster " +
			"(`name_channel_broadcaster`); the channel's broadcaster names its moderators, VIPs and subscribers (`change_roles` with the " +
			"roles held in the channel: the target's and the new role below the actor's). The role holds in that channel only, from the " +
			"next request or WebSocket frame. At most `CHAT_MAX_CHANNEL_ROLES` users (default 1000) hold a role in one channel.",
	}, chat.ActionChangeRoles, map[int]string{http.StatusNotFound: "No such user", http.StatusConflict: "The user's role there changed meanwhile; or `CHAT_MAX_CHANNEL_ROLES` roles are given there (`reason: limit`, `limit`)"}), a.setChannelRole)

	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodDelete, URL: Prefix + "/channels/{channel}/roles/{user_id}", Tags: []string{tagChannels},
		Summary:     "Take a role in a channel back",
		Description: "Back to viewer there (the platform-wide role still holds). Who may: as for giving that role. Taking back a role nobody gave succeeds.",
	}, chat.ActionChangeRoles, map[int]string{http.StatusNotFound: "No such user", http.StatusConflict: "The user's role there changed meanwhile"}), a.deleteChannelRole)
	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodGet, URL: Prefix + "/channels/{channel}/held", Tags: []string{tagChannels, tagModeration},
		Summary:     "The review queue",
		Description: "Messages held by a `hold` filter, first-message review or shield mode, oldest first. At most 200 per channel; each is dropped an hour after it was sent.",
	}, chat.ActionReviewHeld, nil), a.listHeld)

	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodPost, URL: Prefix + "/channels/{channel}/held/{id}/approve", Tags: []string{tagChannels, tagModeration}, Status: http.StatusCreated,
		Summary:     "Approve a held message",
		Description: "Stores the message with the text its sender wrote and delivers it now; it leaves the queue. Approved twice at once, it is stored once (409 for the second).",
	}, chat.ActionReviewHeld, map[int]string{http.StatusNotFound: "No such held message (reviewed or expired)", http.StatusConflict: "Approved meanwhile"}), a.approveHeld)

	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodDelete, URL: Prefix + "/channels/{channel}/held/{id}", Tags: []string{tagChannels, tagModeration},
		Summary:     "Deny a held message",
		Description: "Drops it: nobody else ever sees it.",
	}, chat.ActionReviewHeld, map[int]string{http.StatusNotFound: "No such held message (reviewed or expired)"}), a.denyHeld)
}

func (a *API) listChannelRoles(c *apiserver.Context[chat.User], in *ChannelInput) (ChannelRoles, error) {
	actor, err := Actor(c)
	if err != nil {
		return ChannelRoles{}, err
	}
	rs, err := a.svc.ChannelRoles(c.Request.Context(), actor, in.Channel)
	if err != nil {
		return ChannelRoles{}, StatusError(renameField(err, "channel", "params.channel"), inParams)
	}
	out := ChannelRoles{Roles: make([]ChannelRole, 0, len(rs))}
	for _, r := range rs {
		out.Roles = append(out.Roles, ChannelRole{UserID: r.UserID, Name: r.Name, Role: string(r.Role)})
	}
	return out, nil
}

func (a *API) setChannelRole(c *apiserver.Context[chat.User], in *SetChannelRoleInput) (User, error) {
	actor, err := Actor(c)
	if err != nil {
		return User{}, err
	}
	m, err := a.svc.SetChannelRole(c.Request.Context(), actor, in.Channel, in.UserID, chat.Role(in.Body.Role))
	if err != nil {
		return User{}, StatusError(renameField(err, "channel", "params.channel"), inBody)
	}
	return memberOf(m), nil
}

func (a *API) deleteChannelRole(c *apiserver.Context[chat.User], in *ChannelRoleInput) (apiserver.NoBody, error) {
	actor, err := Actor(c)
	if err != nil {
		return apiserver.NoBody{}, err
	}
	if _, err := a.svc.SetChannelRole(c.Request.Context(), actor, in.Channel, in.UserID, chat.RoleViewer); err != nil {
		return apiserver.NoBody{}, StatusError(renameField(err, "channel", "params.channel"), inParams)
	}
	return apiserver.NoBody{}, nil
}

func (a *API) listHeld(c *apiserver.Context[chat.User], in *ChannelInput) (HeldList, error) {
	actor, err := Actor(c)
	if err != nil {
		return HeldList{}, err
	}
	hs, err := a.svc.HeldMessages(c.Request.Context(), actor, in.Channel)
	if err != nil {
		return HeldList{}, StatusError(renameField(err, "channel", "params.channel"), inParams)
	}
	out := HeldList{Held: make([]HeldMessage, 0, len(hs))}
	for _, h := range hs {
		out.Held = append(out.Held, heldOf(h))
	}
	return out, nil
}

func (a *API) approveHeld(c *apiserver.Context[chat.User], in *HeldInput) (Message, error) {
	actor, err := Actor(c)
	if err != nil {
		return Message{}, err
	}
	m, err := a.svc.ApproveHeld(c.Request.Context(), actor, in.Channel, in.ID)
	if err != nil {
		return Message{}, StatusError(renameField(err, "channel", "params.channel"), inParams)
	}
	return messageOf(m), nil
}

func (a *API) denyHeld(c *apiserver.Context[chat.User], in *HeldInput) (apiserver.NoBody, error) {
	actor, err := Actor(c)
	if err != nil {
		return apiserver.NoBody{}, err
	}
	if err := a.svc.DenyHeld(c.Request.Context(), actor, in.Channel, in.ID); err != nil {
		return apiserver.NoBody{}, StatusError(renameField(err, "channel", "params.channel"), inParams)
	}
	return apiserver.NoBody{}, nil
}

func (a *API) registerPermissions(srv *apiserver.Server[chat.User]) {
	perms := permissionsOf()
	apiserver.Register(srv, apiserver.Operation{
		Method: http.MethodGet, URL: Prefix + "/permissions", Tags: []string{tagPermissions},
		Summary:     "The permission table",
		Description: "The table every check of the service goes through, as JSON; the same table is rendered in this document's description. Public.",
	}, func(*apiserver.Context[chat.User], *PermissionsInput) (Permissions, error) { return perms, nil })
}

func (a *API) getChannel(c *apiserver.Context[chat.User], in *ChannelInput) (Channel, error) {
	actor, err := reader(c)
	if err != nil {
		return Channel{}, err
	}
	ch, err := a.svc.Channel(c.Request.Context(), actor, in.Channel)
	if err != nil {
		return Channel{}, StatusError(renameField(err, "channel", "params.channel"), inParams)
	}
	return channelOf(ch, a.svc.Now()), nil
}

func (a *API) updateChannel(c *apiserver.Context[chat.User], in *UpdateChannelInput) (Channel, error) {
	actor, err := Actor(c)
	if err != nil {
		return Channel{}, err
	}
	b := in.Body
	ch, err := a.svc.UpdateChannel(c.Request.Context(), actor, in.Channel, chat.ChannelPatch{SlowModeSeconds: b.SlowModeSeconds,
		FirstMessageReview: b.FirstMessageReview, MinAccountAgeSeconds: b.MinAccountAgeSeconds, UniqueChat: b.UniqueChat,
		Shield: b.Shield, AutoShield: b.AutoShield, AutoShieldFirstChatters: b.AutoShieldFirstChatters,
		AutoShieldBlocked: b.AutoShieldBlocked, ShieldQuietSeconds: b.ShieldQuietSeconds})
	if err != nil {
		return Channel{}, StatusError(renameField(err, "channel", "params.channel"), inBody)
	}
	return channelOf(ch, a.svc.Now()), nil
}
