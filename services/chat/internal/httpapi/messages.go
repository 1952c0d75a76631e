package httpapi

import (
	"net/http"

	"github.com/apistack/platform/libs/apiserver"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// ListMessagesInput selects a page of a channel.
type ListMessagesInput struct {
	Channel string `query:"channel" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"Channel name (default general): 1..32 of a-z, 0-9, '-' and '_', starting with a letter or digit; folded to lower case"`
	Limit   int    `query:"limit" minimum:"1" maximum:"200" default:"50" doc:"How many messages, 1..200"`
	Before  int64  `query:"before" minimum:"1" doc:"Only messages with a smaller id (older page): pass the first id of the page you have"`
	After   *int64 `query:"after" minimum:"0" doc:"Only messages with a larger id (newer page): pass the last id you have; after=0 reads from the start (the oldest page)"`
}

// SendBody is a message to send.
type SendBody struct {
	Message string `json:"message" minLength:"1" maxLength:"500" doc:"The text, 1..500 characters after trimming" example:"hello chat"`
	Channel string `json:"channel,omitempty" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"Channel name (default general)"`
}

// SendInput is POST /messages/send.
type SendInput struct {
	IdempotencyKey string `header:"Idempotency-Key" pattern:"^[A-Za-z0-9._:-]{1,64}$" doc:"Makes the send happen once: a send repeated with the same key (by the same user, in the same channel, within 10 minutes) stores nothing and answers 201 with the first one's message and reply (and Idempotent-Replayed: true). Send one whenever you may retry: after a timeout or a 503 the message may have been stored. 1..64 of A-Z, a-z, 0-9 and . _ : - (a UUID fits)" example:"5f0c1e7a-2b7d-4c1e-9a53-8f0e7f1d2c3b"`
	Body           SendBody
}

// SendHeaders are the headers of a send's answer.
type SendHeaders struct {
	Replayed string `header:"Idempotent-Replayed" enum:"true" doc:"Sent (true) when the answer is an earlier send's, found by its Idempotency-Key: nothing was stored now"`
}

// DeleteMessageInput names a message.
type DeleteMessageInput struct {
	ID      int64  `path:"id" minimum:"1" doc:"Message id"`
	Channel string `query:"channel" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"Channel of the message (default general)"`
}

func (a *API) registerMessages(srv *apiserver.Server[chat.User]) {
	apiserver.Register(srv, a.readOp(apiserver.Operation{
		Method: http.MethodGet, URL: Prefix + "/messages", Tags: []string{tagMessages},
		Summary: "Latest messages of a channel",
		Description: "The latest `limit` messages, oldest first, tombstones included. `before=<id>` pages to older " +
			"messages, `after=<id>` to newer ones (`after=0`: the oldest page, from the start of the history); " +
			"with both, the messages strictly between them.",
	}, nil), a.listMessages)

	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodPost, URL: Prefix + "/messages/send", Tags: []string{tagMessages}, Status: http.StatusCreated,
		Summary: "Send a message",
		Description: "Stores the message and answers 201 with it: a 201 means stored. In order: ban and timeout (403, " +
			"with `until` for a timeout), the text (400: 1..500 characters, no control character but newline, no " +
			"bidirectional override, at least one visible character), the channel's minimum account age (403), filters (a refusing filter " +
			"answers 422 and stores nothing, a `hold` filter 202; a masking filter stores and returns the masked text), unique chat (429), " +
			"first-message review (202), slow mode (429 with `Retry-After`), the per-user send limit " +
			"(`CHAT_SEND_LIMIT`, 429; never the broadcaster), storage. A message starting with a command trigger makes " +
			"the bot reply; the reply is stored too and returned as `reply`.",
	}, chat.ActionSendMessages, map[int]string{
		http.StatusUnauthorized: "No bearer token, or the user no longer exists",
		http.StatusAccepted: "Held for review (a `hold` filter, first-message review or shield mode): nothing was stored, nobody " +
			"else sees it; `held` names it in the review queue",
		http.StatusForbidden: "Invalid token, banned (`reason: banned`), timed out (`reason: timed_out`, `until`), or an account " +
			"younger than the channel's minimum (`reason: account_too_new`, `until`: when it may send)",
		http.StatusUnprocessableEntity: "Refused by a filter (`reason` is the filter kind; `consequence` says what it did: " +
			"`{action: block|timeout|ban|strike, penalty: warn|timeout|ban, until, strike, strikes_expire_at}`), or an " +
			"Idempotency-Key sent before with another message (`reason: idempotency_key_reused`); nothing was stored",
		http.StatusConflict: "The channel is new and `CHAT_MAX_CHANNELS` channels exist (`reason: limit`, `limit`), or a send with " +
			"the same Idempotency-Key was stored meanwhile (`reason: idempotency_key_in_use`: send again to get its result); nothing was stored",
		http.StatusTooManyRequests: "Slow mode (`reason: slow_mode`), unique chat (`reason: unique_chat`: the same text within 30 s) " +
			"or the per-user send limit (`reason: send_limit`); see `Retry-After`",
		http.StatusServiceUnavailable: "The store could not be reached, and nothing was stored; or, with `reason: outcome_unknown`, " +
			"it did not answer in time and the message may have been stored: send again with the same Idempotency-Key",
	}), a.send)

	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodDelete, URL: Prefix + "/messages/{id}", Tags: []string{tagMessages, tagModeration},
		Summary:     "Delete a message",
		Description: "Replaces the message by a tombstone (its place and id stay; the text goes) and answers with it. Deleting a tombstone again changes nothing.",
	}, chat.ActionDeleteMessages, map[int]string{http.StatusNotFound: "No such message in the channel (or it left the history window)"}), a.deleteMessage)
}

