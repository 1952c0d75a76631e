package webhooks

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// Source is what the pump reads events from: the chat engine (both
// engines are one).
type Source interface {
	ReadEvents(ctx context.Context, channel string, after chat.Cursor, limit int) ([]chat.Event, error)
	Head(ctx context.Context, channel string) (chat.Cursor, error)
	ModLog(ctx context.Context, channel string, before *chat.ModID, limit int, now time.Time) ([]chat.ModEntry, error)
	// Channels lists every claimed channel (platform-wide webhooks
	// follow them all).
	Channels(ctx context.Context) ([]string, error)
	// AppendModLog records a webhook's disabling in its channel's log.
	AppendModLog(ctx context.Context, e chat.ModEntry) error
}

// Options configure a Dispatcher.
type Options struct {
	Store  Store
	Source Source
	// Client sends deliveries (NewClient).
	Client *http.Client
	Log    *slog.Logger
	// Now is the clock of due times and the schedule (tests move it).
	Now func() time.Time
	// Every is how often the pump reads followed channels and an idle
	// endpoint looks for due deliveries (default 250 ms).
	Every time.Duration
	// Schedule is the wait before retry n (default Backoff with jitter).
	Schedule func(n int) time.Duration
	// Owner names this replica as the pump's lease holder (default random).
	Owner string
	// LeaseFor is how long the pump's lease lasts without renewal: a
	// replica that dies hands the pump over after it (default the larger
	// of 5 s and 8 x Every).
	LeaseFor time.Duration
}

// Dispatcher is one replica's share of the webhooks: the pump while it
// holds the lease, and deliveries of every endpoint, claimed from the
// shared queue.
type Dispatcher struct {
	o Options

	mu      sync.Mutex
	workers map[string]*worker // by endpoint id
	wg      sync.WaitGroup
}

// New returns a dispatcher; Run starts it.
func New(o Options) *Dispatcher {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Every <= 0 {
		o.Every = 250 * time.Millisecond
	}
	if o.Schedule == nil {
		o.Schedule = func(n int) time.Duration { return jittered(Backoff(n)) }
	}
	if o.Owner == "" {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		o.Owner = hex.EncodeToString(b)
	}
	if o.LeaseFor <= 0 {
		o.LeaseFor = max(5*time.Second, 8*o.Every)
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Dispatcher{o: o, workers: map[string]*worker{}}
}

// Run pumps and delivers until ctx ends, then waits for the deliveries in
// flight (each bounded by the client's timeout).
func (d *Dispatcher) Run(ctx context.Context) {
	t := time.NewTicker(d.o.Every)
	defer t.Stop()
	for {
		eps, err := d.o.Store.Endpoints(ctx)
		if err != nil {
			if ctx.Err() == nil {
				d.o.Log.WarnContext(ctx, "webhooks: list endpoints", "err", err)
			}
		} else {
			d.follow(ctx, eps)
			if err := d.pump(ctx, eps); err != nil && ctx.Err() == nil {
				d.o.Log.WarnContext(ctx, "webhooks: pump", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			d.wg.Wait()
			return
		case <-t.C:
		}
	}
}

// follow starts a worker for each enabled endpoint and stops those of
// endpoints deleted or disabled.
func (d *Dispatcher) follow(ctx context.Context, eps []Endpoint) {
	d.mu.Lock()
	defer d.mu.Unlock()
	live := map[string]bool{}
	for _, e := range eps {
		if e.DisabledAt != nil {
			continue
		}
		live[e.ID] = true
		if w := d.workers[e.ID]; w != nil {
			w.setEndpoint(e)
			continue
		}
		wctx, cancel := context.WithCancel(ctx)
		w := &worker{d: d, ep: e, cancel: cancel, wake: make(chan struct{}, 1)}
		d.workers[e.ID] = w
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			w.run(wctx)
		}()
	}
	for id, w := range d.workers {
		if !live[id] {
			w.cancel()
			delete(d.workers, id)
		}
	}
}

// wakeAll tells this replica's workers that deliveries were enqueued.
func (d *Dispatcher) wakeAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, w := range d.workers {
		w.poke()
	}
}

// worker delivers one endpoint's queue with at most Concurrency requests
// in flight.
type worker struct {
	d      *Dispatcher
	cancel context.CancelFunc
	wake   chan struct{}

	mu sync.Mutex
	ep Endpoint
}

func (w *worker) setEndpoint(e Endpoint) {
	w.mu.Lock()
	w.ep = e
	w.mu.Unlock()
}

func (w *worker) endpoint() Endpoint {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ep
}

func (w *worker) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run claims up to Concurrency due deliveries at once, sends them
// together, and records their attempts in one step, until ctx ends.
func (w *worker) run(ctx context.Context) {
	t := time.NewTicker(w.d.o.Every)
	defer t.Stop()
	for ctx.Err() == nil {
		ep := w.endpoint()
		got, err := w.d.o.Store.Claim(ctx, ep.ID, w.d.o.Now(), Concurrency, ClaimFor)
		if err != nil && ctx.Err() == nil {
			w.d.o.Log.WarnContext(ctx, "webhooks: claim", "webhook", ep.ID, "err", err)
		}
		if len(got) > 0 {
			w.d.deliver(ctx, ep, got)
			continue
		}
		select {
		case <-ctx.Done():
		case <-w.wake:
		case <-t.C:
		}
	}
}

// deliver makes one attempt of each of ds, together, and records them.
func (d *Dispatcher) deliver(ctx context.Context, ep Endpoint, ds []Delivery) {
	outs := make([]Outcome, len(ds))
	var wg sync.WaitGroup
	for i, del := range ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = d.attempt(ctx, ep, del)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		// Shutting down: a failed attempt was cut short, not answered;
		// its claim runs out and another replica (or this one,
		// restarted) sends it. No attempt is charged for it.
		kept := outs[:0]
		for _, o := range outs {
			if o.OK {
				kept = append(kept, o)
			}
		}
		outs = kept
	}
	if len(outs) == 0 {
		return
	}
	// The attempts are recorded even while ctx ends: they were made.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), Timeout)
	defer cancel()
	now, err := d.o.Store.Finish(fctx, ep.ID, outs)
	if err != nil {
		if !errors.Is(err, chat.ErrNotFound) {
			d.o.Log.WarnContext(ctx, "webhooks: record attempts", "webhook", ep.ID, "err", err)
		}
		return
	}
	if now.FailingSince != nil && d.o.Now().Sub(*now.FailingSince) >= DisableAfter {
		d.disable(fctx, now)
	}
}

