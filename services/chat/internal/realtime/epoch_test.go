package realtime_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/realtime"
)

// TestRecoveryChecksTheCursor: since= names a place in the log, and a
// client is told to reload (recovered:false) when that place is past the
// log's end (since=<head>-1 answered recovered:true) or its entry has
// another epoch; a cursor as the server wrote it recovers.
func TestRecoveryChecksTheCursor(t *testing.T) {
	for _, engine := range []string{"memory", "redis"} {
		t.Run(engine, func(t *testing.T) {
			cfg := replicaConfig{publicRead: true}
			if engine == "redis" {
				cfg.redisURL = redisServer(t).URL()
			}
			r := startReplica(t, cfg, testPrefix())
			ctx := context.Background()
			var cursors []chat.Cursor
			for _, text := range []string{"one", "two", "three"} {
				if _, err := r.svc.Send(ctx, chat.Fresh(r.admin), chat.SendInput{Message: text}); err != nil {
					t.Fatal(err)
				}
			}
			evs, err := r.store.ReadEvents(ctx, "general", chat.Cursor{}, 10)
			if err != nil || len(evs) != 3 {
				t.Fatal(evs, err)
			}
			for _, ev := range evs {
				cursors = append(cursors, ev.Cursor)
			}
			dialSince := func(since chat.Cursor) *client {
				return dial(t, r.base, "channel=general&since="+url.QueryEscape(since.String()), nil)
			}
			ok := dialSince(cursors[1])
			if h := ok.hello(); !h.Recovered || h.LastID != cursors[2] {
				t.Fatalf("since %s: hello %+v, want recovered at %s", cursors[1], h, cursors[2])
			}
			if m := ok.messages(1); m[0].Text != "three" {
				t.Fatalf("recovered %+v", m)
			}
			past := cursors[2]
			past.Seq, past.Epoch = 1, 0
			other := cursors[1]
			other.Epoch ^= 1
			for _, since := range []chat.Cursor{past, other} {
				if h := dialSince(since).hello(); h.Recovered {
					t.Fatalf("since %s: recovered:true, want a reload", since)
				}
			}
		})
	}
}

// TestLiveSubscribersOfALostTailReload: Redis fails over to a replica
// that had not received the last messages, and new messages take their
// ids. A live subscriber that had them is closed with 4010 (its replica
// finds its position's entry has another epoch) and, reconnecting with
// its cursor, is told to reload instead of skipping the new messages.
func TestLiveSubscribersOfALostTailReload(t *testing.T) {
	rs := redisServer(t)
	prefix := testPrefix()
	r := startReplica(t, replicaConfig{publicRead: true, redisURL: rs.URL()}, prefix)
	ctx := context.Background()
	c := dial(t, r.base, "channel=general", nil)
	c.hello()
	send := func(text string) {
		t.Helper()
		if _, err := r.svc.Send(ctx, chat.Fresh(r.admin), chat.SendInput{Message: text}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 5; i++ {
		send(fmt.Sprintf("m%d", i))
	}
	c.messages(5)
	evs, err := r.store.ReadEvents(ctx, "general", chat.Cursor{}, 10)
	if err != nil || len(evs) != 5 {
		t.Fatal(evs, err)
	}
	last := evs[4].Cursor
	// The promoted replica had messages 1..3: the log as it was then.
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer rdb.Close()
	logKey := prefix + "{ch:general}:log"
	xs, err := rdb.XRangeN(ctx, logKey, "-", "+", 3).Result()
	if err == nil {
		err = rdb.Del(ctx, logKey).Err()
	}
	for _, x := range xs {
		if err == nil {
			err = rdb.XAdd(ctx, &redis.XAddArgs{Stream: logKey, ID: x.ID, Values: x.Values}).Err()
		}
	}
	if err == nil {
		err = rdb.Set(ctx, prefix+"{ch:general}:seq", 3, 0).Err()
	}
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		send(fmt.Sprintf("after the loss %d", i)) // ids 4, 5, 6 again
	}
	if code := c.waitClosed(); code != realtime.CloseResync {
		t.Fatalf("live subscriber closed with %d, want %d (resync)", code, realtime.CloseResync)
	}
	again := dial(t, r.base, "channel=general&since="+url.QueryEscape(last.String()), nil)
	if h := again.hello(); h.Recovered {
		t.Fatalf("since %s after the loss: recovered:true, want a reload", last)
	}
}
