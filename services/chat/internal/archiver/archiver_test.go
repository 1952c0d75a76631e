package archiver_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver/pgtest"
	"github.com/apistack/platform/libs/apiserver/redistest"

	"github.com/apistack/platform/services/chat/internal/archiver"
	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/pgarchive"
	"github.com/apistack/platform/services/chat/internal/redisstore"
)

// rig is one chat engine on a real Redis (one server or a cluster) with a
// real PostgreSQL archive behind it.
type rig struct {
	t     *testing.T
	pg    *pgtest.Server
	arch  *pgarchive.Archive
	store *redisstore.Store
	// prefix starts the engine's keys.
	prefix string
	svc    *chat.Service
	admin  chat.User
	logs   *bytes.Buffer
}

func newRig(t *testing.T, rdb redis.UniversalClient, history, hold int) *rig {
	t.Helper()
	pg := pgtest.Start(t)
	ctx := context.Background()
	arch, err := pgarchive.Open(ctx, pg.CreateDB(t, "chat"), pgarchive.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(arch.Close)
	if _, err := arch.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("t%d:", time.Now().UnixNano())
	store := redisstore.New(rdb, redisstore.Options{History: history, ArchiveHold: hold, Prefix: prefix})
	svc := chat.NewService(store, chat.Options{Archive: arch})
	admin, err := svc.Bootstrap(ctx, "test-admin-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, pg: pg, arch: arch, store: store, prefix: prefix, svc: svc, admin: admin, logs: &bytes.Buffer{}}
}

func (r *rig) archiver(owner string) *archiver.Archiver {
	return archiver.New(r.store, r.arch, archiver.Options{Owner: owner, Shards: 4, Batch: 7, LeaseTTL: time.Second,
		Logger: slog.New(slog.NewTextHandler(r.logs, nil))})
}

func (r *rig) send(channel string, n int) []chat.Message {
	r.t.Helper()
	var out []chat.Message
	for i := 0; i < n; i++ {
		res, err := r.svc.Send(context.Background(), chat.Fresh(r.admin), chat.SendInput{Channel: channel, Message: fmt.Sprintf("hello %d in %s", i, channel)})
		if err != nil {
			r.t.Fatalf("send %d: %v", i, err)
		}
		out = append(out, res.Message)
	}
	return out
}

// catchUp runs passes until one reports every channel caught up.
func (r *rig) catchUp(a *archiver.Archiver) {
	r.t.Helper()
	for i := 0; i < 200; i++ {
		if a.Pass(context.Background()) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.t.Fatalf("the archiver did not catch up in 200 passes; its log:\n%s", r.logs.String())
}

func (r *rig) count(sql string, args ...any) int {
	r.t.Helper()
	var n int
	if err := r.arch.Pool().QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		r.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// TestArchiveExactlyOnce: every message, the tombstone, the moderation
// event and the moderation log entries arrive once; passes again, and a
// mark moved back (a replica that died after the archive committed but
// before the mark moved), add nothing.
func TestArchiveExactlyOnce(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Start(t).Addr()})
	t.Cleanup(func() { rdb.Close() })
	exactlyOnce(t, rdb)
}

// TestArchiveExactlyOnceCluster is the same on a 3-primary Redis
// Cluster: the archive's scripts stay in a channel's slot.
func TestArchiveExactlyOnceCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { rdb.Close() })
	exactlyOnce(t, rdb)
}

