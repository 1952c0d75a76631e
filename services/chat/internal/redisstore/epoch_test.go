package redisstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// A failover that lost the log's tail, or a Redis restarted empty, hands
// the same message ids out again. A reader whose cursor names an entry of
// the lost tail is told the history is gone, instead of skipping the new
// messages that took those ids: their entries have other epochs.
func TestLostTailIsNoticedByEpoch(t *testing.T) {
	ctx := context.Background()
	for _, reset := range []bool{false, true} {
		t.Run(fmt.Sprintf("reset=%v", reset), func(t *testing.T) {
			s, rdb := open(t, 1000)
			send := func(text string) {
				t.Helper()
				if _, err := s.AppendMessage(ctx, chat.Message{Channel: "general", Text: text, CreatedAt: time.Now()}, chat.Once{}); err != nil {
					t.Fatal(err)
				}
			}
			for i := 1; i <= 5; i++ {
				send(fmt.Sprintf("m%d", i))
			}
			evs, err := s.ReadEvents(ctx, "general", chat.Cursor{}, 100)
			if err != nil || len(evs) != 5 {
				t.Fatal(evs, err)
			}
			seen := evs[4].Cursor // a reader that got everything
			kept := evs[2].Cursor // one that got up to message 3
			if reset {
				// Redis restarted without its data.
				if err := rdb.FlushAll(ctx).Err(); err != nil {
					t.Fatal(err)
				}
			} else {
				// The promoted replica had messages 1..3 only: the log
				// as it was then (its last id 3-0), the counter at 3.
				log := "chat:{ch:general}:log"
				xs, err := rdb.XRangeN(ctx, log, "-", "+", 3).Result()
				if err == nil {
					err = rdb.Del(ctx, log).Err()
				}
				for _, x := range xs {
					if err == nil {
						err = rdb.XAdd(ctx, &redis.XAddArgs{Stream: log, ID: x.ID, Values: x.Values}).Err()
					}
				}
				if err == nil {
					err = rdb.Set(ctx, "chat:{ch:general}:seq", 3, 0).Err()
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			for i := 1; i <= 3; i++ {
				send(fmt.Sprintf("after the loss %d", i)) // ids 4..6 (1..3 after a reset)
			}
			_, err = s.ReadEvents(ctx, "general", seen, 100)
			if chat.KindOf(err) != chat.KindHistoryGone {
				t.Fatalf("after %s (lost): %v, want the history gone", seen, err)
			}
			got, err := s.ReadEvents(ctx, "general", kept, 100)
			switch {
			case reset && chat.KindOf(err) != chat.KindHistoryGone:
				t.Fatalf("after %s (reset): %v, want the history gone", kept, err)
			case !reset && (err != nil || len(got) != 3 || got[0].Message.Text != "after the loss 1"):
				t.Fatalf("after %s (kept): %+v, %v; want the three new messages", kept, got, err)
			}
		})
	}
}
