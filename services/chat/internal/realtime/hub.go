package realtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/readwait"
)

// Options tune a Hub; zero values take the defaults in brackets.
type Options struct {
	// Presence counts connections over replicas (redispresence on the
	// service's Redis client; in process when nil).
	Presence Presence
	// ReplicaID names this process in presence counts (random).
	ReplicaID string
	Logger    *slog.Logger

	// ReplicaName is the hello frame's replica: what an operator finds the replica
	// by in `docker ps`, kubectl and the logs (the host name, which is the container's
	// or the pod's; ReplicaID when there is none).
	ReplicaName string

	// QueueSize is how many events may wait for one connection before it
	// is closed with 4008 as too slow (1024).
	QueueSize int
	// Batch is the most events written in one frame (64).
	Batch int
	// Writers is how many goroutines write to this replica's sockets,
	// shared by all connections (DefaultWriters: GOMAXPROCS-1, at least
	// 1; CHAT_WS_WRITERS). Fewer writers than Ps keep one P free for the
	// network poller while a fan-out runs (with GOMAXPROCS=1 the one
	// writer shares the only P, as a writer per socket did); a writer stuck
	// on a slow peer for over 2 ms is replaced, so it holds up nobody else.
	Writers int
	// Pace is the least time between the starts of two writes to a socket
	// that stays backlogged: whose last 3 writes each carried several
	// events, but not a full frame of Batch, at a rate of at least 4 per
	// Pace (16 ms; negative: none). It
	// only holds back sockets that events reach faster than the writers
	// go round, so that each write carries more of them; a socket that
	// keeps up (one event per write) is written at once.
	Pace time.Duration
	// MaxFrameBytes is the largest client frame; bigger ones close the
	// connection with 1009 (4096).
	MaxFrameBytes int64
	// PingInterval is how often the server pings each connection (25 s);
	// a peer that has not answered within PongTimeout (10 s) is dropped.
	PingInterval, PongTimeout time.Duration
	// WriteTimeout bounds one write to a connection (10 s).
	WriteTimeout time.Duration
	// SendTimeout bounds one send (10 s).
	SendTimeout time.Duration
	// SendRate and SendBurst are the per-connection limit on send frames:
	// a token bucket of SendBurst refilled at SendRate per second (5, 10).
	// It protects the server from a flooding socket; the per-user limit
	// (chat.SendLimit, which the service applies to every transport) is the
	// one users meet.
	SendRate  float64
	SendBurst int
	// AuthTimeout is how long a connection may wait for its auth frame
	// when reading needs a token (10 s).
	AuthTimeout time.Duration
	// RoomLinger keeps a channel's reader running this long after its last
	// subscriber left, so reconnects do not restart it (30 s).
	RoomLinger time.Duration
	// PresenceInterval is how often each replica refreshes its presence
	// counts (10 s; each room at a random point of the second half, so
	// rooms do not refresh together); changes are reported within
	// PresenceDebounce (200 ms).
	PresenceInterval, PresenceDebounce time.Duration
	// ReadLimit is the most events one catch-up read of a channel's log
	// returns (100).
	ReadLimit int
	// Limits bound sockets per replica, anonymous client, user, address
	// and network, and channels per address (nil: DefaultLimits).
	Limits *Limits
	// KeyPrefix starts the Redis presence keys ("chat:").
	KeyPrefix string
}

func (o *Options) fill() error {
	orDefault(&o.QueueSize, 1024)
	orDefault(&o.Batch, 64)
	orDefault(&o.Writers, DefaultWriters())
	orDefault(&o.ReadLimit, 100)
	orDefault(&o.MaxFrameBytes, 4096)
	orDefault(&o.PingInterval, 25*time.Second)
	orDefault(&o.PongTimeout, 10*time.Second)
	orDefault(&o.WriteTimeout, 10*time.Second)
	orDefault(&o.SendTimeout, 10*time.Second)
	orDefault(&o.SendRate, 5)
	orDefault(&o.SendBurst, 10)
	orDefault(&o.AuthTimeout, 10*time.Second)
	orDefault(&o.RoomLinger, 30*time.Second)
	orDefault(&o.PresenceInterval, 10*time.Second)
	orDefault(&o.PresenceDebounce, 200*time.Millisecond)
	if o.Pace == 0 {
		o.Pace = 16 * time.Millisecond
	}
	if o.Limits == nil {
		l := DefaultLimits
		o.Limits = &l
	}
	if o.Presence == nil {
		o.Presence = NewLocalPresence()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ReplicaID == "" {
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			return fmt.Errorf("replica id: %w", err)
		}
		o.ReplicaID = hex.EncodeToString(b[:])
	}
	if o.ReplicaName == "" {
		if host, err := os.Hostname(); err == nil && host != "" {
			o.ReplicaName = host
		} else {
			o.ReplicaName = o.ReplicaID
		}
	}
	return nil
}

