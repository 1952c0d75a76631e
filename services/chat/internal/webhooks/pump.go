package webhooks

import (
	"context"
	"errors"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
)

const (
	// pumpBatch is how many event log entries one read takes; a channel
	// with more waiting is read again in the same round.
	pumpBatch = 500
	// modPage is one moderation log page; maxModPages bound one round
	// (the log keeps at most chat.MaxModLogPerChannel entries).
	modPage     = 200
	maxModPages = chat.MaxModLogPerChannel / modPage
)

// pump, on the replica holding the lease, moves every followed channel's
// new events into the queues of the endpoints that want them.
func (d *Dispatcher) pump(ctx context.Context, eps []Endpoint) error {
	var live []Endpoint
	follow := map[string]bool{}
	platform := false
	for _, e := range eps {
		if e.DisabledAt != nil {
			continue
		}
		live = append(live, e)
		if e.Channel == "" {
			platform = true
		} else {
			follow[e.Channel] = true
		}
	}
	if len(live) == 0 {
		return nil
	}
	held, err := d.o.Store.Lease(ctx, d.o.Owner, d.o.LeaseFor)
	if err != nil || !held {
		return err
	}
	if platform {
		all, err := d.o.Source.Channels(ctx)
		if err != nil {
			return err
		}
		for _, ch := range all {
			follow[ch] = true
		}
	}
	var errs []error
	moved := false
	for ch := range follow {
		n, err := d.pumpChannel(ctx, ch, live)
		if err != nil {
			errs = append(errs, err)
		}
		moved = moved || n > 0
	}
	if moved {
		d.wakeAll()
	}
	return errors.Join(errs...)
}

// pumpChannel enqueues channel's new events; it answers how many
// deliveries it enqueued.
func (d *Dispatcher) pumpChannel(ctx context.Context, channel string, eps []Endpoint) (int, error) {
	var since time.Time // the oldest endpoint's creation: nothing older is wanted
	for i, e := range eps {
		if i == 0 || e.CreatedAt.Before(since) {
			since = e.CreatedAt
		}
	}
	total := 0
	for {
		cur, err := d.o.Store.Cursor(ctx, channel)
		if err != nil {
			return total, err
		}
		var evs []Event
		next := cur
		more := false
		after := chat.Cursor{}
		if cur.Events != "" {
			if after, err = chat.ParseCursor(cur.Events); err != nil {
				after = chat.Cursor{}
			}
		}
		log, err := d.o.Source.ReadEvents(ctx, channel, after, pumpBatch)
		switch {
		case chat.KindOf(err) == chat.KindHistoryGone:
			// The log was trimmed past the cursor or reset: what is gone is
			// gone; start from its end.
			head, herr := d.o.Source.Head(ctx, channel)
			if herr != nil {
				return total, herr
			}
			d.o.Log.WarnContext(ctx, "webhooks: channel history left the cursor; events between are not delivered", "channel", channel, "cursor", cur.Events)
			next.Events = head.String()
		case err != nil:
			return total, err
		default:
			for _, le := range log {
				if ev, ok := FromLogEvent(le); ok {
					evs = append(evs, ev)
				}
				next.Events = le.Cursor.String()
			}
			more = len(log) == pumpBatch
		}
		mods, top, err := d.newModEntries(ctx, channel, cur.ModLog, since)
		if err != nil {
			return total, err
		}
		if top != "" {
			next.ModLog = top
		}
		evs = append(evs, mods...)
		var ds []Delivery
		for _, ev := range evs {
			for _, e := range eps {
				if e.Wants(ev) {
					ds = append(ds, Delivery{ID: ev.ID, Endpoint: e.ID, Type: ev.Type, Body: ev.Body, CreatedAt: ev.At})
				}
			}
		}
		if next == cur {
			return total, nil
		}
		ok, dropped, err := d.o.Store.Enqueue(ctx, d.o.Owner, channel, next, ds, d.o.Now(), MaxQueue)
		if err != nil || !ok {
			return total, err
		}
		if dropped > 0 {
			d.o.Log.WarnContext(ctx, "webhooks: queue full, events dropped", "channel", channel, "dropped", dropped, "max_queue", MaxQueue)
		}
		total += len(ds) - dropped
		if !more {
			return total, nil
		}
	}
}

// newModEntries returns the webhook events of channel's moderation log
// entries after the entry id `after` (all kept ones when empty, not older
// than since), oldest first, and the newest entry's id ("" when none is
// new).
func (d *Dispatcher) newModEntries(ctx context.Context, channel, after string, since time.Time) ([]Event, string, error) {
	var last chat.ModID
	hasLast := false
	if after != "" {
		last, hasLast = chat.ParseModID(after)
	}
	var fresh []chat.ModEntry // newest first
	var before *chat.ModID
	top := ""
pages:
	for range maxModPages {
		page, err := d.o.Source.ModLog(ctx, channel, before, modPage, d.o.Now())
		if err != nil {
			return nil, "", err
		}
		for _, e := range page {
			id, ok := chat.ParseModID(e.ID)
			if !ok || (hasLast && !last.Less(id)) {
				break pages
			}
			if top == "" {
				top = e.ID
			}
			if e.At.Before(since) {
				break pages
			}
			fresh = append(fresh, e)
			before = &id
		}
		if len(page) < modPage {
			break
		}
	}
	out := make([]Event, 0, len(fresh))
	for i := len(fresh) - 1; i >= 0; i-- {
		if ev, ok := FromModEntry(fresh[i]); ok {
			out = append(out, ev)
		}
	}
	return out, top, nil
}
