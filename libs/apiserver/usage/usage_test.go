package usage_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/libs/apiserver/testkit"
	"github.com/apistack/platform/libs/apiserver/usage"
)

var ctx = context.Background()

func TestCounterCountsPerPrincipalAndDay(t *testing.T) {
	clock := testkit.NewClock(time.Date(2026, 11, 27, 23, 59, 0, 0, time.UTC))
	c := usage.New(usage.Config{Now: clock.Now})
	for range 3 {
		_ = c.Add("acme", true)
	}
	_ = c.Add("acme", false)
	_ = c.Add("globex", true)
	// Read before and after a flush: the pending counts are part of the answer.
	for _, flush := range []bool{false, true} {
		if flush {
			if err := c.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		got, err := c.Today(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		if got != (usage.Counts{Day: "2026-11-27", Allowed: 3, Limited: 1}) {
			t.Errorf("flushed %v: acme = %+v", flush, got)
		}
	}
	clock.Advance(2 * time.Minute) // the next UTC day starts at zero
	_ = c.Add("acme", true)
	got, _ := c.Today(ctx, "acme")
	if got != (usage.Counts{Day: "2026-11-28", Allowed: 1}) {
		t.Errorf("next day: %+v", got)
	}
	prev, _ := c.Day(ctx, "acme", clock.Now().Add(-24*time.Hour))
	if prev.Allowed != 3 {
		t.Errorf("previous day still readable: %+v", prev)
	}
}

func TestCounterRefusesLongIDsAndBoundsPending(t *testing.T) {
	clock := testkit.NewClock(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	c := usage.New(usage.Config{MaxPending: 2, Now: clock.Now})
	if err := c.Add(strings.Repeat("x", usage.MaxIDLength+1), true); !errors.Is(err, usage.ErrIDTooLong) {
		t.Errorf("long id: %v", err)
	}
	for _, id := range []string{"a", "b", "c", "c", "a"} {
		_ = c.Add(id, true)
	}
	if c.Dropped() != 2 {
		t.Errorf("dropped = %d, want 2 (the third principal's requests)", c.Dropped())
	}
	if got, _ := c.Today(ctx, "a"); got.Allowed != 2 {
		t.Errorf("a = %+v", got)
	}
	// A flush the same day keeps the principals (their entries count on).
	_ = c.Flush(ctx)
	_ = c.Add("c", true)
	if got, _ := c.Today(ctx, "c"); got.Allowed != 0 {
		t.Errorf("c after a flush the same day = %+v, want still dropped", got)
	}
	// Two days on, a flush frees the room.
	clock.Advance(48 * time.Hour)
	_ = c.Flush(ctx)
	_ = c.Add("c", true)
	if got, _ := c.Today(ctx, "c"); got.Allowed != 1 {
		t.Errorf("c two days on = %+v", got)
	}
	if got, _ := c.Day(ctx, "a", clock.Now().Add(-48*time.Hour)); got.Allowed != 2 {
		t.Errorf("a's counts of two days ago, flushed = %+v", got)
	}
}

type failingStore struct {
	usage.Store
	fail bool
}

func (f *failingStore) Add(ctx context.Context, day string, d map[string]usage.Counts) error {
	if f.fail {
		return errors.New("down")
	}
	return f.Store.Add(ctx, day, d)
}

func TestCounterKeepsCountsWhenTheStoreFails(t *testing.T) {
	st := &failingStore{Store: usage.NewMemory(0), fail: true}
	c := usage.New(usage.Config{Store: st})
	_ = c.Add("acme", true)
	if err := c.Flush(ctx); err == nil {
		t.Fatal("flush to a failing store reported no error")
	}
	_ = c.Add("acme", true)
	st.fail = false
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Get(ctx, usage.DayString(time.Now()), "acme"); got.Allowed != 2 {
		t.Errorf("store has %+v, want both requests", got)
	}
}

// TestRedisStoreSharedAndExpiring: two counters (two replicas) on one real Redis add up;
// the day is one hash with a TTL, whatever the number of principals.
func TestRedisStoreSharedAndExpiring(t *testing.T) {
	rds := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: rds.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	a := usage.New(usage.Config{Store: usage.NewRedis(client, "apiserver:test:", time.Hour)})
	b := usage.New(usage.Config{Store: usage.NewRedis(client, "apiserver:test:", time.Hour)})
	for i := range 50 {
		_ = a.Add("acme", true)
		_ = b.Add("acme", i%2 == 0)
		_ = b.Add("p"+string(rune('a'+i%26)), true)
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := a.Today(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if got.Allowed != 75 || got.Limited != 25 {
		t.Errorf("acme across two replicas = %+v, want 75 allowed, 25 limited", got)
	}
	keys, err := client.Keys(ctx, "apiserver:test:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 {
		t.Fatalf("keys = %v, want one hash for the day", keys)
	}
	if ttl := client.TTL(ctx, keys[0]).Val(); ttl <= 0 || ttl > time.Hour {
		t.Errorf("TTL of %s = %s, want (0, 1h]", keys[0], ttl)
	}
	// Close flushes what is pending.
	_ = a.Add("late", true)
	if err := a.Close(ctx, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Today(ctx, "late"); got.Allowed != 1 {
		t.Errorf("late = %+v after Close", got)
	}
}

// TestCounterConcurrentAddAndFlush: increments made while flushes run are all written
// once, none lost or doubled (run with -race).
func TestCounterConcurrentAddAndFlush(t *testing.T) {
	st := usage.NewMemory(0)
	c := usage.New(usage.Config{Store: st})
	// A flusher that keeps going until the adders are done, and four
	// adders at once that start once it has flushed, so adds and flushes
	// overlap for the whole run.
	flushing, added, flushed := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(flushed)
		for i := 0; ; i++ {
			_ = c.Flush(ctx)
			if i == 0 {
				close(flushing)
			}
			select {
			case <-added:
				return
			default:
			}
		}
	}()
	<-flushing
	var adders sync.WaitGroup
	for range 4 {
		adders.Go(func() {
			for range 5000 {
				_ = c.Add("acme", true)
			}
		})
	}
	adders.Wait()
	close(added)
	<-flushed
	_ = c.Flush(ctx)
	if got, _ := st.Get(ctx, usage.DayString(time.Now()), "acme"); got.Allowed != 20000 {
		t.Errorf("store has %d, want 20000", got.Allowed)
	}
}
