package redisstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/services/chat/internal/chat"
)

// TestKeySlotIsRedisClusterSlot: keySlot agrees with the specification's
// examples and with CLUSTER KEYSLOT of a real node on random keys, hash
// tags and brace corner cases included.
func TestKeySlotIsRedisClusterSlot(t *testing.T) {
	if got := crc16("123456789"); got != 0x31C3 {
		t.Fatalf("crc16(123456789) = %#x, want 0x31c3 (CRC-16/XMODEM)", got)
	}
	for key, want := range map[string]uint16{"foo": 12182, "bar": 5061, "{user1000}.following": keySlot("user1000"),
		"foo{}{bar}": crc16("foo{}{bar}") % 16384, "foo{{bar}}zap": keySlot("{bar"), "foo{bar}{zap}": keySlot("bar")} {
		if got := keySlot(key); got != want {
			t.Errorf("keySlot(%q) = %d, want %d", key, got, want)
		}
	}
	c := redistest.StartCluster(t, 3)
	rdb := redis.NewClient(&redis.Options{Addr: c.Nodes[0].Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	const alphabet = "ab{}:x7-_"
	for i := 0; i < 500; i++ {
		b := make([]byte, 1+rand.IntN(12))
		for j := range b {
			b[j] = alphabet[rand.IntN(len(alphabet))]
		}
		key := string(b)
		if i%2 == 0 {
			key = "chat:{ch:" + key + "}:live"
		}
		want, err := rdb.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := keySlot(key); int64(got) != want {
			t.Fatalf("keySlot(%q) = %d, CLUSTER KEYSLOT says %d", key, got, want)
		}
	}
}

// TestLiveKeyGroupsAreOneSlotEach: on a Cluster every group of live keys
// (one SSUBSCRIBE) is in one hash slot, as Redis refuses a command whose
// keys span slots (CROSSSLOT); on one server they go feedBatch at a time.
// Every channel is in exactly one group either way.
func TestLiveKeyGroupsAreOneSlotEach(t *testing.T) {
	channels := make([]string, 1200)
	for i := range channels {
		channels[i] = fmt.Sprint("c", i)
	}
	channels = append(channels, make([]string, 600)...)
	for i := 1200; i < len(channels); i++ {
		channels[i] = "same" // one slot, more keys than a batch: split
	}
	for _, cluster := range []bool{false, true} {
		var rdb redis.UniversalClient = redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
		if cluster {
			rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
		}
		s := New(rdb, Options{})
		seen := 0
		for _, g := range s.liveKeyGroups(channels) {
			if len(g) == 0 || len(g) > feedBatch {
				t.Fatalf("cluster %v: a group of %d keys", cluster, len(g))
			}
			for _, k := range g {
				if cluster && keySlot(k) != keySlot(g[0]) {
					t.Fatalf("%s and %s (slots %d, %d) in one group", g[0], k, keySlot(g[0]), keySlot(k))
				}
			}
			seen += len(g)
		}
		if seen != len(channels) {
			t.Fatalf("cluster %v: %d keys in groups, want %d", cluster, seen, len(channels))
		}
		_ = rdb.Close()
	}
}

// notices records what a feed hands its owner.
type notices struct {
	mu       sync.Mutex
	channels map[string]int // notices without an event, by channel
	failures []chat.FeedFailure
}

func (n *notices) record(x chat.Notice) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case x.Failure != nil:
		n.failures = append(n.failures, *x.Failure)
	case x.Channel != "" && x.Event == nil:
		n.channels[x.Channel]++
	}
}

func (n *notices) confirmed(ch string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.channels[ch] > 0
}

