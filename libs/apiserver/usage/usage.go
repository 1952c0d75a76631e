// Package usage counts requests per principal (an API key, a JWT subject) per UTC day,
// in process or in Redis shared by replicas, for answering "how much have I used today".
package usage

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Counts are one principal's requests on one day: those let through and those refused by
// its rate limit.
type Counts struct {
	Day     string `json:"day" doc:"The UTC day counted, YYYY-MM-DD" example:"2026-11-27"`
	Allowed int64  `json:"allowed" doc:"Requests let through by the rate limit" example:"1234"`
	Limited int64  `json:"limited" doc:"Requests refused with 429" example:"0"`
}

// Store keeps the daily counts. Add receives the increments of one flush; Get reads one
// principal's counts of one day (zero when there are none).
type Store interface {
	Add(ctx context.Context, day string, deltas map[string]Counts) error
	Get(ctx context.Context, day, id string) (Counts, error)
}

// Limits bound what a Counter holds.
const (
	// MaxIDLength is the longest principal id counted; Counter.Add refuses longer ones.
	MaxIDLength = 128
	// DefaultMaxPending bounds the principals a process counts in a day (entries live
	// until the day after): past it, new principals' requests are dropped (and counted in
	// Dropped) until old days' entries are cleared.
	DefaultMaxPending = 100_000
	// DefaultFlushInterval is how often counts are written to the store.
	DefaultFlushInterval = time.Second
	// DefaultRetention is how long a day's counts are kept (Redis keys expire then).
	DefaultRetention = 8 * 24 * time.Hour
)

// ErrIDTooLong is returned by Add for an id past MaxIDLength.
var ErrIDTooLong = errors.New("usage: principal id longer than 128 bytes")

// Config configures a Counter; the zero value counts in memory.
type Config struct {
	Store         Store
	FlushInterval time.Duration // default DefaultFlushInterval
	MaxPending    int           // default DefaultMaxPending
	Now           func() time.Time
}

