package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/apistack/platform/services/chat/internal/chat"
)

var _ chat.FeedSource = (*Store)(nil)

// Feed timing: the feed pings each connection every feedPing and gives it
// up when nothing (not even the pong) came for feedSilence, so a peer that
// vanished without closing is noticed in seconds, not at the next TCP
// timeout. A connection that failed is opened again after a backoff that
// starts at feedRetry and doubles up to feedRetryMax.
const (
	feedPing     = 5 * time.Second
	feedSilence  = 15 * time.Second
	feedBatch    = 500 // most channels in one SSUBSCRIBE or SUNSUBSCRIBE
	feedRetry    = 100 * time.Millisecond
	feedRetryMax = 5 * time.Second
)

// Subscribe implements chat.FeedSource. Every script that appends to a
// channel's stream also SPUBLISHes the entry on the channel's "live" shard
// channel (see liveNotice), which lives in the channel's hash slot. The
// feed holds one Pub/Sub connection per Redis primary that owns a watched
// channel (one in all on a single server, at most one per primary on a
// Cluster), whatever the number of channels, plus one for revocations;
// Redis sends nothing for the channels it does not watch. After any
// failure a connection is opened again, its channels placed again on the
// primaries that own them now (a failover or a resharding moves slots),
// and, through the confirmations, every watched channel reads its stream:
// nothing appended while a connection was down is skipped. Failures are
// reported to fn as notices with a Failure, each time they happen.
//
// Why sharded Pub/Sub (SPUBLISH): a Cluster relays a classic PUBLISH to
// every node over its cluster bus, a hop measured at p99 33 ms between two
// primaries (0.44 ms on one node); a shard message is delivered by the
// primary that ran the script, to the connections subscribed there.
func (s *Store) Subscribe(fn func(chat.Notice)) (chat.Feed, error) {
	if fn == nil {
		return nil, fmt.Errorf("redisstore: a notice handler is required")
	}
	switch s.rdb.(type) {
	case *redis.Client, *redis.ClusterClient:
	default:
		return nil, fmt.Errorf("%w, not %T", errUnsupportedClient, s.rdb)
	}
	f := &redisFeed{s: s, fn: fn, watched: map[string]int{}, placed: map[string]*shard{},
		shards: map[string]*shard{}, unplaced: map[string]struct{}{}, kick: make(chan struct{}, 1)}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.wg.Add(2)
	go func() {
		defer f.wg.Done()
		f.revocations()
	}()
	go func() {
		defer f.wg.Done()
		f.place()
	}()
	return f, nil
}

var errUnsupportedClient = errors.New("redisstore: live delivery needs a single-server, Sentinel or Cluster client")

// liveNode is the server that owns channel's live shard channel: the
// primary of its slot on a Cluster (from the client's slot map, which a
// failover or resharding makes stale until it reloads), else the one
// server. addr names it among the feed's shards.
func (s *Store) liveNode(ctx context.Context, channel string) (addr string, node *redis.Client, err error) {
	switch c := s.rdb.(type) {
	case *redis.ClusterClient:
		n, err := c.MasterForKey(ctx, s.ck(channel, "live"))
		if err != nil {
			return "", nil, err
		}
		return n.Options().Addr, n, nil
	case *redis.Client:
		return "", c, nil
	default:
		return "", nil, fmt.Errorf("%w, not %T", errUnsupportedClient, s.rdb)
	}
}

// reloadRoutes asks a Cluster client to read the slot map again (in the
// background); a placement after it sees the primaries of now.
func (s *Store) reloadRoutes() {
	if c, ok := s.rdb.(*redis.ClusterClient); ok {
		c.ReloadState(context.Background())
	}
}

