package chat_test

import (
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/redisstore"
)

// TestRedisClusterEngine runs the behaviour suite on a real 3-primary
// Redis Cluster: every script must stay in one hash slot (key tags).
func TestRedisClusterEngine(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	e := engine{name: "redis-cluster", open: func(t *testing.T, history int) (chat.Store, func() chat.Store) {
		prefix := fmt.Sprintf("t%d:", prefixN.Add(1))
		open := func() chat.Store {
			rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
			t.Cleanup(func() { _ = rdb.Close() })
			return redisstore.New(rdb, redisstore.Options{History: history, Prefix: prefix})
		}
		return open(), open
	}}
	runSuite(t, e)
	t.Run("TwoInstancesShareState", func(t *testing.T) { testTwoInstances(t, e) })
	t.Run("ConcurrentCreatesMakeOneCommand", func(t *testing.T) { testConcurrentCreates(t, e) })
	t.Run("RaidOnTwoReplicas", func(t *testing.T) { testRaidOnTwoReplicas(t, e) })
	t.Run("ModLogOnTwoReplicas", func(t *testing.T) { testModLogOnTwoReplicas(t, e) })
}
