package redistest_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver/redistest"
)

// TestClusterServesEverySlot: keys in many slots land on several nodes and
// read back through a cluster client.
func TestClusterServesEverySlot(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer rdb.Close()
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		if err := rdb.Set(ctx, fmt.Sprint("k", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var masters atomic.Int32 // ForEachMaster calls its function on every primary at once
	err := rdb.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		n, err := m.DBSize(ctx).Result()
		if err != nil {
			return err
		}
		if n > 0 {
			masters.Add(1)
		}
		return nil
	})
	if err != nil || masters.Load() != 3 {
		t.Fatalf("keys on %d primaries (%v), want 3", masters.Load(), err)
	}
	if v, err := rdb.Get(ctx, "k42").Int(); err != nil || v != 42 {
		t.Fatalf("k42 = %d, %v", v, err)
	}
}