// liveKeyGroups turns channels into their live keys, grouped so that each
// group is one SSUBSCRIBE (or SUNSUBSCRIBE): a Cluster refuses a command
// whose keys are in different hash slots (CROSSSLOT), so there a group
// holds one slot's keys; one server takes any mix. No group holds more
// than feedBatch keys.
func (s *Store) liveKeyGroups(channels []string) [][]string {
	var groups [][]string
	add := func(keys []string) {
		for len(keys) > 0 {
			n := min(feedBatch, len(keys))
			groups = append(groups, keys[:n:n])
			keys = keys[n:]
		}
	}
	if !s.cluster {
		keys := make([]string, len(channels))
		for i, ch := range channels {
			keys[i] = s.ck(ch, "live")
		}
		add(keys)
		return groups
	}
	bySlot := map[uint16][]string{}
	var slots []uint16 // in first-seen order, so the writes are too
	for _, ch := range channels {
		k := s.ck(ch, "live")
		slot := keySlot(k)
		if _, ok := bySlot[slot]; !ok {
			slots = append(slots, slot)
		}
		bySlot[slot] = append(bySlot[slot], k)
	}
	for _, slot := range slots {
		add(bySlot[slot])
	}
	return groups
}

// redisFeed is the Redis engine's feed. Its state is under mu, which is
// never held across a network call: dials, subscription writes and
// slot-map reads happen outside it, so a server that does not answer holds
// up only the channels it owns.
type redisFeed struct {
	s      *Store
	fn     func(chat.Notice)
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the revocations, the placer and the shards
	kick   chan struct{}  // wakes the placer

	mu       sync.Mutex
	watched  map[string]int      // channel -> watch count
	placed   map[string]*shard   // watched channels and the connection that carries them
	unplaced map[string]struct{} // watched channels waiting for the placer
	shards   map[string]*shard   // by the address of their server
	revoke   *redis.PubSub       // the revocations' connection; nil while reconnecting
}

// shard is one server's Pub/Sub connection (opened again after each
// failure) and the watched channels it carries. Its goroutine (runShard)
// is the only writer on the connection: it brings the subscriptions in
// line with channels whenever they change, so an Unwatch and a
// (re)subscribe can never pass each other on the wire.
type shard struct {
	addr string
	kick chan struct{} // wakes the writer: channels changed, or a stray subscription came

	// Under redisFeed.mu:
	node     *redis.Client
	channels map[string]struct{} // what the connection must subscribe
	dirty    map[string]struct{} // channels added or removed since the writer last looked
}

func (sh *shard) wake() {
	select {
	case sh.kick <- struct{}{}:
	default:
	}
}

// shardConn is one connection of a shard. It has a client of its own
// whose dialer connects once: go-redis would otherwise redial a broken
// Pub/Sub connection by itself and resubscribe every channel in a single
// SSUBSCRIBE, which a Cluster refuses (CROSSSLOT) when they span slots.
// The shard opens a new one instead, subscribing slot by slot.
type shardConn struct {
	client *redis.Client
	ps     *redis.PubSub

	// Under redisFeed.mu:
	synced     bool                // the writer subscribed the shard's channels once
	subscribed map[string]struct{} // channels whose SSUBSCRIBE was written, and no SUNSUBSCRIBE since
	stray      map[string]struct{} // confirmed subscriptions of channels not in subscribed
}

// errRedial is what a shard connection's dialer answers once it has
// connected: the feed, not go-redis, opens a broken connection again.
var errRedial = errors.New("redisstore: the feed opens a broken Pub/Sub connection again itself")

func newShardConn(ctx context.Context, node *redis.Client) *shardConn {
	opt := *node.Options()
	// Not shared with the node's client, which registered its handlers on
	// its push processor and changes its maintenance-notification settings
	// while it connects: a connection that carries only Pub/Sub needs
	// neither (they announce endpoint moves of managed Redis services,
	// which the feed meets as a broken connection and a fresh slot map).
	opt.PushNotificationProcessor = nil
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	dial := opt.Dialer
	var connected atomic.Bool
	opt.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if connected.Load() {
			return nil, errRedial
		}
		cn, err := dial(ctx, network, addr)
		if err == nil && !connected.CompareAndSwap(false, true) {
			_ = cn.Close()
			return nil, errRedial
		}
		return cn, err
	}
	client := redis.NewClient(&opt)
	return &shardConn{client: client, ps: client.SSubscribe(ctx),
		subscribed: map[string]struct{}{}, stray: map[string]struct{}{}}
}