// Counter counts requests in memory and writes them to its Store in batches: a request
// costs a map read and an atomic add, not a round trip to Redis. Get adds the counts not
// yet written, so a replica reads its own requests at once and the others' within one
// flush interval.
type Counter struct {
	store    Store
	interval time.Duration
	max      int
	now      func() time.Time
	// fixedClock: Config.Now was given (tests), and is read for every request. Else
	// days are counted from base on the monotonic clock, and a timer moves cur to the
	// next day's table at each UTC midnight, so that Add reads no clock at all (see
	// rollover).
	fixedClock bool
	base       time.Time
	baseNano   int64 // base as Unix nanoseconds
	midnight   *time.Timer

	// cur is the current day's table; tables holds every day with counts not yet
	// dropped (today's, yesterday's until the next day, and any a restore brought back).
	cur      atomic.Pointer[dayTable]
	tablesMu sync.Mutex
	tables   map[int64]*dayTable
	npending atomic.Int64 // entries in all tables, bounded by max
	dropped  atomic.Int64

	flushMu sync.Mutex // one flush at a time, so a day's increments are written in order
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// dayTable holds one day's pending counts, one entry per principal, kept (and zeroed by
// each flush) until the day is over: Add is then a read of a plain map and an atomic
// add, and a flush never races an Add out of its increment. New principals go to dirty,
// under mu, until the next flush copies them into a new read-only map: the copy is paid
// once per flush that met new principals, not per request.
type dayTable struct {
	day   int64 // days since the Unix epoch, UTC
	ro    atomic.Pointer[map[string]*pendingCounts]
	mu    sync.Mutex
	dirty map[string]*pendingCounts
}

type pendingCounts struct{ allowed, limited atomic.Int64 }

func newDayTable(day int64) *dayTable {
	t := &dayTable{day: day, dirty: map[string]*pendingCounts{}}
	ro := map[string]*pendingCounts{}
	t.ro.Store(&ro)
	return t
}

// New returns a Counter; call Run to flush in the background, or Flush yourself.
func New(cfg Config) *Counter {
	c := &Counter{store: cfg.Store, interval: cfg.FlushInterval, max: cfg.MaxPending, now: cfg.Now,
		tables: map[int64]*dayTable{}, stop: make(chan struct{}), done: make(chan struct{})}
	if c.store == nil {
		c.store = NewMemory(0)
	}
	if c.interval <= 0 {
		c.interval = DefaultFlushInterval
	}
	if c.max <= 0 {
		c.max = DefaultMaxPending
	}
	if c.now == nil {
		c.now = time.Now
		c.base = time.Now()
		c.baseNano = c.base.UnixNano()
	} else {
		c.fixedClock = true
	}
	c.cur.Store(c.table(c.today()))
	if !c.fixedClock {
		c.midnight = time.AfterFunc(c.untilMidnight(), c.rollover)
	}
	return c
}

func dayNumber(t time.Time) int64 { return t.Unix() / 86400 }

// today is the current day number. With the real clock it reads only the monotonic
// clock, from the wall time at New: time.Now reads both (the day may then lag a
// wall-clock step, until the next New).
func (c *Counter) today() int64 {
	if c.fixedClock {
		return dayNumber(c.now())
	}
	return c.nowNano() / nanosPerDay
}

const nanosPerDay = int64(24 * time.Hour)

// nowNano is the Unix time in nanoseconds on the real clock's monotonic reading.
func (c *Counter) nowNano() int64 { return c.baseNano + int64(time.Since(c.base)) }

// untilMidnight is the time left in the current UTC day, on the clock today reads.
func (c *Counter) untilMidnight() time.Duration {
	return time.Duration(nanosPerDay - c.nowNano()%nanosPerDay)
}

// rollover makes the new day's table current and arms the next midnight. A timer fires
// a little late (milliseconds), and a request counted meanwhile is the old day's: the
// price of not reading a clock per request (time.Since costs more than the rest of Add).
func (c *Counter) rollover() {
	c.cur.Store(c.table(c.today()))
	select {
	case <-c.stop:
	default:
		c.midnight.Reset(c.untilMidnight())
	}
}

// table is day's table, made if it is new.
func (c *Counter) table(day int64) *dayTable {
	c.tablesMu.Lock()
	defer c.tablesMu.Unlock()
	t := c.tables[day]
	if t == nil {
		t = newDayTable(day)
		c.tables[day] = t
	}
	return t
}

// DayString is the day as counts name it, YYYY-MM-DD in UTC.
func DayString(t time.Time) string { return t.UTC().Format(time.DateOnly) }

func dayOf(n int64) string { return DayString(time.Unix(n*86400, 0)) }

// Add counts one request of id: allowed by its limit, or refused.
func (c *Counter) Add(id string, allowed bool) error {
	if len(id) > MaxIDLength {
		return ErrIDTooLong
	}
	t := c.cur.Load()
	if c.fixedClock {
		if day := c.today(); day != t.day {
			t = c.table(day)
			c.cur.Store(t)
		}
	}
	p := (*t.ro.Load())[id]
	if p == nil {
		if p = c.entry(t, id); p == nil {
			c.dropped.Add(1)
			return nil
		}
	}
	if allowed {
		p.allowed.Add(1)
	} else {
		p.limited.Add(1)
	}
	return nil
}

// entry is id's pending counts in t, made if there is room (nil if not).
func (c *Counter) entry(t *dayTable, id string) *pendingCounts {
	if p := (*t.ro.Load())[id]; p != nil {
		return p
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	// Again under mu: a take may have moved id from dirty into a new read-only map
	// since the read above, and a second entry for id would lose counts.
	if p := (*t.ro.Load())[id]; p != nil {
		return p
	}
	if p := t.dirty[id]; p != nil {
		return p
	}
	if c.npending.Load() >= int64(c.max) {
		return nil
	}
	p := new(pendingCounts)
	t.dirty[id] = p
	c.npending.Add(1)
	return p
}

// Dropped is how many requests were not counted because MaxPending principals were
// already counted that day in this process.
func (c *Counter) Dropped() int64 { return c.dropped.Load() }

// Flush writes the pending counts to the store. On a store error they are kept for the
// next flush (added to what arrives meanwhile), so a Redis outage delays counts rather
// than losing them.
func (c *Counter) Flush(ctx context.Context) error {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	today := c.today()
	c.tablesMu.Lock()
	tables := make([]*dayTable, 0, len(c.tables))
	for day, t := range c.tables {
		tables = append(tables, t)
		if day < today-1 {
			// Two days gone: no request counts there any more. Its last counts are
			// read below; an Add still holding it (a stale cur) is not possible, as cur
			// moved on a day ago.
			delete(c.tables, day)
		}
	}
	c.tablesMu.Unlock()
	var errs []error
	for _, t := range tables {
		deltas := t.take()
		if t.day < today-1 {
			c.npending.Add(-int64(t.len()))
		}
		if len(deltas) == 0 {
			continue
		}
		if err := c.store.Add(ctx, dayOf(t.day), deltas); err != nil {
			errs = append(errs, err)
			c.restore(t.day, deltas)
		}
	}
	return errors.Join(errs...)
}

// take zeroes t's counts and returns those that were not zero; the principals met since
// the last take move into a new read-only map.
func (t *dayTable) take() map[string]Counts {
	t.mu.Lock()
	ro := *t.ro.Load()
	if len(t.dirty) > 0 {
		next := make(map[string]*pendingCounts, len(ro)+len(t.dirty))
		for id, p := range ro {
			next[id] = p
		}
		for id, p := range t.dirty {
			next[id] = p
		}
		t.ro.Store(&next)
		t.dirty = map[string]*pendingCounts{}
		ro = next
	}
	t.mu.Unlock()
	var deltas map[string]Counts
	for id, p := range ro {
		got := Counts{Allowed: p.allowed.Swap(0), Limited: p.limited.Swap(0)}
		if got.Allowed == 0 && got.Limited == 0 {
			continue
		}
		if deltas == nil {
			deltas = map[string]Counts{}
		}
		deltas[id] = got
	}
	return deltas
}

// len is the number of principals t holds.
func (t *dayTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(*t.ro.Load()) + len(t.dirty)
}

// find is id's pending counts in t, nil if none.
func (t *dayTable) find(id string) *pendingCounts {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := (*t.ro.Load())[id]; p != nil {
		return p
	}
	return t.dirty[id]
}

// restore puts counts that could not be written back among the pending ones.
func (c *Counter) restore(day int64, deltas map[string]Counts) {
	t := c.table(day)
	for id, d := range deltas {
		p := c.entry(t, id)
		if p == nil {
			c.dropped.Add(d.Allowed + d.Limited)
			continue
		}
		p.allowed.Add(d.Allowed)
		p.limited.Add(d.Limited)
	}
}

// Today is id's counts of the current UTC day: the store's plus those not yet flushed.
func (c *Counter) Today(ctx context.Context, id string) (Counts, error) {
	return c.Day(ctx, id, c.now())
}

// Day is id's counts of the UTC day holding t.
func (c *Counter) Day(ctx context.Context, id string, t time.Time) (Counts, error) {
	n := dayNumber(t)
	got, err := c.store.Get(ctx, dayOf(n), id)
	if err != nil {
		return Counts{}, err
	}
	c.tablesMu.Lock()
	tbl := c.tables[n]
	c.tablesMu.Unlock()
	if tbl != nil {
		if p := tbl.find(id); p != nil {
			got.Allowed += p.allowed.Load()
			got.Limited += p.limited.Load()
		}
	}
	got.Day = dayOf(n)
	return got, nil
}

// Run flushes every interval until Close, logging failures through onErr (may be nil).
func (c *Counter) Run(onErr func(error)) {
	defer close(c.done)
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), c.interval)
			if err := c.Flush(ctx); err != nil && onErr != nil {
				onErr(err)
			}
			cancel()
		}
	}
}