func exactlyOnce(t *testing.T, rdb redis.UniversalClient) {
	r := newRig(t, rdb, 1000, 5000)
	ctx := context.Background()
	channels := []string{"alpha", "beta", "gamma"}
	sent := map[string][]chat.Message{}
	for _, ch := range channels {
		sent[ch] = r.send(ch, 23)
	}
	victim, _, err := r.svc.CreateUser(ctx, r.admin, chat.CreateUserInput{Name: "victim"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.svc.Send(ctx, chat.Fresh(victim), chat.SendInput{Channel: "beta", Message: "something regrettable"})
	if err != nil {
		t.Fatal(err)
	}
	sent["beta"] = append(sent["beta"], res.Message)
	deletedID := res.Message.ID
	if _, err := r.svc.DeleteMessage(ctx, r.admin, "beta", deletedID); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.Timeout(ctx, r.admin, victim.ID, chat.TimeoutInput{Seconds: 60, Reason: "calm down", Channel: "gamma"}); err != nil {
		t.Fatal(err)
	}
	a := r.archiver("one")
	reg := prometheus.NewRegistry()
	if err := a.Register(reg); err != nil {
		t.Fatal(err)
	}
	r.catchUp(a)

	check := func(when string) {
		t.Helper()
		if n := r.count("SELECT count(*) FROM chat_messages"); n != 70 {
			t.Fatalf("%s: %d messages archived, want 70", when, n)
		}
		if n := r.count("SELECT count(DISTINCT (channel, id)) FROM chat_messages"); n != 70 {
			t.Fatalf("%s: %d distinct messages, want 70", when, n)
		}
		for _, ch := range channels {
			for _, m := range sent[ch] {
				var body string
				var deleted bool
				err := r.arch.Pool().QueryRow(ctx, "SELECT body, deleted_at IS NOT NULL FROM chat_messages WHERE channel = $1 AND id = $2", ch, m.ID).Scan(&body, &deleted)
				if err != nil {
					t.Fatalf("%s: message %s/%d: %v", when, ch, m.ID, err)
				}
				wantDeleted := ch == "beta" && m.ID == deletedID
				if deleted != wantDeleted || (!deleted && body != m.Text) || (deleted && body != "") {
					t.Fatalf("%s: %s/%d is %q deleted=%v, want %q deleted=%v", when, ch, m.ID, body, deleted, m.Text, wantDeleted)
				}
			}
		}
		if n := r.count("SELECT count(*) FROM chat_events WHERE channel = 'beta' AND type = 'message_deleted'"); n != 1 {
			t.Fatalf("%s: %d message_deleted events, want 1", when, n)
		}
		if n := r.count("SELECT count(*) FROM chat_events WHERE channel = 'gamma' AND type = 'user_timed_out'"); n != 1 {
			t.Fatalf("%s: %d user_timed_out events, want 1", when, n)
		}
		if n := r.count("SELECT count(*) FROM chat_modlog WHERE channel = 'gamma' AND action = 'timeout' AND target_id = $1", victim.ID); n != 1 {
			t.Fatalf("%s: %d timeout entries in the moderation log, want 1", when, n)
		}
		if n := r.count("SELECT count(*) FROM chat_modlog WHERE channel = 'beta' AND action = 'delete_message'"); n != 1 {
			t.Fatalf("%s: %d delete entries in the moderation log, want 1", when, n)
		}
	}
	check("first catch-up")
	if got := testutil.ToFloat64(a.Metrics().Rows("message")); got != 70 {
		t.Fatalf("rows written (message) = %v, want 70", got)
	}
	if got := testutil.ToFloat64(a.Metrics().Backlog()); got != 0 {
		t.Fatalf("backlog = %v after catching up, want 0", got)
	}

	// A replica that committed and died before moving the mark: the
	// next one writes the same batches again.
	for _, ch := range channels {
		key := r.prefix + "{ch:" + ch + "}:archived"
		if v := rdb.Get(ctx, key).Val(); v == "" {
			t.Fatalf("no archived mark of %s at %s", ch, key)
		}
		if err := rdb.Set(ctx, key, "3-0", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	r.catchUp(a)
	check("after the marks moved back")

	// More sends after the catch-up go in too.
	more := r.send("alpha", 5)
	r.catchUp(a)
	if n := r.count("SELECT count(*) FROM chat_messages WHERE channel = 'alpha'"); n != 28 {
		t.Fatalf("alpha has %d archived, want 28", n)
	}
	if n := r.count("SELECT count(*) FROM chat_messages WHERE channel = 'alpha' AND id = $1", more[4].ID); n != 1 {
		t.Fatalf("the last send is archived %d times", n)
	}
}

// TestArchiveHoldsTheWindow: while the archive is down, the window keeps
// what is not archived up to the hold; past it the trim goes on, and the
// archiver counts and logs the gap when it catches up.
func TestArchiveHoldsTheWindow(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Start(t).Addr()})
	t.Cleanup(func() { rdb.Close() })
	r := newRig(t, rdb, 10, 40)
	ctx := context.Background()
	a := r.archiver("one")
	if err := a.Register(prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
	r.send("hold", 5)
	r.catchUp(a) // the channel's mark exists: it is archived from here on

	r.pg.Stop()
	r.send("hold", 25) // 30 in all: past the history (10), within the hold (40)
	if a.Pass(ctx) {
		t.Fatal("a pass with the archive down reported success")
	}
	page, err := r.store.Messages(ctx, "hold", chat.Page{FromStart: true, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 25 {
		// Archived: the first 5; the window keeps the 25 not archived
		// although the history is 10.
		t.Fatalf("the window holds %d messages while the archive is down, want the 25 not archived", len(page))
	}
	if got := testutil.ToFloat64(a.Metrics().Errors("write")); got == 0 {
		t.Fatal("write failures were not counted")
	}
	if got := testutil.ToFloat64(a.Metrics().Lag()); got < 0 {
		t.Fatalf("lag = %v", got)
	}

	r.send("hold", 30) // 60 in all, 55 not archived: the hold (40) forces a trim of 15
	r.pg.Start()
	r.catchUp(a)
	if got := testutil.ToFloat64(a.Metrics().Lost()); got != 15 {
		t.Fatalf("lost messages counted: %v, want 15", got)
	}
	if !strings.Contains(r.logs.String(), "ARCHIVE GAP") {
		t.Fatalf("the gap was not logged:\n%s", r.logs.String())
	}
	if n := r.count("SELECT count(*) FROM chat_messages WHERE channel = 'hold'"); n != 45 {
		t.Fatalf("%d archived, want 45 (60 sent, 15 trimmed before the archive came back)", n)
	}
	// Caught up, the window is the history again on the next send.
	r.send("hold", 1)
	page, err = r.store.Messages(ctx, "hold", chat.Page{FromStart: true, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) > 11 {
		t.Fatalf("the window holds %d messages once the archive caught up, want at most 11", len(page))
	}
}

// TestArchiveLeases: two archivers split the shards, never both holding
// one; when one stops renewing, the other takes its shards over.
func TestArchiveLeases(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Start(t).Addr()})
	t.Cleanup(func() { rdb.Close() })
	r := newRig(t, rdb, 1000, 5000)
	for i := 0; i < 12; i++ {
		r.send(fmt.Sprintf("ch%d", i), 3)
	}
	one, two := r.archiver("one"), r.archiver("two")
	for _, a := range []*archiver.Archiver{one, two} {
		if err := a.Register(prometheus.NewRegistry()); err != nil {
			t.Fatal(err)
		}
	}
	one.Pass(context.Background())
	two.Pass(context.Background())
	if h1, h2 := testutil.ToFloat64(one.Metrics().Shards()), testutil.ToFloat64(two.Metrics().Shards()); h1 != 4 || h2 != 0 {
		t.Fatalf("shards held: %v and %v, want 4 and 0 (the first took every free one)", h1, h2)
	}
	if n := r.count("SELECT count(*) FROM chat_messages"); n != 36 {
		t.Fatalf("%d archived, want 36", n)
	}
	// one stops; after the lease's time to live two holds everything.
	time.Sleep(1100 * time.Millisecond)
	r.send("ch3", 2)
	r.catchUp(two)
	if h := testutil.ToFloat64(two.Metrics().Shards()); h != 4 {
		t.Fatalf("after one stopped, two holds %v shards, want 4", h)
	}
	if n := r.count("SELECT count(*) FROM chat_messages"); n != 38 {
		t.Fatalf("%d archived, want 38", n)
	}
}

// TestReadingPastTheWindow: with a window of 10, paging backwards from the
// latest page goes on into the archive with the same ids and fields
// (tombstones included), paging forwards from after=0 starts at the
// archive's oldest, and replay by time finds a range however old.
func TestReadingPastTheWindow(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Start(t).Addr()})
	t.Cleanup(func() { rdb.Close() })
	r := newRig(t, rdb, 10, 20)
	ctx := context.Background()
	a := r.archiver("one")
	if err := a.Register(prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
	var sent []chat.Message
	for i := 0; i < 4; i++ {
		sent = append(sent, r.send("vod", 10)...)
		if i == 0 {
			gone, err := r.svc.DeleteMessage(ctx, r.admin, "vod", sent[3].ID)
			if err != nil {
				t.Fatal(err)
			}
			sent[3] = gone
		}
		r.catchUp(a)
	}
	sent = append(sent, r.send("vod", 5)...) // 45 in all; the window holds the last 10
	r.catchUp(a)
	same := func(what string, got, want []chat.Message) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d messages, want %d", what, len(got), len(want))
		}
		for i := range got {
			g, w := got[i], want[i]
			if g.ID != w.ID || g.Text != w.Text || g.User != w.User || !g.CreatedAt.Equal(w.CreatedAt) || g.Deleted != w.Deleted || g.Channel != w.Channel ||
				(g.DeletedAt == nil) != (w.DeletedAt == nil) || (g.DeletedAt != nil && !g.DeletedAt.Equal(*w.DeletedAt)) {
				t.Fatalf("%s: message %d is %+v, want %+v", what, i, g, w)
			}
		}
	}
	// Backwards, 20 at a time: 26..45, 6..25, 1..5.
	var got []chat.Message
	before := int64(0)
	for {
		page, err := r.svc.Messages(ctx, &r.admin, "vod", chat.Page{Limit: 20, Before: before})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		got = append(page, got...)
		before = page[0].ID
	}
	same("backwards", got, sent)
	// Forwards from the start.
	page, err := r.svc.Messages(ctx, &r.admin, "vod", chat.Page{Limit: 7, FromStart: true})
	if err != nil {
		t.Fatal(err)
	}
	same("after=0", page, sent[:7])
	page, err = r.svc.Messages(ctx, &r.admin, "vod", chat.Page{Limit: 20, After: 30})
	if err != nil {
		t.Fatal(err)
	}
	same("after=30 across the seam", page, sent[30:45])
	// Replay by time: the range of messages 3..12 (ids), in order.
	from, to := sent[2].CreatedAt, sent[12].CreatedAt
	var want []chat.Message
	for _, m := range sent {
		if !m.CreatedAt.Before(from) && m.CreatedAt.Before(to) {
			want = append(want, m)
		}
	}
	var replay []chat.Message
	after := int64(0)
	for {
		p, err := r.svc.Replay(ctx, &r.admin, "vod", from, to, after, 4)
		if err != nil {
			t.Fatal(err)
		}
		replay = append(replay, p...)
		if len(p) < 4 {
			break
		}
		after = p[len(p)-1].ID
	}
	same("replay", replay, want)
	if _, err := r.svc.Replay(ctx, &r.admin, "vod", to, from, 0, 4); chat.KindOf(err) != chat.KindInvalid {
		t.Fatalf("a range ending before it starts: %v", err)
	}
}

// TestSearch: words, phrases and prefixes in any script, a user's only,
// tombstones left out, newest first with a cursor.
func TestSearch(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Start(t).Addr()})
	t.Cleanup(func() { rdb.Close() })
	r := newRig(t, rdb, 1000, 5000)
	ctx := context.Background()
	viewer, _, err := r.svc.CreateUser(ctx, r.admin, chat.CreateUserInput{Name: "viewer"})
	if err != nil {
		t.Fatal(err)
	}
	say := func(u chat.User, text string) int64 {
		res, err := r.svc.Send(ctx, chat.Fresh(u), chat.SendInput{Channel: "find", Message: text})
		if err != nil {
			t.Fatal(err)
		}
		return res.Message.ID
	}
	gg1 := say(r.admin, "Good game everyone")
	say(viewer, "what a game, good luck next time")
	gg2 := say(viewer, "GOOD GAME!! clutch play")
	ja := say(viewer, "東京 ラーメン おいしい")
	ru := say(r.admin, "Привет всем, отличная игра")
	gone := say(viewer, "good game but deleted")
	if _, err := r.svc.DeleteMessage(ctx, r.admin, "find", gone); err != nil {
		t.Fatal(err)
	}
	a := r.archiver("one")
	if err := a.Register(prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
	r.catchUp(a)
	ids := func(q, user string, before int64, limit int) []int64 {
		t.Helper()
		ms, err := r.svc.Search(ctx, r.admin, "find", q, user, before, limit)
		if err != nil {
			t.Fatalf("search %q: %v", q, err)
		}
		out := []int64{}
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return out
	}
	for _, tc := range []struct {
		q, user string
		before  int64
		limit   int
		want    []int64
	}{
		{`"good game"`, "", 0, 10, []int64{gg2, gg1}},
		{`"good game"`, viewer.ID, 0, 10, []int64{gg2}},
		{`"good game"`, "", gg2, 10, []int64{gg1}},
		{`"good game"`, "", 0, 1, []int64{gg2}},
		{`clu*`, "", 0, 10, []int64{gg2}},
		{`game clu*`, "", 0, 10, []int64{gg2}},
		{`ПРИВЕТ`, "", 0, 10, []int64{ru}},
		{`отлич*`, "", 0, 10, []int64{ru}},
		{`東京`, "", 0, 10, []int64{ja}},
		{`game -clutch`, "", 0, 10, []int64{gg1 + 1, gg1}},
	} {
		if got := ids(tc.q, tc.user, tc.before, tc.limit); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("search %q user %q before %d: %v, want %v", tc.q, tc.user, tc.before, got, tc.want)
		}
	}
	for _, q := range []string{"", "a*", "x%*", strings.Repeat("w ", 11)} {
		if _, err := r.svc.Search(ctx, r.admin, "find", q, "", 0, 10); chat.KindOf(err) != chat.KindInvalid {
			t.Errorf("search %q: %v, want invalid", q, err)
		}
	}
	if _, err := r.svc.Search(ctx, viewer, "find", "game", "", 0, 10); chat.KindOf(err) != chat.KindForbidden {
		t.Errorf("a viewer searched: %v", err)
	}
}