func (c *shardConn) close() {
	_ = c.ps.Close()
	_ = c.client.Close()
}

// Watch implements chat.Feed. The shard's writer sends the SSUBSCRIBE;
// its confirmation produces the notice without an event.
func (f *redisFeed) Watch(ctx context.Context, channel string) error {
	f.mu.Lock()
	if f.ctx.Err() != nil {
		f.mu.Unlock()
		return fmt.Errorf("redisstore: feed closed")
	}
	f.watched[channel]++
	first := f.watched[channel] == 1
	f.mu.Unlock()
	if first {
		if err := f.placeOne(ctx, channel); err != nil {
			// The slot map could not be read: the placer retries.
			f.mu.Lock()
			if f.watched[channel] > 0 && f.placed[channel] == nil {
				f.unplaced[channel] = struct{}{}
			}
			f.mu.Unlock()
			f.failed(chat.FeedFailPlace, "", err)
			f.wake()
		}
	}
	return nil
}

// placeOne puts a watched channel on the shard of the server that owns it
// (starting that shard if there is none), unless it was unwatched or
// placed meanwhile.
func (f *redisFeed) placeOne(ctx context.Context, channel string) error {
	addr, node, err := f.s.liveNode(ctx, channel)
	if err != nil {
		return err
	}
	f.mu.Lock()
	if f.watched[channel] == 0 || f.placed[channel] != nil || f.ctx.Err() != nil {
		f.mu.Unlock()
		return nil
	}
	delete(f.unplaced, channel)
	sh := f.shards[addr]
	if sh == nil {
		sh = &shard{addr: addr, node: node, kick: make(chan struct{}, 1),
			channels: map[string]struct{}{}, dirty: map[string]struct{}{}}
		f.shards[addr] = sh
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.runShard(sh)
		}()
	}
	sh.channels[channel] = struct{}{}
	sh.dirty[channel] = struct{}{}
	f.placed[channel] = sh
	f.mu.Unlock()
	sh.wake()
	return nil
}

// Unwatch implements chat.Feed. The shard's writer sends the SUNSUBSCRIBE.
func (f *redisFeed) Unwatch(ctx context.Context, channel string) error {
	f.mu.Lock()
	n := f.watched[channel] - 1
	if n > 0 {
		f.watched[channel] = n
		f.mu.Unlock()
		return nil
	}
	delete(f.watched, channel)
	delete(f.unplaced, channel)
	sh := f.placed[channel]
	if sh != nil {
		delete(f.placed, channel)
		delete(sh.channels, channel)
		sh.dirty[channel] = struct{}{}
	}
	f.mu.Unlock()
	if sh != nil {
		sh.wake()
	}
	return nil
}

// Close implements chat.Feed.
func (f *redisFeed) Close() error {
	f.cancel()
	// A blocked receive does not watch its context: closing the
	// connections ends it (the shards' writers close theirs).
	f.mu.Lock()
	revoke := f.revoke
	f.mu.Unlock()
	if revoke != nil {
		_ = revoke.Close()
	}
	f.wg.Wait()
	return nil
}

// failed reports a failure to the feed's owner, who logs and counts it.
func (f *redisFeed) failed(reason, server string, err error) {
	if f.ctx.Err() != nil {
		return // closing: connections fail on purpose
	}
	f.fn(chat.Notice{Failure: &chat.FeedFailure{Reason: reason, Server: server, Err: err}})
}

