package httpapi

import (
	"net/http"
	"time"

	"github.com/apistack/platform/libs/apiserver"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// ReplayInput is GET /channels/{channel}/messages: a channel's chat
// between two times, from the archive.
type ReplayInput struct {
	Channel string    `path:"channel" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"Channel name, folded to lower case"`
	From    time.Time `query:"from" required:"true" doc:"Start of the range (RFC 3339, inclusive), e.g. 2026-12-06T20:14:00Z"`
	To      time.Time `query:"to" required:"true" doc:"End of the range (RFC 3339, exclusive); at most 31 days after from"`
	After   int64     `query:"after" minimum:"0" doc:"Only messages with a larger id: pass the last id of the page you have (the next page)"`
	Limit   int       `query:"limit" minimum:"1" maximum:"200" default:"50" doc:"How many messages, 1..200"`
}

func (a *API) registerArchive(srv *apiserver.Server[chat.User]) {
	apiserver.Register(srv, a.readOp(apiserver.Operation{
		Method: http.MethodGet, URL: Prefix + "/channels/{channel}/messages", Tags: []string{tagMessages},
		Summary: "Replay a channel's chat by time",
		Description: "The messages created in `[from, to)`, in channel order (ids ascending), tombstones included, read " +
			"from the archive (`CHAT_DATABASE_URL`): a VOD's chat replay, however old, within the archive's retention. " +
			"The archive follows the live chat by its lag (`chat_archive_lag_seconds`, normally under a second); for the " +
			"live edge read `GET /messages`. Page with `after=<last id>` until a page is shorter than `limit`. Without " +
			"an archive the answer is 404 with `reason: no_archive`.",
	}, map[int]string{http.StatusNotFound: "This deployment has no archive (`reason: no_archive`)"}), a.replay)
}

func (a *API) replay(c *apiserver.Context[chat.User], in *ReplayInput) (MessagePage, error) {
	actor, err := reader(c)
	if err != nil {
		return MessagePage{}, err
	}
	channel, err := chat.NormalizeChannel(in.Channel)
	if err != nil {
		return MessagePage{}, StatusError(err, inParams)
	}
	ms, err := a.svc.Replay(c.Request.Context(), actor, channel, in.From, in.To, in.After, in.Limit)
	if err != nil {
		return MessagePage{}, StatusError(err, inQuery)
	}
	return MessagePage{Channel: channel, Messages: messagesOf(ms)}, nil
}
