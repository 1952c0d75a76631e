package webhooks

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// Limits: what one broadcaster (or the platform) can make chat hold.
const (
	// MaxPerChannel bounds a channel's webhooks; MaxPlatform the
	// platform-wide ones (no channel).
	MaxPerChannel = 5
	MaxPlatform   = 20
	// MaxTotal bounds every webhook together (MaxPerChannel does per
	// channel; channels are bounded by CHAT_MAX_CHANNELS).
	MaxTotal = 10000
	// MaxQueue bounds one endpoint's pending deliveries: past it new
	// events for the endpoint are dropped (counted and logged) until it
	// drains. At 1 KiB an event that is 10 MiB per endpoint.
	MaxQueue = 10000
	// KeepDone is how many finished deliveries (delivered or failed) an
	// endpoint keeps for GET /webhooks/{id}/deliveries and a retry by hand.
	KeepDone = 200
	// KeepAttempts is how many attempts a delivery record keeps (the
	// newest); AttemptCount counts them all.
	KeepAttempts = 10
	// MaxURL bounds a webhook's URL.
	MaxURL = 2048
	// Concurrency is how many deliveries to one endpoint one replica has
	// in flight at most.
	Concurrency = 4
	// ClaimFor is how long a claimed delivery is a replica's: if the
	// replica dies, it is due again after this and another one sends it.
	ClaimFor = 30 * time.Second
)

// Retry schedule: after the first attempt fails, the n-th retry waits
// Backoff(n) = min(5 s x 4^(n-1), 8 h), +/- 20 % jitter: 5 s, 20 s, 80 s,
// 5m20s, 21m20s, 1h25m, 5h41m, 8 h, 8 h, 8 h (Retries retries): about 31.7 h
// in all, at least 25 h with the jitter. Then the delivery is failed.
const (
	Retries     = 10
	firstRetry  = 5 * time.Second
	maxBackoff  = 8 * time.Hour
	jitterShare = 0.2
)

// DisableAfter is how long an endpoint may fail every attempt (no success
// since its first failure) before it is disabled: longer than a
// delivery's whole schedule, so one outage of a day never disables it.
const DisableAfter = 36 * time.Hour

// Backoff is the wait before retry n (1-based), without jitter.
func Backoff(n int) time.Duration {
	d := firstRetry
	for i := 1; i < n && d < maxBackoff; i++ {
		d *= 4
	}
	return min(d, maxBackoff)
}

// jittered spreads d by +/- jitterShare so endpoints that failed together
// are not retried together.
func jittered(d time.Duration) time.Duration {
	f := 1 + jitterShare*(2*rand.Float64()-1)
	return time.Duration(float64(d) * f)
}