func (f *redisFeed) wake() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// place is the placer: it puts the channels that wait (their slot map
// could not be read, their slot moved, their connection failed) on the
// shards of their servers, retrying with a backoff and a fresh slot map
// while any placement fails.
func (f *redisFeed) place() {
	backoff := feedRetry
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-f.kick:
		}
		for {
			f.mu.Lock()
			waiting := make([]string, 0, len(f.unplaced))
			for ch := range f.unplaced {
				waiting = append(waiting, ch)
			}
			f.mu.Unlock()
			var err error
			for _, ch := range waiting {
				if err = f.placeOne(f.ctx, ch); err != nil {
					break
				}
			}
			if err == nil {
				backoff = feedRetry
				break
			}
			f.failed(chat.FeedFailPlace, "", err)
			f.s.reloadRoutes()
			if chat.Pause(f.ctx, backoff) != nil {
				return
			}
			backoff = min(2*backoff, feedRetryMax)
		}
	}
}

// runShard keeps a shard's connection open while it carries a channel:
// serve one connection until it fails, then, after a backoff, hand the
// channels whose slot is now elsewhere to the placer and open another for
// the rest.
func (f *redisFeed) runShard(sh *shard) {
	backoff := feedRetry
	for {
		f.mu.Lock()
		if f.ctx.Err() != nil || len(sh.channels) == 0 {
			delete(f.shards, sh.addr)
			f.mu.Unlock()
			return
		}
		node := sh.node
		f.mu.Unlock()
		c := newShardConn(f.ctx, node)
		worked := f.serveShard(sh, c)
		c.close()
		if worked {
			backoff = feedRetry
		}
		f.s.reloadRoutes()
		if chat.Pause(f.ctx, backoff) != nil {
			continue // closing: the top of the loop ends it
		}
		backoff = min(2*backoff, feedRetryMax)
		f.replace(sh)
	}
}

// serveShard runs one connection of sh until it fails (and reports why):
// a reader hands what comes to fn, and this goroutine, the only writer,
// subscribes what the shard's channels need and pings. It reports whether
// the connection worked (something was received).
func (f *redisFeed) serveShard(sh *shard, c *shardConn) (worked bool) {
	// The first write dials: a failure here is a failed connect.
	if err := c.ps.Ping(f.ctx); err != nil {
		f.failed(chat.FeedFailConnect, sh.addr, err)
		return false
	}
	type result struct {
		received bool
		reason   string
		err      error
	}
	done := make(chan result, 1)
	go func() {
		received, reason, err := f.receive(c.ps, func(msg any) { f.shardMessage(sh, c, msg) })
		done <- result{received, reason, err}
	}()
	t := time.NewTicker(feedPing)
	defer t.Stop()
	var err error
	for err == nil {
		if err = f.syncShard(sh, c); err != nil {
			break
		}
		select {
		case <-sh.kick:
		case <-t.C:
			err = c.ps.Ping(f.ctx)
		case r := <-done:
			f.failed(r.reason, sh.addr, r.err)
			return r.received
		case <-f.ctx.Done():
			_ = c.ps.Close()
			return (<-done).received
		}
	}
	// A failed write: the connection is broken; end the reader.
	_ = c.ps.Close()
	r := <-done
	f.failed(chat.FeedFailReceive, sh.addr, err)
	return r.received
}

// syncShard brings c's subscriptions in line with sh's channels: an
// SSUBSCRIBE for each channel added since the last look (all of them on a
// new connection), an SUNSUBSCRIBE for each one removed and for each stray
// subscription, one command per hash slot. What it writes is recorded
// before it is written, so the reader knows a confirmation it expects.
func (f *redisFeed) syncShard(sh *shard, c *shardConn) error {
	var sub, unsub []string
	check := func(ch string) {
		_, want := sh.channels[ch]
		_, has := c.subscribed[ch]
		switch {
		case want && !has:
			c.subscribed[ch] = struct{}{}
			sub = append(sub, ch)
		case !want && has:
			delete(c.subscribed, ch)
			unsub = append(unsub, ch)
		}
	}
	f.mu.Lock()
	if !c.synced {
		c.synced = true
		for ch := range sh.channels {
			check(ch)
		}
	}
	for ch := range sh.dirty {
		check(ch)
	}
	clear(sh.dirty)
	for ch := range c.stray {
		if _, has := c.subscribed[ch]; !has {
			unsub = append(unsub, ch)
		}
	}
	clear(c.stray)
	f.mu.Unlock()
	for _, keys := range f.s.liveKeyGroups(unsub) {
		if err := c.ps.SUnsubscribe(f.ctx, keys...); err != nil {
			return err
		}
	}
	for _, keys := range f.s.liveKeyGroups(sub) {
		if err := c.ps.SSubscribe(f.ctx, keys...); err != nil {
			return err
		}
	}
	return nil
}

