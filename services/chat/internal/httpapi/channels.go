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
	SlowModeSeconds *int `json:"slow_mode_seconds,omitempty" minimum:"0" maximum:"120" doc:"Least seconds between two messages of one sender below vip; 0 turns slow mode off"`
}

// UpdateChannelInput is PATCH /channels/{channel}.
type UpdateChannelInput struct {
	Channel string `path:"channel" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"Channel name, folded to lower case"`
	Body    ChannelPatchBody
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
		Summary: "Change channel settings", Description: "Slow mode: senders below vip wait `slow_mode_seconds` between messages (429 with `Retry-After`).",
	}, chat.ActionManageChannel, map[int]string{http.StatusConflict: "A new channel past `CHAT_MAX_CHANNELS` (`reason: limit`, `limit`)"}), a.updateChannel)
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
	return channelOf(ch), nil
}

func (a *API) updateChannel(c *apiserver.Context[chat.User], in *UpdateChannelInput) (Channel, error) {
	actor, err := Actor(c)
	if err != nil {
		return Channel{}, err
	}
	ch, err := a.svc.UpdateChannel(c.Request.Context(), actor, in.Channel, chat.ChannelPatch{SlowModeSeconds: in.Body.SlowModeSeconds})
	if err != nil {
		return Channel{}, StatusError(renameField(err, "channel", "params.channel"), inBody)
	}
	return channelOf(ch), nil
}