// orDefault sets an option left unset (zero or negative) to its default.
func orDefault[T ~int | ~int64 | ~float64](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Sources are what live delivery needs of the engine beside the
// service's event log, handed over explicitly (cmd/chat passes the
// engine's own; both engines are both).
type Sources struct {
	// Feed tells the hub which watched channels grew and whose sockets
	// must close.
	Feed chat.FeedSource
	// Users looks up the users of open sockets when the feed may have
	// missed revocations (chat.RevokeRecheck).
	Users chat.UserLookup
}

// Hub is one replica's live delivery: a room per channel that has
// subscribers here, fed by the engine's feed (one subscription for all
// channels), and the connections the rooms fan events out to.
type Hub struct {
	svc     *chat.Service
	log     chat.EventLog
	feed    chat.Feed
	lookup  chat.UserLookup
	opts    Options
	logger  *slog.Logger
	metrics *metrics
	writers *writers // the pool that writes every connection's queue

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // rooms' readers and the janitor

	mu        sync.RWMutex
	rooms     map[string]*room
	conns     map[*conn]struct{}
	sources   map[string]*source // by client address: what admit reserved
	networks  map[string]int     // sockets by network (Limits.network)
	users     map[string]int     // sockets by authenticated user id
	sockets   int                // reserved by admit
	anonymous int                // of which not authenticated
	closed    bool

	// idle parks the sockets that have nothing to read, so an idle socket
	// holds no goroutine (nil where the platform has no poller: one
	// goroutine reads each socket). nextKey numbers the sockets for it.
	idle    *readwait.Poller[*conn]
	nextKey atomic.Uint64

	recheckMu    sync.Mutex
	rechecking   bool // a recheck of the sockets' users runs
	recheckAgain bool // the feed reconnected meanwhile: run it once more
}

// NewHub returns a running hub over svc's event log, told of its changes
// by src. Close stops it.
func NewHub(svc *chat.Service, src Sources, opts Options) (*Hub, error) {
	if svc == nil {
		return nil, errors.New("realtime: a chat service is required")
	}
	if src.Feed == nil || src.Users == nil {
		return nil, errors.New("realtime: the engine's feed and user lookup are required")
	}
	if err := opts.fill(); err != nil {
		return nil, err
	}
	h := &Hub{svc: svc, log: svc.Events(), lookup: src.Users, opts: opts, logger: opts.Logger,
		rooms: map[string]*room{}, conns: map[*conn]struct{}{}, sources: map[string]*source{},
		networks: map[string]int{}, users: map[string]int{}, metrics: newMetrics()}
	h.writers = newWriters(opts.Writers, opts.Pace, h.metrics)
	if p, err := readwait.New((*conn).wake); err == nil {
		h.idle = p
	} else if !errors.Is(err, readwait.ErrUnsupported) {
		return nil, fmt.Errorf("realtime: idle socket poller: %w", err)
	}
	f, err := src.Feed.Subscribe(h.notice)
	if err != nil {
		return nil, fmt.Errorf("realtime: subscribe to the engine's feed: %w", err)
	}
	h.feed = f
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.wg.Add(1)
	go h.janitor()
	// The name clients see in hello, in the log too: one grep links the two.
	h.logger.Info("live delivery ready", "replica", opts.ReplicaName)
	return h, nil
}

// notice hands a feed notice to its channel's room, if this replica has
// one, or closes the sockets of a revoked user, or reports the feed's
// failure.
func (h *Hub) notice(n chat.Notice) {
	if f := n.Failure; f != nil {
		h.metrics.feedErrors.WithLabelValues(feedFailLabel(f.Reason)).Inc()
		// A failure repeats at most once per retry, which backs off to a
		// few seconds: the log is not flooded.
		h.logger.Warn("live delivery: the store's feed failed; retrying", "reason", f.Reason, "server", f.Server, "err", f.Err)
		return
	}
	if n.Revoke != "" {
		h.revoke(n)
		return
	}
	h.mu.RLock()
	r := h.rooms[n.Channel]
	h.mu.RUnlock()
	if r != nil {
		r.deliver(n)
	}
}

// revoke closes the sockets of a deleted or banned user on this replica
// (every replica gets the same notice). Recheck (the feed reconnected and
// may have missed revocations meanwhile) looks up every user with an open
// socket here and closes those deleted or banned since they authenticated.
func (h *Hub) revoke(n chat.Notice) {
	switch n.Revoke {
	case chat.RevokeRecheck:
		h.requestRecheck()
	case chat.RevokeDeleted:
		h.closeUser(n.User, CloseUserDeleted, "this account was deleted")
	case chat.RevokeBanned:
		h.closeUser(n.User, CloseUserBanned, "this account was banned")
	}
}

func (h *Hub) closeUser(id string, code websocket.StatusCode, reason string) {
	h.mu.RLock()
	var hit []*conn
	for c := range h.conns {
		if u := c.user.Load(); u != nil && u.ID == id {
			hit = append(hit, c)
		}
	}
	h.mu.RUnlock()
	for _, c := range hit {
		go c.closeWith(code, reason)
	}
}

// recheckBatch is the most users one lookup of a recheck asks for: a
// replica with 10,000 authenticated sockets makes 100 round trips, one
// after the other, instead of one huge pipeline or 10,000 lookups at once.
const recheckBatch = 100

// requestRecheck starts a recheck, or, when one runs, makes it run once
// more when done (the feed may reconnect again meanwhile): at most one
// recheck runs per replica, however often the feed reconnects.
func (h *Hub) requestRecheck() {
	h.recheckMu.Lock()
	if h.rechecking {
		h.recheckAgain = true
		h.recheckMu.Unlock()
		return
	}
	h.rechecking = true
	h.recheckMu.Unlock()
	go func() {
		for {
			h.recheckUsers()
			h.recheckMu.Lock()
			if !h.recheckAgain || h.ctx.Err() != nil {
				h.rechecking = false
				h.recheckMu.Unlock()
				return
			}
			h.recheckAgain = false
			h.recheckMu.Unlock()
		}
	}()
}

// recheckUsers looks up, recheckBatch at a time, every user with a socket
// open here and closes the sockets of those that are gone (4003) or were
// banned after the socket authenticated (4004; a user banned before may
// read, as the protocol says). A lookup that fails is retried with backoff
// until it succeeds or the hub closes: the store just came back.
func (h *Hub) recheckUsers() {
	h.mu.RLock()
	byUser := map[string][]*conn{}
	for c := range h.conns {
		if u := c.user.Load(); u != nil {
			byUser[u.ID] = append(byUser[u.ID], c)
		}
	}
	h.mu.RUnlock()
	ids := make([]string, 0, len(byUser))
	for id := range byUser {
		ids = append(ids, id)
	}
	for len(ids) > 0 {
		batch := ids[:min(recheckBatch, len(ids))]
		ids = ids[len(batch):]
		found, err := h.lookupUsers(batch)
		if err != nil {
			return // the hub is closing
		}
		for _, id := range batch {
			u, exists := found[id]
			for _, c := range byUser[id] {
				switch {
				case !exists:
					go c.closeWith(CloseUserDeleted, "this account was deleted")
				case u.Banned && !c.user.Load().Banned:
					go c.closeWith(CloseUserBanned, "this account was banned")
				}
			}
		}
	}
}

func (h *Hub) lookupUsers(ids []string) (map[string]chat.User, error) {
	backoff := 100 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(h.ctx, 5*time.Second)
		found, err := h.lookup.UsersByID(ctx, ids)
		cancel()
		if err == nil {
			return found, nil
		}
		h.logger.Warn("live delivery: cannot recheck the users of open sockets; retrying", "err", err)
		if chat.Pause(h.ctx, backoff) != nil {
			return nil, h.ctx.Err()
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// ReplicaID is the name this hub reports presence under.
func (h *Hub) ReplicaID() string { return h.opts.ReplicaID }

// Connections is the number of open connections on this replica.
func (h *Hub) Connections() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}

// Close closes every connection with 1001 (going away: reconnect, with
// since, to another replica), withdraws this replica's presence and stops
// the readers and the writer pool. It waits at most until ctx ends.
func (h *Hub) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	conns := make([]*conn, 0, len(h.conns))
	for c := range h.conns {
		conns = append(conns, c)
	}
	rooms := make([]*room, 0, len(h.rooms))
	for _, r := range h.rooms {
		rooms = append(rooms, r)
	}
	h.mu.Unlock()

	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.closeWith(websocket.StatusGoingAway, "server shutting down; reconnect with since")
			c.waitDone(ctx)
		}()
	}
	wg.Wait()
	for _, r := range rooms {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		_, _ = h.opts.Presence.Report(pctx, r.name, h.opts.ReplicaID, 0)
		cancel()
	}
	h.cancel()
	if h.idle != nil {
		_ = h.idle.Close() // wakes what is still parked: its read fails, it cleans up
	}
	h.writers.close()
	done := make(chan struct{})
	go func() { h.wg.Wait(); h.writers.wait(); close(done) }()
	select {
	case <-done:
		return h.feed.Close()
	case <-ctx.Done():
		return fmt.Errorf("realtime: stop readers: %w", ctx.Err())
	}
}

