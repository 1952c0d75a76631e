package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/apistack/platform/libs/apiserver"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/webhooks"
)

const tagWebhooks = "Webhooks"

// CreateWebhookBody is a webhook to register.
type CreateWebhookBody struct {
	URL     string   `json:"url" minLength:"1" maxLength:"2048" doc:"Where events are POSTed: http(s), no credentials; a private, loopback or link-local destination is refused (when registered and at every connection) unless CHAT_WEBHOOK_ALLOW_PRIVATE=true" example:"https://platform.example/chat/events"`
	Events  []string `json:"events" minItems:"1" maxItems:"10" doc:"Event types to receive (see webhooks in this document): message.created, message.deleted, user.timed_out, user.banned, user.unbanned, shield.changed, held.created, held.approved, held.denied, role.changed"`
	Channel string   `json:"channel,omitempty" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"The channel to follow (its broadcaster may register); absent: every channel (the platform admin)"`
}

// CreateWebhookInput is POST /webhooks.
type CreateWebhookInput struct {
	Body CreateWebhookBody
}

// Webhook is a registered webhook (its secret only in the answer to its creation).
type Webhook struct {
	ID           string     `json:"id" example:"wh_5f2c8a1e9b7d3c4a6e0f1b2d"`
	Secret       string     `json:"secret,omitempty" doc:"Standard Webhooks signing secret: whsec_ and the base64 key. Shown once, in the answer to POST /webhooks"`
	URL          string     `json:"url"`
	Events       []string   `json:"events"`
	Channel      string     `json:"channel,omitempty" doc:"Absent: every channel"`
	CreatedBy    string     `json:"created_by"`
	CreatedAt    time.Time  `json:"created_at"`
	FailingSince *time.Time `json:"failing_since,omitempty" doc:"First failed attempt with no success since"`
	DisabledAt   *time.Time `json:"disabled_at,omitempty" doc:"Set once every attempt failed for 36 hours: nothing is sent any more (logged in the channel's moderation log as webhook_disabled)"`
}

// WebhookList is GET /webhooks.
type WebhookList struct {
	Webhooks []Webhook `json:"webhooks"`
}

// ListWebhooksInput is GET /webhooks.
type ListWebhooksInput struct {
	Channel string `query:"channel" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"That channel's webhooks (its broadcaster); absent: every webhook (the platform admin)"`
}

// WebhookIDInput names a webhook.
type WebhookIDInput struct {
	ID string `path:"id" minLength:"1" maxLength:"64"`
}

// DeliveriesInput is GET /webhooks/{id}/deliveries.
type DeliveriesInput struct {
	ID    string `path:"id" minLength:"1" maxLength:"64"`
	Limit int    `query:"limit" minimum:"1" maximum:"100" default:"50" doc:"How many, newest first"`
}

// RetryInput is POST /webhooks/{id}/deliveries/{delivery}/retry.
type RetryInput struct {
	ID       string `path:"id" minLength:"1" maxLength:"64"`
	Delivery string `path:"delivery" minLength:"1" maxLength:"64" doc:"The delivery's id (its webhook-id)"`
}

// Attempt is one try of a delivery.
type Attempt struct {
	At         time.Time `json:"at"`
	Status     int       `json:"status,omitempty" doc:"The HTTP status answered; absent when none was (error says why)"`
	Error      string    `json:"error,omitempty"`
	DurationMS int64     `json:"duration_ms"`
}

// Delivery is one event for one webhook.
type Delivery struct {
	ID           string          `json:"id" doc:"The webhook-id header: the same for every attempt (de-duplicate on it)"`
	Type         string          `json:"type"`
	Status       string          `json:"status" enum:"pending,delivered,failed"`
	CreatedAt    time.Time       `json:"created_at" doc:"When the event happened"`
	NextAt       *time.Time      `json:"next_at,omitempty" doc:"pending: when the next attempt is due"`
	AttemptCount int             `json:"attempt_count"`
	Attempts     []Attempt       `json:"attempts" doc:"The newest 10 attempts, oldest first"`
	Payload      json.RawMessage `json:"payload" doc:"The body sent"`
}

