package httpapi

import (
	"net/http"

	"github.com/apistack/platform/libs/apiserver"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// CreateCommandBody is a new bot command.
type CreateCommandBody struct {
	Command             string   `json:"command" minLength:"1" maxLength:"33" doc:"Trigger, normalised: hello, !Hello and !hello are all !hello (a-z, 0-9, '_', '-'; at most 32)" example:"!hello"`
	Response            string   `json:"response" minLength:"1" maxLength:"500" doc:"Reply template. Variables: ${user} (sender), ${touser} (first argument without @, else the sender), ${args}, ${count} (times used), ${channel}" example:"Hello ${touser}! (${count})"`
	CooldownSeconds     *int     `json:"cooldown_seconds,omitempty" minimum:"0" maximum:"86400" default:"5" doc:"Wait between two uses in a channel, by anyone"`
	UserCooldownSeconds *int     `json:"user_cooldown_seconds,omitempty" minimum:"0" maximum:"86400" default:"0" doc:"Wait between two uses by the same user"`
	UserLevel           string   `json:"user_level,omitempty" enum:"broadcaster,moderator,vip,subscriber,viewer" default:"viewer" doc:"Lowest role that may trigger the command"`
	Aliases             []string `json:"aliases,omitempty" maxItems:"10" doc:"Other triggers (normalised like command)"`
	Enabled             *bool    `json:"enabled,omitempty" default:"true"`
	Channel             string   `json:"channel,omitempty" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"Make it that channel's own command (managed by its moderators; it wins there over a platform-wide command with the same trigger). Absent: platform-wide (a platform-wide moderator)"`
}

// CreateCommandInput is POST /commands.
type CreateCommandInput struct {
	Body CreateCommandBody
}

// CommandPatchBody changes a command; absent fields stay.
type CommandPatchBody struct {
	Response            *string   `json:"response,omitempty" minLength:"1" maxLength:"500"`
	CooldownSeconds     *int      `json:"cooldown_seconds,omitempty" minimum:"0" maximum:"86400"`
	UserCooldownSeconds *int      `json:"user_cooldown_seconds,omitempty" minimum:"0" maximum:"86400"`
	UserLevel           *string   `json:"user_level,omitempty" enum:"broadcaster,moderator,vip,subscriber,viewer"`
	Aliases             *[]string `json:"aliases,omitempty" maxItems:"10" doc:"Replaces the aliases"`
	Enabled             *bool     `json:"enabled,omitempty"`
}

// CommandNameInput names a command in the path.
type CommandNameInput struct {
	Name    string `path:"name" minLength:"1" maxLength:"33" doc:"Trigger or alias, with or without the leading ! (URL-encode it as %21)"`
	Channel string `query:"channel" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"The channel whose own command this is; absent: the platform-wide command"`
}

// GetCommandInput names a command as a channel resolves it.
type GetCommandInput struct {
	Name    string `path:"name" minLength:"1" maxLength:"33" doc:"Trigger or alias, with or without the leading ! (URL-encode it as %21)"`
	Channel string `query:"channel" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"The command that answers in this channel: its own, else the platform-wide one. Absent: the platform-wide command"`
}

// UpdateCommandInput is PATCH /commands/{name}.
type UpdateCommandInput struct {
	Name    string `path:"name" minLength:"1" maxLength:"33" doc:"Trigger or alias, with or without the leading !"`
	Channel string `query:"channel" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"The channel whose own command this is; absent: the platform-wide command"`
	Body    CommandPatchBody
}

// ListCommandsInput names the channel whose commands to list.
type ListCommandsInput struct {
	Channel string `query:"channel" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"The commands that answer in this channel: its own, and the platform-wide ones none of its own shadows. Absent: the platform-wide commands"`
}

func (a *API) registerCommands(srv *apiserver.Server[chat.User]) {
	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodPost, URL: Prefix + "/commands", Tags: []string{tagCommands}, Status: http.StatusCreated,
		Summary: "Create a bot command",
		Description: "A message whose first word is the trigger (or an alias) makes the bot reply with `response`, variables " +
			"filled, if the command is enabled, the sender reaches `user_level` and no cooldown runs (moderators skip " +
			"cooldowns). Otherwise the bot stays silent. With `channel` the command is that channel's own, managed by its moderators, " +
			"and wins there over a platform-wide command with the same trigger; without, it is platform-wide and needs a platform-wide role. " +
			"At most `CHAT_MAX_COMMANDS` commands (default 500) platform-wide, and as many in each channel.",
	}, chat.ActionManageCommands, map[int]string{http.StatusConflict: "The trigger or an alias is already a command's trigger or alias (`reason: command`), or `CHAT_MAX_COMMANDS` commands exist (`reason: limit`, `limit`)"}), a.createCommand)

	apiserver.Register(srv, a.readOp(apiserver.Operation{
		Method: http.MethodGet, URL: Prefix + "/commands", Tags: []string{tagCommands},
		Summary: "List bot commands", Description: "Sorted by trigger: the platform-wide ones, or with `channel` the ones that answer there.",
	}, nil), a.listCommands)

	apiserver.Register(srv, a.readOp(apiserver.Operation{
		Method: http.MethodGet, URL: Prefix + "/commands/{name}", Tags: []string{tagCommands},
		Summary: "Get a bot command", Description: "By trigger or alias; with `channel`, the one that answers there.",
	}, map[int]string{http.StatusNotFound: "No such command"}), a.getCommand)

	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodPatch, URL: Prefix + "/commands/{name}", Tags: []string{tagCommands},
		Summary: "Change a bot command", Description: "Only the fields sent change. With `channel`, that channel's own command (its moderators).",
	}, chat.ActionManageCommands, map[int]string{http.StatusNotFound: "No such command", http.StatusConflict: "A new alias is another command's trigger or alias"}), a.updateCommand)

	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodDelete, URL: Prefix + "/commands/{name}", Tags: []string{tagCommands},
		Summary: "Delete a bot command", Description: "With its aliases. With `channel`, that channel's own command (its moderators).",
	}, chat.ActionManageCommands, map[int]string{http.StatusNotFound: "No such command"}), a.deleteCommand)
}

