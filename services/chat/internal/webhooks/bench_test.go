package webhooks_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/webhooks"
	"github.com/apistack/platform/services/chat/internal/webhooks/webhookstest"
)

// BenchmarkSendSaturationWithWebhooks measures send saturation (senders
// sending as fast as the service stores, on a real redis-server) while a
// paced sender makes 1,000 messages a second in another channel, with a
// webhook receiving that channel's message.created (1,000 events/s to one
// endpoint) and without the webhook, in alternating rounds of one run. It
// reports the ratio of saturations and the events per second the receiver
// got. Run with -benchtime=1x (docs/benchmarks.md).
func BenchmarkSendSaturationWithWebhooks(b *testing.B) {
	w := newWorld(b, "redis")
	rcv := webhookstest.NewReceiver(b)
	var got atomic.Int64
	rcv.Answer(func(webhookstest.Request) (int, string) { got.Add(1); return http.StatusNoContent, "" })
	const senders, rounds, paced = 8, 3, 1000
	round := 3 * time.Second
	users := make([]chat.User, senders+1)
	for i := range users {
		u, _, err := w.svc.CreateUser(context.Background(), w.admin, chat.CreateUserInput{Name: fmt.Sprintf("sender%d", i)})
		if err != nil {
			b.Fatal(err)
		}
		users[i] = u
	}
	// measure runs the saturating senders in "bench" and the paced sender
	// in "events" for one round; it answers the saturation's sends/s.
	measure := func() float64 {
		var n atomic.Int64
		ctx, cancel := context.WithTimeout(context.Background(), round)
		defer cancel()
		var wg sync.WaitGroup
		for _, u := range users[:senders] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ctx.Err() == nil; i++ {
					if _, err := w.svc.Send(ctx, chat.Fresh(u), chat.SendInput{Channel: "bench", Message: fmt.Sprintf("m%d", i)}); err == nil {
						n.Add(1)
					}
				}
			}()
		}
		// The paced sender: four goroutines of 250 messages a second, so
		// one slow send does not hold the pace back.
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tick := time.NewTicker(10 * time.Millisecond)
				defer tick.Stop()
				for i := 0; ctx.Err() == nil; {
					<-tick.C
					for range paced / 400 {
						i++
						_, _ = w.svc.Send(ctx, chat.Fresh(users[senders]), chat.SendInput{Channel: "events", Message: fmt.Sprintf("e%d-%d", g, i)})
					}
				}
			}()
		}
		wg.Wait()
		return float64(n.Load()) / round.Seconds()
	}
	var without, with, events float64
	for r := range rounds {
		without += measure()
		ep := w.register(rcv.URL, "events", webhooks.MessageCreated)
		stop := w.dispatch(w.store, w.source, fmt.Sprintf("bench-%d", r))
		before := got.Load()
		with += measure()
		events += float64(got.Load()-before) / round.Seconds()
		stop()
		if err := w.store.DeleteEndpoint(context.Background(), ep.ID); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(without/rounds, "sends/s-without")
	b.ReportMetric(with/rounds, "sends/s-with")
	b.ReportMetric(with/without, "ratio")
	b.ReportMetric(events/rounds, "events/s-delivered")
}
