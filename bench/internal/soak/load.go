package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/apistack/platform/bench/internal/netguard"
)

// keepRecent is how many stored message ids per channel the deletes pick from.
const keepRecent = 32

// send posts cfg.Rate messages a second, round-robin over the channels, each by a
// random user; a user under a ban or timeout is refused (403), which is expected.
func (r *runner) send(ctx context.Context) {
	jobs := make(chan int, r.cfg.Senders)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(jobs)
	for range r.cfg.Senders {
		wg.Go(func() {
			for n := range jobs {
				r.sendOne(ctx, n)
			}
		})
	}
	// Paced by the clock, not by ticks: a ticker drops the ticks a busy
	// machine does not schedule this goroutine for, and the rate with them.
	start := time.Now()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for n := 0; ; {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			for due := int(now.Sub(start).Seconds() * r.cfg.Rate); n < due; n++ {
				select {
				case jobs <- n:
				default:
					// Every sender waits for an answer: this message is not
					// sent, and the check of the rate says so at the end.
					r.skipped.Add(1)
				}
			}
		}
	}
}

func (r *runner) sendOne(ctx context.Context, n int) {
	ch := n % r.cfg.Channels
	u := r.users[rand.N(len(r.users))]
	status, id, err := r.api.send(ctx, u, r.channel(ch), fmt.Sprintf("soak message %d from %s", n, u.ID))
	switch {
	case ctx.Err() != nil:
	case err != nil:
		r.fail("send: " + netguard.ErrorKind(err))
	case status == http.StatusCreated:
		r.sent.Add(1)
		r.mu.Lock()
		rec := append(r.recent[ch], id)
		if len(rec) > keepRecent {
			rec = rec[len(rec)-keepRecent:]
		}
		r.recent[ch] = rec
		r.mu.Unlock()
	case status == http.StatusForbidden:
		r.refused.Add(1)
	default:
		r.fail(fmt.Sprintf("send: status %d", status))
	}
}

// moderate takes one action per cfg.ModEvery, in turn: a timeout of a few
// seconds in one channel, a ban or the lift of the oldest ban (at most a quarter
// of the users banned at once), the deletion of a recent message.
func (r *runner) moderate(ctx context.Context) {
	t := time.NewTicker(r.cfg.ModEvery)
	defer t.Stop()
	var banned []int // indexes into r.users, oldest first
	for k := 0; ; k++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var (
			status int
			err    error
			what   string
		)
		switch k % 3 {
		case 0:
			what = "timeout"
			status, err = r.api.timeout(ctx, r.users[rand.N(len(r.users))], r.channel(rand.N(r.cfg.Channels)), 2+rand.N(5))
		case 1:
			if len(banned) >= max(1, len(r.users)/4) || (len(banned) > 0 && rand.N(2) == 0) {
				what = "unban"
				status, err = r.api.unban(ctx, r.users[banned[0]])
				banned = banned[1:]
			} else {
				what = "ban"
				i := r.notBanned(banned)
				status, err = r.api.ban(ctx, r.users[i])
				banned = append(banned, i)
			}
		case 2:
			ch := rand.N(r.cfg.Channels)
			r.mu.Lock()
			rec := r.recent[ch]
			var id int64
			if len(rec) > 0 {
				j := rand.N(len(rec))
				id = rec[j]
				r.recent[ch] = append(rec[:j], rec[j+1:]...)
			}
			r.mu.Unlock()
			if id == 0 {
				continue
			}
			what = "delete"
			status, err = r.api.deleteMessage(ctx, r.channel(ch), id)
		}
		switch {
		case ctx.Err() != nil:
		case err != nil:
			r.fail(what + ": " + netguard.ErrorKind(err))
		case status/100 == 2:
			r.moderated.Add(1)
		case status == http.StatusNotFound || status == http.StatusConflict:
			// The message left the history window, or the user was already
			// banned: the action is a no-op, not a failure.
		default:
			r.fail(fmt.Sprintf("%s: status %d", what, status))
		}
	}
}

// notBanned picks a random user that is not in banned.
func (r *runner) notBanned(banned []int) int {
	for {
		i := rand.N(len(r.users))
		found := false
		for _, b := range banned {
			found = found || b == i
		}
		if !found {
			return i
		}
	}
}
