// Package memq keeps webhooks and their queues in this process's memory
// (CHAT_STORE=memory): lost on restart, as everything of that engine is.
package memq

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/webhooks"
)

// Store implements webhooks.Store under one lock.
type Store struct {
	mu         sync.Mutex
	endpoints  map[string]webhooks.Endpoint
	leaseOwner string
	leaseUntil time.Time
	cursors    map[string]webhooks.Cursor
	queues     map[string]*queue
	now        func() time.Time
}

type queue struct {
	due  map[string]time.Time // pending ids
	recs map[string]*webhooks.Delivery
	done []string // finished ids, oldest first
	all  []string // ids by creation, oldest first
}

var _ webhooks.Store = (*Store)(nil)

// New returns an empty store; now is the clock of the lease.
func New(now func() time.Time) *Store {
	return &Store{endpoints: map[string]webhooks.Endpoint{}, cursors: map[string]webhooks.Cursor{}, queues: map[string]*queue{}, now: now}
}

func notFound(what string) error {
	return &chat.Error{Kind: chat.KindNotFound, Message: what + " not found"}
}

// CreateEndpoint implements webhooks.Store.
func (s *Store) CreateEndpoint(_ context.Context, e webhooks.Endpoint, maxChannel, maxTotal int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, o := range s.endpoints {
		if o.Channel == e.Channel {
			n++
		}
	}
	if n >= maxChannel {
		return chat.LimitReached(webhooks.QuotaWebhooks, maxChannel)
	}
	if len(s.endpoints) >= maxTotal {
		return chat.LimitReached(webhooks.QuotaWebhooks, maxTotal)
	}
	s.endpoints[e.ID] = e
	s.queues[e.ID] = &queue{due: map[string]time.Time{}, recs: map[string]*webhooks.Delivery{}}
	return nil
}