// join subscribes c to channel: it returns the room and the cursor after
// which the room will queue every event for c. It waits for a new room's
// reader to learn the channel's head, at most until ctx ends.
func (h *Hub) join(ctx context.Context, channel string, c *conn) (*room, chat.Cursor, error) {
	for {
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return nil, chat.Cursor{}, errors.New("shutting down")
		}
		r := h.rooms[channel]
		if r == nil {
			r = newRoom(h, channel)
			h.rooms[channel] = r
			h.wg.Add(1)
			go r.start()
		}
		// Counted under h.mu, where stopRoom looks: a room being joined is
		// not idle, however long its start takes.
		r.joining.Add(1)
		h.mu.Unlock()
		select {
		case <-r.ready:
		case <-r.ctx.Done():
		case <-ctx.Done():
			r.joining.Add(-1)
			return nil, chat.Cursor{}, fmt.Errorf("join %s: %w", channel, ctx.Err())
		}
		r.joining.Add(-1)
		r.mu.Lock()
		if r.stopped {
			r.mu.Unlock()
			continue // closed for idleness meanwhile; make a new one
		}
		if !r.started {
			r.mu.Unlock() // the hub is closing
			return nil, chat.Cursor{}, errors.New("shutting down")
		}
		r.subs[c] = struct{}{}
		pos := r.pos
		r.mu.Unlock()
		r.presenceChanged()
		return r, pos, nil
	}
}

