package realtime_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/realtime"
)

// TestClusterDeliverySurvivesPubSubFaults runs two chat replicas on a
// real Redis Cluster of 3 primaries with a replica each, 50 channels with
// a subscriber on each replica, under a steady load of sends through both
// replicas. (a) The 100 sockets open together, and every one receives
// every message of its channel; (b) after CLIENT KILL TYPE pubsub on every
// node, every socket keeps receiving, and so do sockets on a new channel;
// (c) after a primary fails over to its replica, the same; (d) and after a
// primary dies and its replica is promoted. In the end each
// socket's messages are exactly its channel's stored log after its
// hello's last_id: nothing lost, repeated or out of order. No command of
// the feeds is refused as CROSSSLOT (one SSUBSCRIBE per slot).
func TestClusterDeliverySurvivesPubSubFaults(t *testing.T) {
	c := redistest.StartClusterWithReplicas(t, 3, 1)
	a, b := twoReplicas(t, replicaConfig{redisURL: c.URL(), publicRead: true, opts: realtime.Options{Limits: &realtime.Limits{}}})
	crossSlot := c.ErrorStat(t, "CROSSSLOT")

	const channels = 50
	names := make([]string, channels)
	for i := range names {
		names[i] = fmt.Sprintf("f%d", i)
	}
	load := startSendLoad(t, []*replica{a, b}, names)
	defer load.stop()
	load.waitSent(t, 20) // sends run before the sockets open

	// (a) 100 sockets open at once: one per channel on each replica.
	subs := openTogether(t, []*replica{a, b}, names)
	everySocketReceivesNewMessages(t, load, subs, "the sockets opened together")

	// (b) Every Pub/Sub connection of the cluster is closed: each
	// replica's feed notices, counts it, and subscribes again.
	if n := c.KillPubSub(t); n < 2 {
		t.Fatalf("CLIENT KILL TYPE pubsub closed %d connections; each replica's feed has at least one", n)
	}
	for _, r := range []*replica{a, b} {
		waitUntil(t, "chat_feed_errors_total counts the closed connections on "+r.base, func() bool {
			return metric(t, r.base, "chat_feed_errors_total") > 0
		})
	}
	fresh := openTogether(t, []*replica{a, b}, []string{"fresh"})
	load.add("fresh")
	subs = append(subs, fresh...)
	everySocketReceivesNewMessages(t, load, subs, "CLIENT KILL TYPE pubsub")

	// (c) A primary that owns channels fails over to its replica.
	primary := c.Primaries(t)[0]
	c.Failover(t, primary)
	everySocketReceivesNewMessages(t, load, subs, "the failover of "+primary.Addr())

	// (d) A primary dies; after the cluster node timeout its replica takes
	// over. The load pauses for the moment of the kill only, until the
	// replicas have every write (WAIT): replication is asynchronous, and
	// what a primary acknowledged and took with it is not the feed's
	// loss.
	load.pause()
	victim := c.Primaries(t)[1]
	waitReplicated(t, c)
	load.resume()
	c.KillPrimary(t, victim)
	everySocketReceivesNewMessages(t, load, subs, "the death of "+victim.Addr())

	load.stop()
	// Whatever was stored (acknowledged or not), every socket gets it
	// once, in order, from its log.
	for _, s := range subs {
		want := storedAfter(t, a, s.channel, s.lastID())
		waitUntil(t, fmt.Sprintf("socket on %s has the %d stored messages", s.channel, len(want)), func() bool {
			return len(s.ids()) >= len(want)
		})
		if got := s.ids(); !slices.Equal(got, want) {
			t.Fatalf("socket on %s (from %v) received %v,\nthe log has %v", s.channel, s.lastID(), got, want)
		}
	}
	for id, ch := range load.acked() {
		if !slices.Contains(storedAfter(t, a, ch, chat.Cursor{}), id) {
			t.Fatalf("acknowledged message %d is not in channel %s's log", id, ch)
		}
	}
	if n := c.ErrorStat(t, "CROSSSLOT"); n != crossSlot {
		t.Fatalf("errorstat_CROSSSLOT went from %d to %d", crossSlot, n)
	}
}

// sendLoad sends messages round-robin over its channels through each
// replica in turn, from one goroutine per replica, until stopped, and
// records what was acknowledged.
type sendLoad struct {
	paused   sync.RWMutex // each send holds it to read; pause holds it to write
	mu       sync.Mutex
	channels []string
	ack      map[int64]string // message id -> channel
	last     map[string]int64 // channel -> last acknowledged id
	sent     atomic.Int64
	done     chan struct{}
	wg       sync.WaitGroup
	once     sync.Once
}

