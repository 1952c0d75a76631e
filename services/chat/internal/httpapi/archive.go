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

// SearchInput is GET /channels/{channel}/messages/search.
type SearchInput struct {
	Channel string `path:"channel" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"Channel name, folded to lower case"`
	Q       string `query:"q" required:"true" minLength:"1" maxLength:"200" doc:"Words (all must match), \"quoted phrases\", word* prefixes, -word to exclude, or: up to 10 terms, case-insensitive, any script" example:"\"good game\" clutch*"`
	UserID  string `query:"user_id" maxLength:"64" doc:"Only this user's messages"`
	Before  int64  `query:"before" minimum:"1" doc:"Only messages with a smaller id: pass the last id of the page you have (the next, older page)"`
	Limit   int    `query:"limit" minimum:"1" maximum:"100" default:"20" doc:"How many messages, 1..100"`
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

	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodGet, URL: Prefix + "/channels/{channel}/messages/search", Tags: []string{tagChannels, tagModeration},
		Summary: "Search a channel's chat",
		Description: "The channel's messages (tombstones left out) whose text matches `q`, newest first, from the archive: " +
			"PostgreSQL full-text search with the language-neutral `simple` configuration (lower-cased words, no stemming, " +
			"every script alike). Page with `before=<last id>`. For the channel's moderators.",
	}, chat.ActionReadModLog, map[int]string{http.StatusNotFound: "This deployment has no archive (`reason: no_archive`)"}), a.search)
}

func (a *API) search(c *apiserver.Context[chat.User], in *SearchInput) (MessagePage, error) {
	actor, err := Actor(c)
	if err != nil {
		return MessagePage{}, err
	}
	ms, err := a.svc.Search(c.Request.Context(), actor, in.Channel, in.Q, in.UserID, in.Before, in.Limit)
	if err != nil {
		return MessagePage{}, StatusError(renameField(err, "channel", "params.channel"), inQuery)
	}
	channel, _ := chat.NormalizeChannel(in.Channel)
	return MessagePage{Channel: channel, Messages: messagesOf(ms)}, nil
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