// Close stops Run (if it runs) and the midnight timer, and flushes what is pending.
func (c *Counter) Close(ctx context.Context, running bool) error {
	c.once.Do(func() {
		close(c.stop)
		if c.midnight != nil {
			c.midnight.Stop()
		}
	})
	if running {
		<-c.done
	}
	return c.Flush(ctx)
}

// Memory is a Store in process, keeping the last retention days.
type Memory struct {
	mu        sync.Mutex
	days      map[string]map[string]Counts
	retention int
}

// NewMemory keeps retention days (0: DefaultRetention's).
func NewMemory(retention time.Duration) *Memory {
	if retention <= 0 {
		retention = DefaultRetention
	}
	return &Memory{days: map[string]map[string]Counts{}, retention: int(retention / (24 * time.Hour))}
}

// Add implements Store.
func (m *Memory) Add(_ context.Context, day string, deltas map[string]Counts) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.days[day]
	if d == nil {
		d = map[string]Counts{}
		m.days[day] = d
		// Days are YYYY-MM-DD: their order is the strings'. Keep the newest retention.
		for len(m.days) > max(m.retention, 1) {
			oldest := ""
			for k := range m.days {
				if oldest == "" || k < oldest {
					oldest = k
				}
			}
			delete(m.days, oldest)
		}
	}
	for id, c := range deltas {
		cur := d[id]
		cur.Allowed += c.Allowed
		cur.Limited += c.Limited
		d[id] = cur
	}
	return nil
}