// attempt sends del once and says what comes next.
func (d *Dispatcher) attempt(ctx context.Context, ep Endpoint, del Delivery) Outcome {
	start := d.o.Now()
	a := Attempt{At: start}
	status, err := d.post(ctx, ep, del)
	a.DurationMS = d.o.Now().Sub(start).Milliseconds()
	a.Status = status
	ok := err == nil && status >= 200 && status < 300
	switch {
	case err != nil:
		a.Error = err.Error()
	case !ok:
		a.Error = fmt.Sprintf("answered %d", status)
	}
	n := del.AttemptCount + 1
	switch {
	case ok:
		del.Status, del.NextAt = StatusDelivered, nil
	case n > Retries:
		del.Status, del.NextAt = StatusFailed, nil
	default:
		next := d.o.Now().Add(d.o.Schedule(n))
		del.Status, del.NextAt = StatusPending, &next
	}
	return Outcome{Delivery: del, Attempt: a, OK: ok}
}

// post sends del's body to ep, signed now.
func (d *Dispatcher) post(ctx context.Context, ep Endpoint, del Delivery) (int, error) {
	key, err := SecretKey(ep.Secret)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(del.Body))
	if err != nil {
		return 0, err
	}
	SetHeaders(req.Header, key, del.ID, d.o.Now(), del.Body)
	req.Header.Set("User-Agent", "apistack-chat-webhooks/1")
	resp, err := d.o.Client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxAnswer))
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// disable stops ep for good and says so in its channel's moderation log
// (a platform-wide one: in the service's log only).
func (d *Dispatcher) disable(ctx context.Context, ep Endpoint) {
	at := d.o.Now()
	changed, err := d.o.Store.Disable(ctx, ep.ID, at)
	if err != nil || !changed {
		return
	}
	reason := fmt.Sprintf("webhook %s disabled: every attempt failed since %s (%s)", ep.ID, ep.FailingSince.UTC().Format(time.RFC3339), DisableAfter)
	d.o.Log.WarnContext(ctx, "webhooks: endpoint disabled", "webhook", ep.ID, "channel", ep.Channel, "failing_since", ep.FailingSince)
	if ep.Channel == "" {
		return
	}
	e := chat.ModEntry{Channel: ep.Channel, At: at.UTC().Truncate(time.Millisecond), Action: ModWebhookDisabled, Actor: chat.AutomodUser,
		Rule: "webhook:" + ep.ID, Reason: reason}
	if err := d.o.Source.AppendModLog(ctx, e); err != nil {
		d.o.Log.WarnContext(ctx, "webhooks: moderation log entry lost", "webhook", ep.ID, "err", err)
	}
}
