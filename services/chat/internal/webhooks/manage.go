package webhooks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// Manager answers the webhook endpoints: who may register, list, delete
// and inspect which webhooks.
type Manager struct {
	store        Store
	svc          *chat.Service
	allowPrivate bool
}

// NewManager returns the manager of store's webhooks; allowPrivate is
// CHAT_WEBHOOK_ALLOW_PRIVATE (a literal private address is then accepted
// at registration; the dial-time check is the client's).
func NewManager(store Store, svc *chat.Service, allowPrivate bool) *Manager {
	return &Manager{store: store, svc: svc, allowPrivate: allowPrivate}
}

// CreateInput is a webhook to register.
type CreateInput struct {
	URL     string
	Events  []Type
	Channel string
}

// admin reports whether actor manages platform-wide webhooks: the
// platform's broadcaster (who may name channels' broadcasters).
func admin(actor chat.User) bool { return chat.Allowed(actor.Role, chat.ActionNameBroadcaster) }

// mayManage reports whether actor manages channel's webhooks: the
// platform admin, or the channel's broadcaster.
func (m *Manager) mayManage(ctx context.Context, actor chat.User, channel string) (bool, error) {
	if admin(actor) {
		return true, nil
	}
	if channel == "" {
		return false, nil
	}
	mem, err := m.svc.Member(ctx, actor, channel)
	if err != nil {
		return false, err
	}
	return mem.Role() == chat.RoleBroadcaster, nil
}

func forbidden(channel string) error {
	if channel == "" {
		return chat.Forbidden("platform-wide webhooks are the platform admin's")
	}
	return chat.Forbidden("webhooks of channel " + channel + " are its broadcaster's (or the platform admin's)")
}

// checkURL accepts an absolute http(s) URL without credentials; a literal
// address must be public unless private ones are allowed. Names are
// checked when dialled, after each resolution (NewClient).
func (m *Manager) checkURL(raw string) error {
	if len(raw) > MaxURL {
		return chat.Invalid("url", "at most 2048 characters")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Fragment != "" {
		return chat.Invalid("url", "want an absolute http(s) URL without credentials or fragment")
	}
	if a, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil && !m.allowPrivate && !Public(a) {
		return chat.Invalid("url", "the address is not public (private, loopback, link-local or reserved); chat does not send there unless CHAT_WEBHOOK_ALLOW_PRIVATE=true")
	}
	if strings.EqualFold(u.Hostname(), "localhost") && !m.allowPrivate {
		return chat.Invalid("url", "localhost is not public; chat does not send there unless CHAT_WEBHOOK_ALLOW_PRIVATE=true")
	}
	return nil
}

// Create registers a webhook and returns it with its secret (the only
// time the secret is shown).
func (m *Manager) Create(ctx context.Context, actor chat.User, in CreateInput) (Endpoint, error) {
	channel := ""
	if strings.TrimSpace(in.Channel) != "" {
		c, err := chat.NormalizeChannel(in.Channel)
		if err != nil {
			return Endpoint{}, err
		}
		channel = c
	}
	ok, err := m.mayManage(ctx, actor, channel)
	if err != nil {
		return Endpoint{}, err
	}
	if !ok {
		return Endpoint{}, forbidden(channel)
	}
	if err := m.checkURL(in.URL); err != nil {
		return Endpoint{}, err
	}
	if len(in.Events) == 0 {
		return Endpoint{}, chat.Invalid("events", "name at least one event type")
	}
	var events []Type
	for _, t := range in.Events {
		if !t.Valid() {
			return Endpoint{}, chat.Invalid("events", "unknown event type "+string(t))
		}
		if !slices.Contains(events, t) {
			events = append(events, t)
		}
	}
	secret, err := NewSecret()
	if err != nil {
		return Endpoint{}, err
	}
	id := make([]byte, 12)
	if _, err := rand.Read(id); err != nil {
		return Endpoint{}, err
	}
	e := Endpoint{ID: "wh_" + hex.EncodeToString(id), URL: in.URL, Events: events, Channel: channel, Secret: secret,
		CreatedBy: actor.ID, CreatedAt: m.svc.Now()}
	limit := MaxPerChannel
	if channel == "" {
		limit = MaxPlatform
	}
	if err := m.store.CreateEndpoint(ctx, e, limit, MaxTotal); err != nil {
		return Endpoint{}, err
	}
	return e, nil
}

// List returns the webhooks actor manages: of channel, or, with channel
// "", every one (the platform admin only).
func (m *Manager) List(ctx context.Context, actor chat.User, channel string) ([]Endpoint, error) {
	if strings.TrimSpace(channel) != "" {
		c, err := chat.NormalizeChannel(channel)
		if err != nil {
			return nil, err
		}
		channel = c
		ok, err := m.mayManage(ctx, actor, channel)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, forbidden(channel)
		}
	} else if !admin(actor) {
		return nil, chat.Forbidden("listing every webhook is the platform admin's; name your channel (?channel=)")
	}
	all, err := m.store.Endpoints(ctx)
	if err != nil {
		return nil, err
	}
	var out []Endpoint
	for _, e := range all {
		if channel == "" || e.Channel == channel {
			e.Secret = ""
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b Endpoint) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// owned returns webhook id if actor manages it; one it does not is not
// found (its existence is not told).
func (m *Manager) owned(ctx context.Context, actor chat.User, id string) (Endpoint, error) {
	e, err := m.store.Endpoint(ctx, id)
	if err != nil {
		return Endpoint{}, err
	}
	ok, err := m.mayManage(ctx, actor, e.Channel)
	if err != nil {
		return Endpoint{}, err
	}
	if !ok {
		return Endpoint{}, chat.NotFound("webhook")
	}
	e.Secret = ""
	return e, nil
}

// Delete removes a webhook, its queue and its deliveries.
func (m *Manager) Delete(ctx context.Context, actor chat.User, id string) error {
	if _, err := m.owned(ctx, actor, id); err != nil {
		return err
	}
	return m.store.DeleteEndpoint(ctx, id)
}

// MaxDeliveries bounds one answer of Deliveries.
const MaxDeliveries = 100

// Deliveries returns a webhook's newest deliveries with their attempts.
func (m *Manager) Deliveries(ctx context.Context, actor chat.User, id string, limit int) ([]Delivery, error) {
	if _, err := m.owned(ctx, actor, id); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > MaxDeliveries {
		limit = MaxDeliveries
	}
	return m.store.Deliveries(ctx, id, limit)
}

// Retry makes one kept delivery due now (a failed one again, or a
// delivered one once more); a disabled webhook is refused (409).
func (m *Manager) Retry(ctx context.Context, actor chat.User, id, delivery string) (Delivery, error) {
	e, err := m.owned(ctx, actor, id)
	if err != nil {
		return Delivery{}, err
	}
	if e.DisabledAt != nil {
		return Delivery{}, chat.Conflict("webhook " + id + " is disabled; register it again")
	}
	d, err := m.store.Retry(ctx, id, delivery, m.svc.Now())
	if errors.Is(err, chat.ErrNotFound) {
		return Delivery{}, chat.NotFound("delivery")
	}
	return d, err
}