// Endpoint is a registered webhook.
type Endpoint struct {
	ID  string `json:"id"`
	URL string `json:"url"`
	// Events are the types it receives.
	Events []Type `json:"events"`
	// Channel is the channel it follows; "" is every channel (platform).
	Channel string `json:"channel,omitempty"`
	// Secret is the whsec_ signing secret, shown once at creation.
	Secret    string    `json:"secret"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
	// FailingSince is the first failure with no success since (nil when
	// the last attempt succeeded); DisabledAt is set once it failed for
	// DisableAfter: nothing is enqueued or sent for it any more.
	FailingSince *time.Time `json:"failing_since,omitempty"`
	DisabledAt   *time.Time `json:"disabled_at,omitempty"`
}

// Wants reports whether e receives ev.
func (e Endpoint) Wants(ev Event) bool {
	if e.DisabledAt != nil || (e.Channel != "" && e.Channel != ev.Channel) || ev.At.Before(e.CreatedAt) {
		return false
	}
	for _, t := range e.Events {
		if t == ev.Type {
			return true
		}
	}
	return false
}

// Delivery states.
const (
	StatusPending   = "pending"
	StatusDelivered = "delivered"
	StatusFailed    = "failed"
)

// Attempt is one try of a delivery.
type Attempt struct {
	At time.Time `json:"at"`
	// Status is the HTTP status answered (0 when none was: Error says why).
	Status     int    `json:"status,omitempty"`
	Error      string `json:"error,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// Delivery is one event for one endpoint.
type Delivery struct {
	// ID is the event's webhook-id.
	ID        string    `json:"id"`
	Endpoint  string    `json:"endpoint"`
	Type      Type      `json:"type"`
	Body      []byte    `json:"body"`
	CreatedAt time.Time `json:"created_at"`
	Status    string    `json:"status"`
	// NextAt is when the next attempt is due (pending only).
	NextAt       *time.Time `json:"next_at,omitempty"`
	AttemptCount int        `json:"attempt_count"`
	Attempts     []Attempt  `json:"attempts,omitempty"`
}

// Outcome is one attempt of a delivery: Delivery is the claimed copy with
// its new Status and NextAt (the attempt not yet added).
type Outcome struct {
	Delivery Delivery
	Attempt  Attempt
	OK       bool
}

// Cursor is where the pump stands in a channel: the last event log entry
// and the last moderation log entry it enqueued.
type Cursor struct {
	Events string `json:"events,omitempty"` // chat.Cursor's string form
	ModLog string `json:"modlog,omitempty"` // a chat.ModID
}

// Store is what the webhooks need of an engine (redisq: Redis, durable;
// memq: this process's memory). Every method that changes more than one
// thing does so atomically.
type Store interface {
	// CreateEndpoint stores e unless maxChannel webhooks of e.Channel (or
	// maxTotal in all) exist: LimitReached, checked with the insert.
	CreateEndpoint(ctx context.Context, e Endpoint, maxChannel, maxTotal int) error
	Endpoints(ctx context.Context) ([]Endpoint, error)
	// Endpoint returns one (chat.ErrNotFound when unknown).
	Endpoint(ctx context.Context, id string) (Endpoint, error)
	// DeleteEndpoint removes it, its queue and its deliveries.
	DeleteEndpoint(ctx context.Context, id string) error

	// Lease makes owner the pump for ttl if nobody else is (or owner
	// already is); false when another owner holds it.
	Lease(ctx context.Context, owner string, ttl time.Duration) (bool, error)
	// Cursor returns channel's cursor (zero when never moved).
	Cursor(ctx context.Context, channel string) (Cursor, error)
	// Enqueue adds ds (each to its endpoint's queue, due now, skipping an
	// endpoint with maxQueue pending, and one already holding the
	// delivery's id) and moves channel's cursor to c, at once, if owner
	// still holds the lease (false otherwise: nothing changed). dropped
	// counts the deliveries skipped for a full queue.
	Enqueue(ctx context.Context, owner, channel string, c Cursor, ds []Delivery, now time.Time, maxQueue int) (ok bool, dropped int, err error)

	// Claim takes up to n deliveries of endpoint due at now, making them
	// due again at now+claimFor (a replica that dies holding one lets
	// another send it then).
	Claim(ctx context.Context, endpoint string, now time.Time, n int, claimFor time.Duration) ([]Delivery, error)
	// Finish records attempts of endpoint's deliveries, in order: each
	// Outcome's attempt and its delivery's new state (pending again at
	// *Delivery.NextAt, or delivered or failed, then kept among the
	// newest KeepDone finished ones), and the endpoint's FailingSince
	// (cleared by a success, set by the first failure), in one step. It
	// returns the endpoint as it is now when an attempt failed (the zero
	// Endpoint otherwise). A delivery no longer there changes nothing; an
	// endpoint no longer there is NotFound.
	Finish(ctx context.Context, endpoint string, outs []Outcome) (Endpoint, error)
	// Disable sets the endpoint's DisabledAt (false if it was already).
	Disable(ctx context.Context, id string, at time.Time) (bool, error)
	// Deliveries returns up to limit of endpoint's deliveries, newest first.
	Deliveries(ctx context.Context, endpoint string, limit int) ([]Delivery, error)
	// Retry makes a kept delivery pending and due at now (NotFound when
	// it is not kept).
	Retry(ctx context.Context, endpoint, id string, now time.Time) (Delivery, error)
	// Pending counts endpoint's pending deliveries.
	Pending(ctx context.Context, endpoint string) (int, error)
}

// QuotaWebhooks is the limit reached when a channel (or the platform) has
// its most webhooks.
const QuotaWebhooks chat.Quota = "webhooks"
