package chat

import (
	"fmt"
	"strings"
)

// Action is something a role may or may not do.
type Action string

// Actions of the permission table.
const (
	ActionReadMessages    Action = "read_messages"
	ActionSendMessages    Action = "send_messages"
	ActionBypassSlowMode  Action = "bypass_slow_mode"
	ActionPostLinks       Action = "post_links"
	ActionBypassFilters   Action = "bypass_filters"
	ActionBypassCooldowns Action = "bypass_command_cooldowns"
	ActionManageCommands  Action = "manage_commands"
	ActionManageFilters   Action = "manage_filters"
	ActionManageChannel   Action = "manage_channel"
	ActionDeleteMessages  Action = "delete_messages"
	ActionTimeoutUsers    Action = "timeout_users"
	ActionBanUsers        Action = "ban_users"
	ActionListUsers       Action = "list_users"
	ActionManageUsers     Action = "manage_users"
	ActionChangeRoles     Action = "change_roles"
	ActionNameBroadcaster Action = "name_channel_broadcaster"
	ActionBypassChatModes Action = "bypass_chat_modes"
	ActionReviewHeld      Action = "review_held_messages"
	ActionReadModLog      Action = "read_moderation_log"
	ActionPurgeMessages   Action = "purge_messages"
)

// Target says whether an action on another user also needs the actor to
// outrank that user.
type Target string

// Target rules.
const (
	TargetNone  Target = ""
	TargetBelow Target = "target must have a lower role than the actor"
)

// Where says in which roles an action is checked.
type Where string

// Where an action is checked.
const (
	// InChannel: with the role held in the channel it is about (the higher
	// of the platform-wide role and the role given there).
	InChannel Where = "channel"
	// InChannelOrPlatform: with a channel, as InChannel, on that channel's
	// own things; without one, on the platform-wide things, with the
	// platform-wide role.
	InChannelOrPlatform Where = "channel or platform"
	// OnPlatform: with the platform-wide role only.
	OnPlatform Where = "platform"
)

// Permission is one row of the permission table.
type Permission struct {
	Action  Action
	MinRole Role
	Target  Target
	Where   Where
	// What is the human description shown in the README and /docs.
	What string
}

// PermissionTable is the single source of truth for who may do what. Every
// check in Service goes through Allowed, and PermissionsMarkdown renders this
// same table for the documentation, so the two cannot drift apart.
var PermissionTable = []Permission{
	{ActionReadMessages, RoleViewer, TargetNone, InChannel, "Read messages, channels and commands (also anonymous while CHAT_PUBLIC_READ=true)"},
	{ActionSendMessages, RoleViewer, TargetNone, InChannel, "Send messages (not while banned or timed out)"},
	{ActionBypassSlowMode, RoleVIP, TargetNone, InChannel, "Send without waiting for slow mode"},
	{ActionPostLinks, RoleVIP, TargetNone, InChannel, "Post links: the default `min_role` of a `links` filter"},
	{ActionBypassFilters, RoleModerator, TargetNone, InChannel, "Not checked by filters: the default `min_role` of `blocked_term`, `regex` and `caps` filters"},
	{ActionBypassCooldowns, RoleModerator, TargetNone, InChannel, "Trigger bot commands during their cooldowns"},
	{ActionManageCommands, RoleModerator, TargetNone, InChannelOrPlatform, "Create, change and delete bot commands"},
	{ActionManageFilters, RoleModerator, TargetNone, InChannelOrPlatform, "List, create and delete filters"},
	{ActionBypassChatModes, RoleVIP, TargetNone, InChannel, "Not checked by channel modes: first-message review, minimum account age, unique chat, shield mode; not counted by the raid watch"},
	{ActionManageChannel, RoleModerator, TargetNone, InChannel, "Change channel settings: slow mode, the modes, shield mode on or off"},
	{ActionReviewHeld, RoleModerator, TargetNone, InChannel, "List the review queue, approve and deny held messages"},
	{ActionDeleteMessages, RoleModerator, TargetBelow, InChannel, "Delete messages (tombstone); own messages and bot replies too"},
	{ActionReadModLog, RoleModerator, TargetNone, InChannel, "Read the channel's moderation log (`/channels/{channel}/modlog`) and a user's recent messages there (`/channels/{channel}/users/{id}/messages`)"},
	{ActionPurgeMessages, RoleModerator, TargetBelow, InChannel, "Purge a user's recent messages in the channel (`/channels/{channel}/users/{id}/purge`)"},
	{ActionTimeoutUsers, RoleModerator, TargetBelow, InChannelOrPlatform, "Time users out (1 s to 14 days)"},
	{ActionBanUsers, RoleModerator, TargetBelow, InChannelOrPlatform, "Ban and unban users"},
	{ActionListUsers, RoleModerator, TargetNone, InChannelOrPlatform, "List users and read any user"},
	{ActionManageUsers, RoleBroadcaster, TargetBelow, OnPlatform, "Create and delete users"},
	{ActionChangeRoles, RoleBroadcaster, TargetBelow, InChannelOrPlatform, "Change a user's role: platform-wide (never to or from broadcaster), or in a channel (`PUT /channels/{channel}/roles/{user_id}`: moderator, vip, subscriber)"},
	{ActionNameBroadcaster, RoleBroadcaster, TargetNone, OnPlatform, "Name or remove a channel's broadcaster (the platform's administrator, `CHAT_ADMIN_TOKEN`)"},
}

