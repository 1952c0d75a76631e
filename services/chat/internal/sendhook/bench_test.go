package sendhook_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/libs/apiserver/testkit"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/redisstore"
	"github.com/apistack/platform/services/chat/internal/sendhook"
	"github.com/apistack/platform/services/chat/internal/webhooks"
	"github.com/apistack/platform/services/chat/internal/webhooks/webhookstest"
)

// BenchmarkSendP99WithHook measures send latency on a real redis-server
// with a send hook that answers in 1 ms and without one, in alternating
// rounds of one run (two services on one store), at a moderate load: 4
// senders, each sending one message every 5 ms. It reports both p99s and
// their difference. Run with -benchtime=1x (docs/benchmarks.md).
func BenchmarkSendP99WithHook(b *testing.B) {
	srv := redistest.Start(b)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	b.Cleanup(func() { _ = rdb.Close() })
	store := redisstore.New(rdb, redisstore.Options{History: 1000})
	rcv := webhookstest.NewReceiver(b)
	rcv.Answer(func(webhookstest.Request) (int, string) {
		time.Sleep(time.Millisecond)
		return http.StatusOK, `{"action":"allow"}`
	})
	secret, _ := webhooks.NewSecret()
	hook, err := sendhook.New(rcv.URL, secret, time.Second)
	if err != nil {
		b.Fatal(err)
	}
	plain := chat.NewService(store, chat.Options{Logger: testkit.Logger()})
	hooked := chat.NewService(store, chat.Options{Logger: testkit.Logger(), SendHook: hook})
	admin, err := plain.Bootstrap(context.Background(), "sendhook-bench-admin-token-01")
	if err != nil {
		b.Fatal(err)
	}
	const senders, rounds = 4, 3
	round := 3 * time.Second
	users := make([]chat.User, senders)
	for i := range users {
		if users[i], _, err = plain.CreateUser(context.Background(), admin, chat.CreateUserInput{Name: fmt.Sprintf("s%d", i)}); err != nil {
			b.Fatal(err)
		}
	}
	measure := func(svc *chat.Service) []time.Duration {
		var mu sync.Mutex
		var lat []time.Duration
		ctx, cancel := context.WithTimeout(context.Background(), round)
		defer cancel()
		var wg sync.WaitGroup
		for _, u := range users {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tick := time.NewTicker(5 * time.Millisecond)
				defer tick.Stop()
				for i := 0; ; i++ {
					select {
					case <-ctx.Done():
						return
					case <-tick.C:
					}
					start := time.Now()
					if _, err := svc.Send(context.Background(), chat.Fresh(u), chat.SendInput{Channel: "bench", Message: fmt.Sprintf("m%d", i)}); err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					lat = append(lat, time.Since(start))
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return lat
	}
	var without, with []time.Duration
	for range rounds {
		without = append(without, measure(plain)...)
		with = append(with, measure(hooked)...)
	}
	p99 := func(ls []time.Duration) time.Duration {
		slices.Sort(ls)
		return ls[len(ls)*99/100]
	}
	pw, ph := p99(without), p99(with)
	b.ReportMetric(float64(pw.Microseconds())/1000, "p99-ms-without")
	b.ReportMetric(float64(ph.Microseconds())/1000, "p99-ms-with-hook")
	b.ReportMetric(float64((ph-pw).Microseconds())/1000, "p99-ms-added")
	b.ReportMetric(float64(len(with)), "sends-with")
}