// DeliveryList is GET /webhooks/{id}/deliveries.
type DeliveryList struct {
	Deliveries []Delivery `json:"deliveries"`
}

// RegisterWebhooks declares the webhook endpoints and documents every
// event's payload as OpenAPI webhooks.
func RegisterWebhooks(srv *apiserver.Server[chat.User], m *webhooks.Manager) error {
	if srv == nil || m == nil {
		return errors.New("httpapi: server and webhooks are required")
	}
	h := webhookAPI{m: m}
	manage := "The platform admin manages every webhook; a channel's broadcaster those of its channel."
	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodPost, URL: Prefix + "/webhooks", Tags: []string{tagWebhooks}, Status: http.StatusCreated,
		Summary: "Register a webhook",
		Description: "Events of the channel (or every channel) are POSTed to `url`, signed as Standard Webhooks says (`webhook-id`, " +
			"`webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256(key, id.timestamp.body)>`) with the secret answered here, " +
			"once. At least once: de-duplicate on `webhook-id`. Failed attempts are retried with exponential backoff and jitter for about " +
			"31 hours; a webhook failing for 36 hours is disabled. At most 5 webhooks per channel and 20 platform-wide. " + manage,
	}, "", map[int]string{http.StatusConflict: "The channel (or the platform) has its most webhooks (`reason: limit`)"}), h.create)
	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodGet, URL: Prefix + "/webhooks", Tags: []string{tagWebhooks},
		Summary: "List webhooks", Description: "Oldest first, without secrets. " + manage,
	}, "", nil), h.list)
	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodDelete, URL: Prefix + "/webhooks/{id}", Tags: []string{tagWebhooks},
		Summary: "Delete a webhook", Description: "With its queue and its deliveries. " + manage,
	}, "", map[int]string{http.StatusNotFound: "No such webhook (or not the caller's)"}), h.delete)
	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodGet, URL: Prefix + "/webhooks/{id}/deliveries", Tags: []string{tagWebhooks},
		Summary:     "A webhook's deliveries",
		Description: "Newest first: the pending ones and the newest 200 finished (delivered or failed), each with its attempts. " + manage,
	}, "", map[int]string{http.StatusNotFound: "No such webhook (or not the caller's)"}), h.deliveries)
	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodPost, URL: Prefix + "/webhooks/{id}/deliveries/{delivery}/retry", Tags: []string{tagWebhooks},
		Summary:     "Retry a delivery now",
		Description: "Makes a kept delivery (failed, delivered or pending) due now, with the same `webhook-id`. " + manage,
	}, "", map[int]string{http.StatusNotFound: "No such webhook or delivery", http.StatusConflict: "The webhook is disabled"}), h.retry)

	for _, w := range []struct {
		t    webhooks.Type
		doc  string
		body any
	}{
		{webhooks.MessageCreated, "A message was stored (bot replies and approved held messages too).", webhooks.MessageEvent{}},
		{webhooks.MessageDeleted, "A message was deleted (its tombstone: no text).", webhooks.MessageEvent{}},
		{webhooks.UserTimedOut, "A user was timed out in the channel (or platform-wide, announced there).", webhooks.ModerationEvent{}},
		{webhooks.UserBanned, "A user was banned.", webhooks.ModerationEvent{}},
		{webhooks.UserUnbanned, "A ban or timeout was lifted.", webhooks.ModerationEvent{}},
		{webhooks.ShieldChanged, "Shield mode went on or off (data.shield), by hand or by the raid watch.", webhooks.ModerationEvent{}},
		{webhooks.HeldCreated, "A message was held for review (a hold filter, first-message review or shield mode).", webhooks.ModerationEvent{}},
		{webhooks.HeldApproved, "A held message was approved (and stored: message.created follows).", webhooks.ModerationEvent{}},
		{webhooks.HeldDenied, "A held message was denied.", webhooks.ModerationEvent{}},
		{webhooks.RoleChanged, "A role was given or taken back in the channel (data.action role_set or role_remove).", webhooks.ModerationEvent{}},
	} {
		if err := srv.DocumentWebhook(apiserver.WebhookDoc{Name: string(w.t), Summary: string(w.t), Description: w.doc +
			" Signed: webhook-id, webhook-timestamp, webhook-signature (Standard Webhooks). Answer 2xx within 5 s; anything else is retried.",
			Tags: []string{tagWebhooks}, Body: w.body}); err != nil {
			return err
		}
	}
	return nil
}