// permissionIndex is built once from PermissionTable.
var permissionIndex = func() map[Action]Permission {
	m := make(map[Action]Permission, len(PermissionTable))
	for _, p := range PermissionTable {
		m[p.Action] = p
	}
	return m
}()

// MinRoleFor returns the lowest role allowed to perform a.
func MinRoleFor(a Action) Role {
	p, ok := permissionIndex[a]
	if !ok {
		// An action missing from the table is a programming error; deny by
		// asking for a role nobody has.
		return Role("")
	}
	return p.MinRole
}

// Allowed reports whether role may perform a, ignoring any target.
func Allowed(role Role, a Action) bool {
	min := MinRoleFor(a)
	return min.Valid() && role.AtLeast(min)
}

// AllowedOn reports whether actor may perform a on a user holding target.
// Nobody outranks the broadcaster, so nobody moderates one; two moderators
// are equal, so neither moderates the other.
func AllowedOn(actor Role, a Action, target Role) bool {
	if !Allowed(actor, a) {
		return false
	}
	if permissionIndex[a].Target == TargetBelow {
		return actor.Above(target)
	}
	return true
}

// PermissionsMarkdown renders PermissionTable as a Markdown table for the
// README and the OpenAPI description.
func PermissionsMarkdown() string {
	var b strings.Builder
	b.WriteString("| Action | What | Where | ")
	for i, r := range Roles {
		if i > 0 {
			b.WriteString(" | ")
		}
		b.WriteString(string(r))
	}
	b.WriteString(" |\n|---|---|---|")
	for range Roles {
		b.WriteString(":-:|")
	}
	b.WriteString("\n")
	for _, p := range PermissionTable {
		what := p.What
		if p.Target == TargetBelow {
			what += "; the " + string(p.Target)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |", p.Action, what, p.Where)
		for _, r := range Roles {
			mark := " "
			if r.AtLeast(p.MinRole) {
				mark = "yes"
			}
			fmt.Fprintf(&b, " %s |", mark)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nRoles, highest first: broadcaster > moderator > vip > subscriber > viewer. ")
	b.WriteString("Actions on another user need a strictly higher role: nobody moderates the broadcaster, ")
	b.WriteString("and a moderator cannot act on another moderator. A command's `user_level` is the lowest role that may trigger it.\n\n")
	b.WriteString("Where: `channel` actions are checked with the role the user holds in that channel, the higher of the platform-wide role ")
	b.WriteString("and the role given there (`PUT /channels/{channel}/roles/{user_id}`); `channel or platform` ones act on a channel's own ")
	b.WriteString("roles, bans, timeouts, commands and filters when the request names a `channel` (role held there), and on the platform-wide ")
	b.WriteString("ones otherwise (platform-wide role); `platform` ones need the platform-wide role.\n")
	return b.String()
}
