package httpapi

import (
	"net/http"

	"github.com/apistack/platform/libs/apiserver"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// CreateFilterBody is a new filter.
type CreateFilterBody struct {
	Kind      string `json:"kind" enum:"blocked_term,regex,links,caps" doc:"blocked_term: whole words, '*' only at the start or end; regex: RE2, at most 256 bytes; links: URLs and bare domains; caps: share of capital letters"`
	Pattern   string `json:"pattern,omitempty" maxLength:"256" doc:"The term (blocked_term) or expression (regex); unused by links and caps" example:"scam*"`
	Action    string `json:"action,omitempty" enum:"block,mask,timeout,ban,hold,strike" default:"block" doc:"block: refuse the message (422); mask: store it with the match replaced by *; timeout: refuse and time the sender out for timeout_seconds; ban: refuse and ban the sender; strike: refuse and count a strike in the channel (1st warn, 2nd 60 s timeout, 3rd 10 min, 4th ban; strikes are forgotten a day after the last); hold: keep the message for review (202), nobody else sees it. The sender of a refused message gets 422 with reason (the filter kind) and consequence"`
	MinRole   string `json:"min_role,omitempty" enum:"broadcaster,moderator,vip,subscriber,viewer" doc:"Lowest role the filter does not apply to (default: vip for links, moderator otherwise)"`
	Threshold int    `json:"threshold,omitempty" minimum:"0" maximum:"100" doc:"caps: percent of capitals above which a message matches (default 70)"`
	MinLength int    `json:"min_length,omitempty" minimum:"0" maximum:"500" doc:"caps: letters below which a message is never checked (default 10)"`
	Channel   string `json:"channel,omitempty" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"Make it that channel's own filter (managed by its moderators; run after the platform-wide ones on sends there). Absent: platform-wide (a platform-wide moderator)"`
	// TimeoutSeconds is the timeout of action timeout.
	TimeoutSeconds int `json:"timeout_seconds,omitempty" minimum:"0" maximum:"1209600" doc:"timeout: seconds the sender is timed out, 1..1209600 (default 600); only with action timeout"`
}

// CreateFilterInput is POST /filters.
type CreateFilterInput struct {
	Body CreateFilterBody
}

// FilterIDInput names a filter.
type FilterIDInput struct {
	ID      string `path:"id" minLength:"1" maxLength:"64"`
	Channel string `query:"channel" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"The channel whose own filter this is; absent: a platform-wide filter"`
}

// ListFiltersInput names the scope to list.
type ListFiltersInput struct {
	Channel string `query:"channel" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"List that channel's own filters (its moderators); absent: the platform-wide ones"`
}

func (a *API) registerFilters(srv *apiserver.Server[chat.User]) {
	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodGet, URL: Prefix + "/filters", Tags: []string{tagFilters},
		Summary: "List filters", Description: "In the order they run: the platform-wide ones, or with `channel` that channel's own (which run after the platform-wide ones on its sends). Moderators only (of that channel, or platform-wide): the list reveals the blocked terms.",
	}, chat.ActionManageFilters, nil), a.listFilters)

	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodPost, URL: Prefix + "/filters", Tags: []string{tagFilters}, Status: http.StatusCreated,
		Summary: "Create a filter",
		Description: "Text is folded once per send before matching, so letter case, full-width letters, accents, " +
			"zero-width and other invisible characters do not get around a filter; blocked terms match on the Unicode " +
			"TR39 confusable skeleton, so look-alike letters from other scripts do not either. Links are found by " +
			"scheme, bare IPv4 address, `www.` or a public suffix, with IDN and bracketed dots. Regular expressions " +
			"are compiled once, at creation. With `channel` the filter is that channel's own, managed by its moderators, and runs on " +
			"sends there after the platform-wide filters; without, it is platform-wide and needs a platform-wide role. At most " +
			"`CHAT_MAX_FILTERS` filters (default 300), of which `CHAT_MAX_REGEX_FILTERS` regex (default 10), platform-wide, and as many in each channel.",
	}, chat.ActionManageFilters, map[int]string{http.StatusConflict: "A limit is reached (`reason: limit`, `limit`): `CHAT_MAX_FILTERS` or `CHAT_MAX_REGEX_FILTERS`"}), a.createFilter)

	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodDelete, URL: Prefix + "/filters/{id}", Tags: []string{tagFilters},
		Summary: "Delete a filter",
	}, chat.ActionManageFilters, map[int]string{http.StatusNotFound: "No such filter"}), a.deleteFilter)
}

func (a *API) listFilters(c *apiserver.Context[chat.User], in *ListFiltersInput) (FilterList, error) {
	actor, err := Actor(c)
	if err != nil {
		return FilterList{}, err
	}
	fs, err := a.svc.Filters(c.Request.Context(), actor, in.Channel)
	if err != nil {
		return FilterList{}, StatusError(err, inQuery)
	}
	out := FilterList{Filters: make([]Filter, 0, len(fs))}
	for _, f := range fs {
		out.Filters = append(out.Filters, filterOf(f))
	}
	return out, nil
}

func (a *API) createFilter(c *apiserver.Context[chat.User], in *CreateFilterInput) (Filter, error) {
	actor, err := Actor(c)
	if err != nil {
		return Filter{}, err
	}
	b := in.Body
	f, err := a.svc.CreateFilter(c.Request.Context(), actor, chat.FilterInput{Kind: chat.FilterKind(b.Kind), Pattern: b.Pattern,
		Action: chat.FilterAction(b.Action), MinRole: chat.Role(b.MinRole), Threshold: b.Threshold, MinLength: b.MinLength, Channel: b.Channel, TimeoutSeconds: b.TimeoutSeconds})
	if err != nil {
		return Filter{}, StatusError(err, inBody)
	}
	return filterOf(f), nil
}

func (a *API) deleteFilter(c *apiserver.Context[chat.User], in *FilterIDInput) (apiserver.NoBody, error) {
	actor, err := Actor(c)
	if err != nil {
		return apiserver.NoBody{}, err
	}
	if err := a.svc.DeleteFilter(c.Request.Context(), actor, in.Channel, in.ID); err != nil {
		return apiserver.NoBody{}, StatusError(err, inParams)
	}
	return apiserver.NoBody{}, nil
}
