package realtime_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/realtime"
)

// TestRedisCluster runs the cross-replica tests on a real 3-primary Redis
// Cluster (REDIS_URL=redis+cluster://...): channels hash to different
// slots on different primaries, each replica's feed listens on one node,
// and delivery, recovery and revocations still reach every replica.
func TestRedisCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	url := c.URL()
	t.Run("CrossReplicaDeliveryInChannelOrder", func(t *testing.T) { testCrossReplicaOrder(t, url) })
	t.Run("RecoveryAfterClientDropAcrossReplicas", func(t *testing.T) {
		a, b := twoReplicas(t, replicaConfig{redisURL: url, publicRead: true})
		testRecoveryAfterClientDrop(t, a, b)
	})
	t.Run("Revocations", func(t *testing.T) {
		a, b := twoReplicas(t, replicaConfig{redisURL: url})
		testRevocations(t, a, b)
	})
	t.Run("ChannelsOnEverySlotCrossReplicas", func(t *testing.T) {
		a, b := twoReplicas(t, replicaConfig{redisURL: url, publicRead: true, opts: realtime.Options{Limits: &realtime.Limits{}}})
		const channels = 60 // spread over the 3 primaries
		subs := make([]*client, channels)
		for i := range subs {
			subs[i] = dial(t, b.base, fmt.Sprintf("channel=s%d", i), nil)
			subs[i].hello()
		}
		for i := 0; i < channels; i++ {
			for k := 0; k < 3; k++ {
				if _, err := a.svc.Send(context.Background(), chat.Held(a.admin), chat.SendInput{Channel: fmt.Sprintf("s%d", i), Message: fmt.Sprint(k)}); err != nil {
					t.Fatal(err)
				}
			}
		}
		for i, c := range subs {
			for k, m := range c.messages(3) {
				if m.Channel != fmt.Sprintf("s%d", i) || m.ID != int64(k+1) || m.Text != fmt.Sprint(k) {
					t.Fatalf("channel s%d message %d: %+v", i, k, m)
				}
			}
		}
		// b reads its 60 channels through one shard connection per
		// primary (sharded Pub/Sub: the primary that appends delivers),
		// each carrying that primary's channels; a watches none.
		total := 0
		for _, node := range c.Nodes {
			ssubs := shardSubscribers(t, node.Addr())
			if len(ssubs) != 1 {
				t.Fatalf("node %s: %d shard-subscribed connections %v, want 1", node.Addr(), len(ssubs), ssubs)
			}
			total += ssubs[0]
		}
		if total != channels {
			t.Fatalf("%d channels subscribed over the primaries, want %d", total, channels)
		}
	})
	t.Run("SlotMoveKeepsDeliveryInOrder", func(t *testing.T) { testSlotMove(t, c) })
}

// testSlotMove: a channel's slot moves to another primary while a replica
// delivers it. The old owner ends the shard subscription; the feed places
// the channel on the new owner, reads the stream from its position, and
// the subscriber gets every message once and in order, before and after.
func testSlotMove(t *testing.T, c *redistest.Cluster) {
	cfg := replicaConfig{redisURL: c.URL(), publicRead: true}
	prefix := testPrefix()
	a := startReplica(t, cfg, prefix)
	b := startReplica(t, cfg, prefix)
	ctx := context.Background()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer rdb.Close()
	slot, err := rdb.ClusterKeySlot(ctx, prefix+"{ch:moving}:live").Result()
	if err != nil {
		t.Fatal(err)
	}
	sub := dial(t, b.base, "channel=moving", nil)
	sub.hello()
	send := func(from, to int) {
		t.Helper()
		for i := from; i <= to; i++ {
			if _, err := a.svc.Send(ctx, chat.Held(a.admin), chat.SendInput{Channel: "moving", Message: fmt.Sprint("m", i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	expect := func(from, to int) {
		t.Helper()
		for k, m := range sub.messages(to - from + 1) {
			if m.ID != int64(from+k) || m.Text != fmt.Sprint("m", from+k) {
				t.Fatalf("message %d: got %+v", from+k, m)
			}
		}
	}
	send(1, 5)
	expect(1, 5)
	_, to := c.MoveSlot(t, int(slot))
	// Sent while the feed moves: read from the stream once it is placed.
	send(6, 10)
	expect(6, 10)
	// The subscription is on the new owner, and live notices flow again.
	newOwner := redis.NewClient(&redis.Options{Addr: c.Nodes[to].Addr()})
	defer newOwner.Close()
	deadline := time.Now().Add(wait)
	for {
		live, err := newOwner.PubSubShardChannels(ctx, prefix+"{ch:moving}:live").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(live) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new owner %s has no subscription to the moved channel", c.Nodes[to].Addr())
		}
		time.Sleep(20 * time.Millisecond)
	}
	send(11, 15)
	expect(11, 15)
}

// shardSubscribers lists, for each connection of the server at addr with
// shard subscriptions, how many it holds.
func shardSubscribers(t *testing.T, addr string) []int {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	list, err := rdb.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		if m := ssubField.FindStringSubmatch(line); m != nil && m[1] != "0" {
			n, _ := strconv.Atoi(m[1])
			out = append(out, n)
		}
	}
	return out
}