func (a *API) createCommand(c *apiserver.Context[chat.User], in *CreateCommandInput) (Command, error) {
	actor, err := Actor(c)
	if err != nil {
		return Command{}, err
	}
	b := in.Body
	cmd, err := a.svc.CreateCommand(c.Request.Context(), actor, chat.CommandInput{
		Command: b.Command, Response: b.Response, Aliases: b.Aliases, Enabled: b.Enabled,
		CooldownSeconds: b.CooldownSeconds, UserCooldownSeconds: b.UserCooldownSeconds, UserLevel: chat.Role(b.UserLevel),
		Channel: b.Channel,
	})
	if err != nil {
		return Command{}, StatusError(err, inBody)
	}
	return commandOf(cmd), nil
}

func (a *API) listCommands(c *apiserver.Context[chat.User], in *ListCommandsInput) (CommandList, error) {
	actor, err := reader(c)
	if err != nil {
		return CommandList{}, err
	}
	cs, err := a.svc.Commands(c.Request.Context(), actor, in.Channel)
	if err != nil {
		return CommandList{}, StatusError(err, inQuery)
	}
	out := CommandList{Commands: make([]Command, 0, len(cs))}
	for _, cmd := range cs {
		out.Commands = append(out.Commands, commandOf(cmd))
	}
	return out, nil
}

func (a *API) getCommand(c *apiserver.Context[chat.User], in *GetCommandInput) (Command, error) {
	actor, err := reader(c)
	if err != nil {
		return Command{}, err
	}
	cmd, err := a.svc.Command(c.Request.Context(), actor, in.Channel, in.Name)
	if err != nil {
		return Command{}, StatusError(renameField(err, "command", "name"), inParams)
	}
	return commandOf(cmd), nil
}

func (a *API) updateCommand(c *apiserver.Context[chat.User], in *UpdateCommandInput) (Command, error) {
	actor, err := Actor(c)
	if err != nil {
		return Command{}, err
	}
	b := in.Body
	p := chat.CommandPatch{Response: b.Response, Aliases: b.Aliases, Enabled: b.Enabled,
		CooldownSeconds: b.CooldownSeconds, UserCooldownSeconds: b.UserCooldownSeconds}
	if b.UserLevel != nil {
		r := chat.Role(*b.UserLevel)
		p.UserLevel = &r
	}
	cmd, err := a.svc.UpdateCommand(c.Request.Context(), actor, in.Channel, in.Name, p)
	if err != nil {
		return Command{}, StatusError(renameField(err, "command", "params.name"), inBody)
	}
	return commandOf(cmd), nil
}

func (a *API) deleteCommand(c *apiserver.Context[chat.User], in *CommandNameInput) (apiserver.NoBody, error) {
	actor, err := Actor(c)
	if err != nil {
		return apiserver.NoBody{}, err
	}
	if err := a.svc.DeleteCommand(c.Request.Context(), actor, in.Channel, in.Name); err != nil {
		return apiserver.NoBody{}, StatusError(renameField(err, "command", "name"), inParams)
	}
	return apiserver.NoBody{}, nil
}

// renameField makes a domain field name match the API's: the domain calls
// a trigger "command" wherever it comes from, the path calls it "name".
func renameField(err error, from, to string) error {
	de, ok := chat.AsError(err)
	if !ok || len(de.Fields) == 0 {
		return err
	}
	cp := *de
	cp.Fields = append([]chat.FieldError(nil), de.Fields...)
	for i := range cp.Fields {
		if cp.Fields[i].Field == from {
			cp.Fields[i].Field = to
		}
	}
	return &cp
}
