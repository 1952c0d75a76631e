package realtime_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/realtime"
)

var (
	subField  = regexp.MustCompile(` sub=(\d+) `)
	ssubField = regexp.MustCompile(` ssub=(\d+) `)
)

// TestManyChannelsShareOneFeedConnection: a replica serving 100 channels
// holds one shard Pub/Sub connection (plus the revocations') and no
// blocked one (the engine used to park
// a blocking XREAD per channel on its pool), every channel's messages
// cross replicas, and once a channel's last subscriber has left (and the
// linger passed) the replica no longer listens to it.
func TestManyChannelsShareOneFeedConnection(t *testing.T) {
	rs := redisServer(t)
	prefix := testPrefix()
	cfg := replicaConfig{redisURL: rs.URL(), publicRead: true, opts: realtime.Options{RoomLinger: 100 * time.Millisecond, Limits: &realtime.Limits{}}}
	a := startReplica(t, cfg, prefix)
	b := startReplica(t, cfg, prefix)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	const channels = 100
	subs := make([]*client, channels)
	for i := range subs {
		subs[i] = dial(t, b.base, fmt.Sprintf("channel=c%d", i), nil)
		subs[i].hello()
	}
	for i := 0; i < channels; i++ {
		if _, err := a.svc.Send(ctx, chat.Held(a.admin), chat.SendInput{Channel: fmt.Sprintf("c%d", i), Message: fmt.Sprint("to ", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range subs {
		m := c.messages(1)[0]
		if m.Channel != fmt.Sprintf("c%d", i) || m.Text != fmt.Sprint("to ", i) {
			t.Fatalf("channel c%d got %+v", i, m)
		}
	}

	live, err := rdb.PubSubShardChannels(ctx, prefix+"{ch:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != channels {
		t.Fatalf("%d live channels subscribed, want %d", len(live), channels)
	}
	clients, err := rdb.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	var subscribers, shardSubscribers []string
	blocked := 0
	for _, line := range strings.Split(strings.TrimSpace(clients), "\n") {
		if m := subField.FindStringSubmatch(line); m != nil && m[1] != "0" {
			subscribers = append(subscribers, m[1])
		}
		if m := ssubField.FindStringSubmatch(line); m != nil && m[1] != "0" {
			shardSubscribers = append(shardSubscribers, m[1])
		}
		if strings.Contains(line, " flags=b") {
			blocked++
		}
	}
	// b's shard connection carries the 100 channels; each replica has one
	// more for the revocations; a watches no channel, so holds no shard
	// connection.
	if len(subscribers) != 2 || subscribers[0] != "1" || subscribers[1] != "1" ||
		len(shardSubscribers) != 1 || shardSubscribers[0] != fmt.Sprint(channels) || blocked != 0 {
		t.Fatalf("subscribed connections %v, shard-subscribed %v and %d blocked for %d channels; want [1 1], [%d] and none blocked:\n%s",
			subscribers, shardSubscribers, blocked, channels, channels, clients)
	}

	for _, c := range subs {
		c.ws.CloseNow()
	}
	deadline := time.Now().Add(wait)
	for {
		live, err := rdb.PubSubShardChannels(ctx, prefix+"{ch:*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(live) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still subscribed to %d channels nobody watches", len(live))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