func (a *API) listMessages(c *apiserver.Context[chat.User], in *ListMessagesInput) (MessagePage, error) {
	actor, err := reader(c)
	if err != nil {
		return MessagePage{}, err
	}
	channel, err := chat.NormalizeChannel(in.Channel)
	if err != nil {
		return MessagePage{}, StatusError(err, inQuery)
	}
	p := chat.Page{Limit: in.Limit, Before: in.Before}
	if in.After != nil {
		p.After, p.FromStart = *in.After, true
	}
	ms, err := a.svc.Messages(c.Request.Context(), actor, channel, p)
	if err != nil {
		return MessagePage{}, StatusError(err, inQuery)
	}
	return MessagePage{Channel: channel, Messages: messagesOf(ms)}, nil
}

type sendAnswer = apiserver.Response[SendHeaders, SentMessage]

func (a *API) send(c *apiserver.Context[chat.User], in *SendInput) (sendAnswer, error) {
	actor, err := Actor(c)
	if err != nil {
		return sendAnswer{}, err
	}
	// The actor was read by this request's authentication: Send need not
	// read it again (chat.Fresh).
	res, err := a.svc.Send(c.Request.Context(), chat.Fresh(actor),
		chat.SendInput{Channel: in.Body.Channel, Message: in.Body.Message, IdempotencyKey: in.IdempotencyKey})
	if err != nil {
		// The header's pattern is the domain's rule for a key: only the
		// body's fields can fail the domain's checks here.
		return sendAnswer{}, StatusError(err, inBody)
	}
	if res.Held != nil {
		h := heldOf(*res.Held)
		// The id is the review id, as held.id: a client keying messages by id has one that
		// names this message (0 named none); held says it is not a stored message's.
		return sendAnswer{Status: http.StatusAccepted, Body: SentMessage{Message: Message{ID: h.ID, Channel: h.Channel, User: h.User,
			Text: h.Text, CreatedAt: h.CreatedAt}, Held: &h}}, nil
	}
	out := sendAnswer{Body: SentMessage{Message: messageOf(res.Message)}}
	if res.Replayed {
		out.Header.Replayed = "true"
	} else {
		a.messages.Inc()
	}
	if res.Reply != nil {
		r := messageOf(*res.Reply)
		out.Body.Reply = &r
	}
	return out, nil
}

func (a *API) deleteMessage(c *apiserver.Context[chat.User], in *DeleteMessageInput) (Message, error) {
	actor, err := Actor(c)
	if err != nil {
		return Message{}, err
	}
	m, err := a.svc.DeleteMessage(c.Request.Context(), actor, in.Channel, in.ID)
	if err != nil {
		return Message{}, StatusError(err, inQuery)
	}
	return messageOf(m), nil
}