// receiveFailure is the reason of a failed receive: an error reply (the
// server refused a subscription), or a broken or silent connection.
func receiveFailure(err error) string {
	var reply redis.Error
	if errors.As(err, &reply) {
		return chat.FeedFailSubscribe
	}
	return chat.FeedFailReceive
}

// replace hands the channels of sh that its server no longer owns to the
// placer. A channel whose owner cannot be told stays: opening the
// connection again tells.
func (f *redisFeed) replace(sh *shard) {
	f.mu.Lock()
	chans := make([]string, 0, len(sh.channels))
	for ch := range sh.channels {
		chans = append(chans, ch)
	}
	f.mu.Unlock()
	var moved []string
	var current *redis.Client
	for _, ch := range chans {
		addr, node, err := f.s.liveNode(f.ctx, ch)
		switch {
		case err != nil:
		case addr != sh.addr:
			moved = append(moved, ch)
		default:
			current = node
		}
	}
	f.mu.Lock()
	if current != nil {
		// The client may have replaced its node's client (a node that
		// left the slot map and came back): dial through the live one.
		sh.node = current
	}
	for _, ch := range moved {
		f.unplace(sh, ch)
	}
	f.mu.Unlock()
	if len(moved) > 0 {
		f.wake()
	}
}

// unplace takes channel off sh and queues it for the placer. f.mu held.
func (f *redisFeed) unplace(sh *shard, channel string) {
	if f.placed[channel] != sh {
		return
	}
	delete(f.placed, channel)
	delete(sh.channels, channel)
	sh.dirty[channel] = struct{}{}
	f.unplaced[channel] = struct{}{}
}

// shardMessage handles what a shard's connection receives.
func (f *redisFeed) shardMessage(sh *shard, c *shardConn, msg any) {
	switch m := msg.(type) {
	case *redis.Subscription:
		ch, ok := f.s.liveChannel(m.Channel)
		if !ok {
			return
		}
		switch m.Kind {
		case "ssubscribe":
			f.mu.Lock()
			_, ours := c.subscribed[ch]
			here := ours && f.placed[ch] == sh
			if !ours {
				// Subscribed on the wire but not wanted (a channel moved
				// away and back meanwhile): the writer ends it.
				c.stray[ch] = struct{}{}
			}
			f.mu.Unlock()
			if !ours {
				sh.wake()
			} else if here {
				f.fn(chat.Notice{Channel: ch})
			}
		case "sunsubscribe":
			// Either ours (the writer took it off subscribed first), or
			// the server ended it because its slot left this server
			// (resharding, failover): place it again, on the new owner,
			// whose confirmation makes it read its stream.
			f.mu.Lock()
			_, ours := c.subscribed[ch]
			moved := ours && f.placed[ch] == sh
			if moved {
				delete(c.subscribed, ch)
				f.unplace(sh, ch)
			}
			f.mu.Unlock()
			if moved {
				f.s.reloadRoutes()
				f.wake()
			}
		}
	case *redis.Message:
		ch, ok := f.s.liveChannel(m.Channel)
		if !ok {
			return
		}
		n, err := parseNotice(ch, m.Payload)
		if err != nil {
			n = chat.Notice{Channel: ch} // unreadable: read the stream instead
		}
		f.fn(n)
	}
}