func (h *Hub) addConn(c *conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.conns[c] = struct{}{}
	h.metrics.connections.Inc()
	return true
}

func (h *Hub) removeConn(c *conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.conns[c]; ok {
		delete(h.conns, c)
		h.metrics.connections.Dec()
	}
}

// janitor does the periodic work of all connections and rooms in one
// goroutine, so an idle connection costs no timer: pings are due every
// PingInterval, a write stuck beyond WriteTimeout drops its connection,
// and rooms refresh presence and stop once idle for RoomLinger.
func (h *Hub) janitor() {
	defer h.wg.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case now := <-tick.C:
			h.sweep(now)
		}
	}
}

func (h *Hub) sweep(now time.Time) {
	h.mu.Lock()
	conns := make([]*conn, 0, len(h.conns))
	for c := range h.conns {
		conns = append(conns, c)
	}
	rooms := make([]*room, 0, len(h.rooms))
	for _, r := range h.rooms {
		rooms = append(rooms, r)
	}
	h.mu.Unlock()
	for _, c := range conns {
		c.maintain(now)
	}
	var due []*room
	for _, r := range rooms {
		if r.maintain(now) {
			due = append(due, r)
		}
	}
	h.refreshPresence(due)
}

// presenceBatch is the most rooms one presence round trip reports.
const presenceBatch = 500

// refreshPresence reports the rooms whose presence refresh is due: in one
// round trip per presenceBatch rooms when the presence store can
// (BatchPresence), else one report per room.
func (h *Hub) refreshPresence(due []*room) {
	bp, ok := h.opts.Presence.(BatchPresence)
	if !ok || len(due) < 2 {
		for _, r := range due {
			r.reportPresence()
		}
		return
	}
	claimed := due[:0]
	var counts []int
	for _, r := range due {
		if n, ok := r.beginReport(); ok {
			claimed = append(claimed, r)
			counts = append(counts, n)
		}
	}
	if len(claimed) == 0 {
		return
	}
	go func() {
		for len(claimed) > 0 {
			k := min(presenceBatch, len(claimed))
			rooms, ns := claimed[:k], counts[:k]
			claimed, counts = claimed[k:], counts[k:]
			names := make([]string, k)
			for i, r := range rooms {
				names[i] = r.name
			}
			ctx, cancel := context.WithTimeout(h.ctx, 2*time.Second)
			totals, err := bp.ReportBatch(ctx, h.opts.ReplicaID, names, ns)
			cancel()
			for i, r := range rooms {
				switch {
				case err != nil:
					r.endReport(ns[i], 0, err)
				case totals[i] < 0:
					r.endReport(ns[i], 0, errors.New("presence report failed"))
				default:
					r.endReport(ns[i], totals[i], nil)
				}
			}
		}
	}()
}

// stopRoom removes r if it is still idle.
func (h *Hub) stopRoom(r *room) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.subs) > 0 || r.stopped || r.joining.Load() > 0 {
		return
	}
	r.stopped = true
	r.inbox = nil
	if h.rooms[r.name] == r {
		delete(h.rooms, r.name)
	}
	r.cancel()
	go func() {
		r.unwatch()
		r.withdrawPresence()
	}()
}

// Parked counts the sockets waiting in the poller without a goroutine.
func (h *Hub) Parked() int {
	if h.idle == nil {
		return 0
	}
	return h.idle.Parked()
}
