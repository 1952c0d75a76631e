package realtime_test

import (
	"context"
	"fmt"
	"testing"

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
	})
}