// revocations keeps the revocations' connection open: a classic
// SUBSCRIBE, as every replica must hear every revocation (a Cluster
// broadcasts a classic PUBLISH to every node, so any node serves it).
func (f *redisFeed) revocations() {
	backoff := feedRetry
	for f.ctx.Err() == nil {
		ps := f.s.rdb.Subscribe(f.ctx)
		f.mu.Lock()
		if f.ctx.Err() != nil {
			// Close looked for the connection before it was set.
			f.mu.Unlock()
			_ = ps.Close()
			return
		}
		f.revoke = ps
		f.mu.Unlock()
		received := false
		// The first write dials: a failure here is a failed connect.
		if err := ps.Subscribe(f.ctx, f.s.revokedKey()); err != nil {
			f.failed(chat.FeedFailConnect, "", fmt.Errorf("revocations: %w", err))
		} else {
			stop := make(chan struct{})
			go func() {
				t := time.NewTicker(feedPing)
				defer t.Stop()
				for {
					select {
					case <-stop:
						return
					case <-t.C:
						_ = ps.Ping(f.ctx)
					}
				}
			}()
			var reason string
			received, reason, err = f.receive(ps, f.revocation)
			close(stop)
			f.failed(reason, "", fmt.Errorf("revocations: %w", err))
		}
		f.mu.Lock()
		f.revoke = nil
		f.mu.Unlock()
		_ = ps.Close()
		if received {
			backoff = feedRetry
		}
		if chat.Pause(f.ctx, backoff) != nil {
			return
		}
		backoff = min(2*backoff, feedRetryMax)
	}
}

// revocation handles what the revocations' connection receives.
func (f *redisFeed) revocation(msg any) {
	switch m := msg.(type) {
	case *redis.Subscription:
		if m.Kind == "subscribe" && m.Channel == f.s.revokedKey() {
			// Revocations published while this connection was not
			// listening are lost: have every open socket's user checked.
			f.fn(chat.Notice{Revoke: chat.RevokeRecheck})
		}
	case *redis.Message:
		reason, id, ok := strings.Cut(m.Payload, " ")
		if ok && (reason == chat.RevokeDeleted || reason == chat.RevokeBanned) {
			f.fn(chat.Notice{Revoke: reason, User: id})
		}
	}
}

// receive hands everything ps receives to handle until the connection
// fails: it breaks, stays silent for feedSilence (whoever writes on it
// pings more often), or carries an error reply, which on these
// connections answers a subscription (the only commands they carry
// besides PING) and ends them too, so they are opened again on a fresh
// slot map. It reports whether anything came (the connection worked), and
// the failure.
func (f *redisFeed) receive(ps *redis.PubSub, handle func(any)) (received bool, reason string, err error) {
	for {
		msg, err := ps.ReceiveTimeout(f.ctx, feedSilence)
		if err != nil {
			return received, receiveFailure(err), err
		}
		received = true
		handle(msg)
	}
}

// liveChannel is the chat channel of a live key, "<prefix>{ch:<name>}:live".
func (s *Store) liveChannel(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, s.prefix+"{ch:")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "}:live")
}

// parseNotice reads "<previous entry> <entry> <event json>", each entry
// as "<stream id>" or "<stream id>.<epoch>".
func parseNotice(channel, payload string) (chat.Notice, error) {
	prevID, rest, ok1 := strings.Cut(payload, " ")
	id, data, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 {
		return chat.Notice{}, fmt.Errorf("live notice %q", payload)
	}
	prevID, prevEpoch, _ := strings.Cut(prevID, ".")
	prev, err := entryCursor(redis.XMessage{ID: prevID, Values: map[string]any{"e": prevEpoch}})
	if err != nil {
		return chat.Notice{}, err
	}
	id, epoch, _ := strings.Cut(id, ".")
	ev, err := decode(channel, redis.XMessage{ID: id, Values: map[string]any{"d": data, "e": epoch}})
	if err != nil {
		return chat.Notice{}, err
	}
	return chat.Notice{Channel: channel, Prev: prev, Event: &ev}, nil
}