// Get implements Store.
func (m *Memory) Get(_ context.Context, day, id string) (Counts, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.days[day][id], nil
}

// Redis is a Store shared by replicas: one hash per day ("<prefix>usage:<day>"), two
// fields per principal ("a:<id>" allowed, "l:<id>" limited), expiring after the
// retention. The key count is bounded by the days kept, whatever the principals.
type Redis struct {
	client    redis.UniversalClient
	prefix    string
	retention time.Duration
}

// NewRedis stores counts under prefix (e.g. "apiserver:geoip:"), kept retention
// (0: DefaultRetention).
func NewRedis(client redis.UniversalClient, prefix string, retention time.Duration) *Redis {
	if retention <= 0 {
		retention = DefaultRetention
	}
	return &Redis{client: client, prefix: prefix, retention: retention}
}

func (r *Redis) key(day string) string { return r.prefix + "usage:" + day }

// Add implements Store in one pipelined round trip.
func (r *Redis) Add(ctx context.Context, day string, deltas map[string]Counts) error {
	key := r.key(day)
	_, err := r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for id, c := range deltas {
			if c.Allowed != 0 {
				p.HIncrBy(ctx, key, "a:"+id, c.Allowed)
			}
			if c.Limited != 0 {
				p.HIncrBy(ctx, key, "l:"+id, c.Limited)
			}
		}
		p.Expire(ctx, key, r.retention)
		return nil
	})
	if err != nil {
		return fmt.Errorf("usage: write counts of %s: %w", day, err)
	}
	return nil
}

// Get implements Store.
func (r *Redis) Get(ctx context.Context, day, id string) (Counts, error) {
	vals, err := r.client.HMGet(ctx, r.key(day), "a:"+id, "l:"+id).Result()
	if err != nil {
		return Counts{}, fmt.Errorf("usage: read counts of %s: %w", day, err)
	}
	var c Counts
	c.Allowed = parseCount(vals[0])
	c.Limited = parseCount(vals[1])
	return c, nil
}

func parseCount(v any) int64 {
	s, ok := v.(string)
	if !ok {
		return 0
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

var (
	_ Store = (*Memory)(nil)
	_ Store = (*Redis)(nil)
)