// Endpoints implements webhooks.Store.
func (s *Store) Endpoints(context.Context) ([]webhooks.Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]webhooks.Endpoint, 0, len(s.endpoints))
	for _, e := range s.endpoints {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Endpoint implements webhooks.Store.
func (s *Store) Endpoint(_ context.Context, id string) (webhooks.Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.endpoints[id]
	if !ok {
		return webhooks.Endpoint{}, notFound("webhook")
	}
	return e, nil
}

// DeleteEndpoint implements webhooks.Store.
func (s *Store) DeleteEndpoint(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.endpoints[id]; !ok {
		return notFound("webhook")
	}
	delete(s.endpoints, id)
	delete(s.queues, id)
	return nil
}

// Lease implements webhooks.Store.
func (s *Store) Lease(_ context.Context, owner string, ttl time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.leaseOwner != owner && now.Before(s.leaseUntil) {
		return false, nil
	}
	s.leaseOwner, s.leaseUntil = owner, now.Add(ttl)
	return true, nil
}

// Cursor implements webhooks.Store.
func (s *Store) Cursor(_ context.Context, channel string) (webhooks.Cursor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cursors[channel], nil
}

// Enqueue implements webhooks.Store.
func (s *Store) Enqueue(_ context.Context, owner, channel string, c webhooks.Cursor, ds []webhooks.Delivery, now time.Time, maxQueue int) (bool, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leaseOwner != owner || !s.now().Before(s.leaseUntil) {
		return false, 0, nil
	}
	dropped := 0
	for _, d := range ds {
		q := s.queues[d.Endpoint]
		if q == nil {
			continue
		}
		if _, ok := q.recs[d.ID]; ok {
			continue
		}
		if len(q.due) >= maxQueue {
			dropped++
			continue
		}
		d.Status, d.NextAt = webhooks.StatusPending, &now
		rec := d
		q.recs[d.ID] = &rec
		q.due[d.ID] = now
		q.all = append(q.all, d.ID)
	}
	s.cursors[channel] = c
	return true, dropped, nil
}

// Claim implements webhooks.Store.
func (s *Store) Claim(_ context.Context, endpoint string, now time.Time, n int, claimFor time.Duration) ([]webhooks.Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[endpoint]
	if q == nil {
		return nil, nil
	}
	var ids []string
	for id, at := range q.due {
		if !at.After(now) {
			ids = append(ids, id)
		}
	}
	// Oldest due first, then creation order: an endpoint receives a
	// channel's events in order unless one is retried.
	sort.Slice(ids, func(i, j int) bool {
		a, b := q.due[ids[i]], q.due[ids[j]]
		if !a.Equal(b) {
			return a.Before(b)
		}
		return slices.Index(q.all, ids[i]) < slices.Index(q.all, ids[j])
	})
	if len(ids) > n {
		ids = ids[:n]
	}
	out := make([]webhooks.Delivery, 0, len(ids))
	for _, id := range ids {
		q.due[id] = now.Add(claimFor)
		out = append(out, *q.recs[id])
	}
	return out, nil
}

// Finish implements webhooks.Store.
func (s *Store) Finish(_ context.Context, endpoint string, outs []webhooks.Outcome) (webhooks.Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, found := s.endpoints[endpoint]
	q := s.queues[endpoint]
	if !found || q == nil {
		return webhooks.Endpoint{}, notFound("webhook")
	}
	failed := false
	for _, o := range outs {
		if o.OK {
			e.FailingSince = nil
		} else {
			failed = true
			if e.FailingSince == nil {
				at := o.Attempt.At
				e.FailingSince = &at
			}
		}
		s.finishOne(q, o)
	}
	s.endpoints[e.ID] = e
	if !failed {
		return webhooks.Endpoint{}, nil
	}
	return e, nil
}

func (s *Store) finishOne(q *queue, o webhooks.Outcome) {
	d := o.Delivery
	rec := q.recs[d.ID]
	if rec == nil {
		return
	}
	rec.AttemptCount++
	rec.Attempts = append(rec.Attempts, o.Attempt)
	if len(rec.Attempts) > webhooks.KeepAttempts {
		rec.Attempts = rec.Attempts[len(rec.Attempts)-webhooks.KeepAttempts:]
	}
	rec.Status, rec.NextAt = d.Status, d.NextAt
	if d.Status == webhooks.StatusPending {
		q.due[d.ID] = *d.NextAt
		return
	}
	delete(q.due, d.ID)
	q.done = append(q.done, d.ID)
	for len(q.done) > webhooks.KeepDone {
		old := q.done[0]
		q.done = q.done[1:]
		if _, pending := q.due[old]; !pending {
			delete(q.recs, old)
			q.all = slices.DeleteFunc(q.all, func(x string) bool { return x == old })
		}
	}
}

// Disable implements webhooks.Store.
func (s *Store) Disable(_ context.Context, id string, at time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.endpoints[id]
	if !ok {
		return false, notFound("webhook")
	}
	if e.DisabledAt != nil {
		return false, nil
	}
	e.DisabledAt = &at
	s.endpoints[id] = e
	return true, nil
}

// Deliveries implements webhooks.Store.
func (s *Store) Deliveries(_ context.Context, endpoint string, limit int) ([]webhooks.Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[endpoint]
	if q == nil {
		return nil, notFound("webhook")
	}
	var out []webhooks.Delivery
	for i := len(q.all) - 1; i >= 0 && len(out) < limit; i-- {
		out = append(out, *q.recs[q.all[i]])
	}
	return out, nil
}

// Retry implements webhooks.Store.
func (s *Store) Retry(_ context.Context, endpoint, id string, now time.Time) (webhooks.Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[endpoint]
	if q == nil {
		return webhooks.Delivery{}, notFound("webhook")
	}
	rec := q.recs[id]
	if rec == nil {
		return webhooks.Delivery{}, notFound("delivery")
	}
	if _, pending := q.due[id]; !pending {
		q.done = slices.DeleteFunc(q.done, func(x string) bool { return x == id })
	}
	rec.Status, rec.NextAt = webhooks.StatusPending, &now
	q.due[id] = now
	return *rec, nil
}

// Pending implements webhooks.Store.
func (s *Store) Pending(_ context.Context, endpoint string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.queues[endpoint]; q != nil {
		return len(q.due), nil
	}
	return 0, nil
}