func (n *notices) failed(reason, text string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, f := range n.failures {
		if f.Reason == reason && strings.Contains(f.Err.Error(), text) {
			return true
		}
	}
	return false
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFeedReportsRefusedSubscription: a subscription the server refuses
// with an error reply (here an ACL that does not allow the channel) is
// reported as a subscribe failure, with the server's reason, while the
// allowed channel is subscribed.
func TestFeedReportsRefusedSubscription(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = admin.Close() })
	err := admin.Do(ctx, "ACL", "SETUSER", "feed", "on", ">pw", "~*", "resetchannels",
		"&acl:{users}:revoked", "&acl:{ch:allowed}:live", "+@all").Err()
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "feed", Password: "pw"})
	t.Cleanup(func() { _ = rdb.Close() })
	s := New(rdb, Options{Prefix: "acl:"})
	got := &notices{channels: map[string]int{}}
	f, err := s.Subscribe(got.record)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	if err := f.Watch(ctx, "allowed"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the allowed channel's confirmation", func() bool { return got.confirmed("allowed") })
	if err := f.Watch(ctx, "refused"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a subscribe failure saying NOPERM", func() bool { return got.failed(chat.FeedFailSubscribe, "NOPERM") })
}

// TestFeedWatchesHealthyPrimariesWhileOneHangs: while the connection to
// one primary hangs (the process is stopped: the dial succeeds, the
// handshake gets no answer), channels on the other primaries are
// subscribed and confirmed; the hung one is too once its primary answers.
// No lock of the feed is held across a dial.
func TestFeedWatchesHealthyPrimariesWhileOneHangs(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	ctx := context.Background()
	for _, n := range c.Nodes { // SSUBSCRIBE and appends go on while a primary is out
		cl := redis.NewClient(&redis.Options{Addr: n.Addr()})
		if err := cl.ConfigSet(ctx, "cluster-require-full-coverage", "no").Err(); err != nil {
			t.Fatal(err)
		}
		_ = cl.Close()
	}
	// A handshake with the stopped primary waits a minute for its answer.
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ReadTimeout: time.Minute, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	s := New(rdb, Options{Prefix: "hang:"})
	owner := func(ch string) string {
		n, err := rdb.MasterForKey(ctx, s.ck(ch, "live"))
		if err != nil {
			t.Fatal(err)
		}
		return n.Options().Addr
	}
	hung := c.Nodes[0].Addr()
	var stuck string
	var healthy []string
	for i := 0; stuck == "" || len(healthy) < 10; i++ {
		ch := fmt.Sprint("h", i)
		if owner(ch) == hung {
			if stuck == "" {
				stuck = ch
			}
		} else if len(healthy) < 10 {
			healthy = append(healthy, ch)
		}
	}
	got := &notices{channels: map[string]int{}}
	f, err := s.Subscribe(got.record)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	c.Nodes[0].Pause()
	if err := f.Watch(ctx, stuck); err != nil {
		t.Fatal(err)
	}
	// The stuck channel's shard starts dialing; the others are watched
	// after it, from another goroutine so that a Watch that blocks fails
	// the wait below rather than the test's goroutine.
	go func() {
		for _, ch := range healthy {
			_ = f.Watch(ctx, ch)
		}
	}()
	for _, ch := range healthy {
		waitFor(t, "the confirmation of "+ch+" while a primary hangs", func() bool { return got.confirmed(ch) })
	}
	if got.confirmed(stuck) {
		t.Fatalf("%s confirmed while its primary is stopped", stuck)
	}
	c.Nodes[0].Resume()
	waitFor(t, "the confirmation of "+stuck+" once its primary answers", func() bool { return got.confirmed(stuck) })
}

// TestFeedChurnLeavesExactlyTheWatchedSubscriptions: channels watched and
// unwatched from several goroutines at once, while every Pub/Sub
// connection of the cluster is killed again and again, end with exactly
// the watched channels subscribed on the cluster (no stray subscription
// of an unwatched channel, none missing), and each of them delivers.
func TestFeedChurnLeavesExactlyTheWatchedSubscriptions(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	ctx := context.Background()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = rdb.Close() })
	s := New(rdb, Options{Prefix: "churn:"})
	var mu sync.Mutex
	events := map[string]int{} // notices with an event, by channel
	got := &notices{channels: map[string]int{}}
	f, err := s.Subscribe(func(n chat.Notice) {
		if n.Event != nil {
			mu.Lock()
			events[n.Channel]++
			mu.Unlock()
		}
		got.record(n)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	const channels, held = 40, 10
	name := func(i int) string { return fmt.Sprint("c", i) }
	for i := 0; i < held; i++ {
		if err := f.Watch(ctx, name(i)); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ch := name(rand.IntN(channels))
				_ = f.Watch(ctx, ch)
				if rand.IntN(2) == 0 {
					time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
				}
				_ = f.Unwatch(ctx, ch)
			}
		}()
	}
	for k := 0; k < 5; k++ {
		time.Sleep(300 * time.Millisecond)
		c.KillPubSub(t)
	}
	close(stop)
	wg.Wait()

	want := map[string]bool{}
	for i := 0; i < held; i++ {
		want[s.ck(name(i), "live")] = true
	}
	var have []string
	waitFor(t, "exactly the held channels subscribed on the cluster", func() bool {
		have = have[:0]
		for _, n := range c.Nodes {
			cl := redis.NewClient(&redis.Options{Addr: n.Addr()})
			keys, err := cl.PubSubShardChannels(ctx, "churn:*").Result()
			_ = cl.Close()
			if err != nil {
				return false
			}
			have = append(have, keys...)
		}
		if len(have) != len(want) {
			return false
		}
		for _, k := range have {
			if !want[k] {
				return false
			}
		}
		return true
	})
	for i := 0; i < held; i++ {
		if _, err := s.AppendMessage(ctx, chat.Message{Channel: name(i), Text: "after", CreatedAt: time.Now()}, chat.Once{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < held; i++ {
		waitFor(t, "a live notice on "+name(i), func() bool {
			mu.Lock()
			defer mu.Unlock()
			return events[name(i)] > 0
		})
	}
}