type webhookAPI struct{ m *webhooks.Manager }

func webhookOf(e webhooks.Endpoint) Webhook {
	w := Webhook{ID: e.ID, Secret: e.Secret, URL: e.URL, Channel: e.Channel, CreatedBy: e.CreatedBy, CreatedAt: e.CreatedAt,
		FailingSince: e.FailingSince, DisabledAt: e.DisabledAt, Events: make([]string, 0, len(e.Events))}
	for _, t := range e.Events {
		w.Events = append(w.Events, string(t))
	}
	return w
}

func (h webhookAPI) create(c *apiserver.Context[chat.User], in *CreateWebhookInput) (Webhook, error) {
	actor, err := Actor(c)
	if err != nil {
		return Webhook{}, err
	}
	ci := webhooks.CreateInput{URL: in.Body.URL, Channel: in.Body.Channel}
	for _, t := range in.Body.Events {
		ci.Events = append(ci.Events, webhooks.Type(t))
	}
	e, err := h.m.Create(c.Request.Context(), actor, ci)
	if err != nil {
		return Webhook{}, StatusError(err, inBody)
	}
	return webhookOf(e), nil
}

func (h webhookAPI) list(c *apiserver.Context[chat.User], in *ListWebhooksInput) (WebhookList, error) {
	actor, err := Actor(c)
	if err != nil {
		return WebhookList{}, err
	}
	es, err := h.m.List(c.Request.Context(), actor, in.Channel)
	if err != nil {
		return WebhookList{}, StatusError(err, inQuery)
	}
	out := WebhookList{Webhooks: make([]Webhook, 0, len(es))}
	for _, e := range es {
		out.Webhooks = append(out.Webhooks, webhookOf(e))
	}
	return out, nil
}

func (h webhookAPI) delete(c *apiserver.Context[chat.User], in *WebhookIDInput) (apiserver.NoBody, error) {
	actor, err := Actor(c)
	if err != nil {
		return apiserver.NoBody{}, err
	}
	if err := h.m.Delete(c.Request.Context(), actor, in.ID); err != nil {
		return apiserver.NoBody{}, StatusError(err, inParams)
	}
	return apiserver.NoBody{}, nil
}

func deliveryOf(d webhooks.Delivery) Delivery {
	out := Delivery{ID: d.ID, Type: string(d.Type), Status: d.Status, CreatedAt: d.CreatedAt, NextAt: d.NextAt,
		AttemptCount: d.AttemptCount, Attempts: make([]Attempt, 0, len(d.Attempts)), Payload: json.RawMessage(d.Body)}
	for _, a := range d.Attempts {
		out.Attempts = append(out.Attempts, Attempt(a))
	}
	return out
}

func (h webhookAPI) deliveries(c *apiserver.Context[chat.User], in *DeliveriesInput) (DeliveryList, error) {
	actor, err := Actor(c)
	if err != nil {
		return DeliveryList{}, err
	}
	ds, err := h.m.Deliveries(c.Request.Context(), actor, in.ID, in.Limit)
	if err != nil {
		return DeliveryList{}, StatusError(err, inParams)
	}
	out := DeliveryList{Deliveries: make([]Delivery, 0, len(ds))}
	for _, d := range ds {
		out.Deliveries = append(out.Deliveries, deliveryOf(d))
	}
	return out, nil
}

func (h webhookAPI) retry(c *apiserver.Context[chat.User], in *RetryInput) (Delivery, error) {
	actor, err := Actor(c)
	if err != nil {
		return Delivery{}, err
	}
	d, err := h.m.Retry(c.Request.Context(), actor, in.ID, in.Delivery)
	if err != nil {
		return Delivery{}, StatusError(err, inParams)
	}
	return deliveryOf(d), nil
}