func startSendLoad(t *testing.T, replicas []*replica, channels []string) *sendLoad {
	l := &sendLoad{channels: slices.Clone(channels), ack: map[int64]string{}, last: map[string]int64{}, done: make(chan struct{})}
	for i, r := range replicas {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for n := i; ; n++ {
				select {
				case <-l.done:
					return
				case <-time.After(4 * time.Millisecond):
				}
				l.mu.Lock()
				ch := l.channels[n%len(l.channels)]
				l.mu.Unlock()
				l.paused.RLock()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				res, err := r.svc.Send(ctx, chat.Held(r.admin), chat.SendInput{Channel: ch, Message: fmt.Sprint("m", n)})
				cancel()
				l.paused.RUnlock()
				if err != nil {
					continue // not acknowledged (a failover refuses writes a moment)
				}
				l.mu.Lock()
				l.ack[res.Message.ID] = ch
				l.last[ch] = max(l.last[ch], res.Message.ID)
				l.mu.Unlock()
				l.sent.Add(1)
			}
		}()
	}
	t.Cleanup(l.stop)
	return l
}

// pause waits for the sends under way and holds the others until resume.
func (l *sendLoad) pause()  { l.paused.Lock() }
func (l *sendLoad) resume() { l.paused.Unlock() }

func (l *sendLoad) add(channel string) {
	l.mu.Lock()
	l.channels = append(l.channels, channel)
	l.mu.Unlock()
}

func (l *sendLoad) stop() {
	l.once.Do(func() { close(l.done) })
	l.wg.Wait()
}

// waitSent waits until n more sends were acknowledged.
func (l *sendLoad) waitSent(t *testing.T, n int64) {
	t.Helper()
	target := l.sent.Load() + n
	waitUntil(t, fmt.Sprintf("%d more sends acknowledged", n), func() bool { return l.sent.Load() >= target })
}

// lastAcked is the last acknowledged message id of each channel.
func (l *sendLoad) lastAcked() map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int64, len(l.last))
	for ch, id := range l.last {
		out[ch] = id
	}
	return out
}

func (l *sendLoad) acked() map[int64]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[int64]string, len(l.ack))
	for id, ch := range l.ack {
		out[id] = ch
	}
	return out
}

// everySocketReceivesNewMessages waits until each socket has received a
// message of its channel acknowledged after now, whatever happened just
// before (what), so delivery goes on on every socket.
func everySocketReceivesNewMessages(t *testing.T, l *sendLoad, subs []*collected, what string) {
	t.Helper()
	before := l.lastAcked()
	l.waitSent(t, int64(4*len(l.channels))) // a few sends on every channel
	after := l.lastAcked()
	for _, s := range subs {
		target := after[s.channel]
		if target <= before[s.channel] {
			t.Fatalf("no send was acknowledged on %s after %s", s.channel, what)
		}
		waitUntil(t, fmt.Sprintf("socket on %s receives message %d after %s", s.channel, target, what), func() bool {
			ids := s.ids()
			return len(ids) > 0 && ids[len(ids)-1] >= target
		})
	}
}

// collected is a socket whose message ids a goroutine records.
type collected struct {
	*client
	channel string
	mu      sync.Mutex
	from    chat.Cursor
	got     []int64
}

// openTogether opens one socket per channel on each replica, all at once,
// and waits for their hellos.
func openTogether(t *testing.T, replicas []*replica, channels []string) []*collected {
	t.Helper()
	var out []*collected
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, len(replicas)*len(channels))
	for _, r := range replicas {
		for _, ch := range channels {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cl, _, err := tryDial(t, r.base, "channel="+ch, nil)
				if err != nil {
					errs <- fmt.Errorf("dial %s on %s: %w", ch, r.base, err)
					return
				}
				s := &collected{client: cl, channel: ch}
				mu.Lock()
				out = append(out, s)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, s := range out {
		h := s.hello()
		s.from = h.LastID
		go s.collect()
	}
	return out
}

func (s *collected) collect() {
	for {
		select {
		case e := <-s.events:
			if e.Type != string(chat.EventMessage) {
				continue
			}
			m := e.msg(s.t)
			s.mu.Lock()
			s.got = append(s.got, m.ID)
			s.mu.Unlock()
		case <-s.closed:
			return
		}
	}
}

func (s *collected) ids() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

func (s *collected) lastID() chat.Cursor {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.from
}

// storedAfter lists the ids of the messages in channel's log after from.
func storedAfter(t *testing.T, r *replica, channel string, from chat.Cursor) []int64 {
	t.Helper()
	var ids []int64
	for {
		evs, err := r.svc.Events().ReadEvents(context.Background(), channel, from, 1000)
		if err != nil {
			t.Fatalf("read %s's log: %v", channel, err)
		}
		if len(evs) == 0 {
			return ids
		}
		for _, ev := range evs {
			if ev.Type == chat.EventMessage {
				ids = append(ids, ev.Message.ID)
			}
		}
		from = evs[len(evs)-1].Cursor
	}
}

// waitReplicated waits until every primary's replicas have all its
// writes (WAIT 1).
func waitReplicated(t *testing.T, c *redistest.Cluster) {
	t.Helper()
	for _, p := range c.Primaries(t) {
		rdb := redis.NewClient(&redis.Options{Addr: p.Addr()})
		n, err := rdb.Do(context.Background(), "WAIT", 1, int(wait/time.Millisecond)).Int()
		_ = rdb.Close()
		if err != nil || n < 1 {
			t.Fatalf("WAIT on %s: %d replicas have its writes, %v", p.Addr(), n, err)
		}
	}
}

// waitUntil polls cond until it holds, failing the test after wait.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
