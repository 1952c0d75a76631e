package redistest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
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

// TestClusterWithReplicasFailsOver: a cluster with a replica per primary
// fails a primary over to its replica (the slot map everywhere names the
// new primary, which serves the old one's keys), and CLIENT KILL TYPE
// pubsub closes the Pub/Sub connections of every node.
func TestClusterWithReplicasFailsOver(t *testing.T) {
	c := redistest.StartClusterWithReplicas(t, 3, 1)
	if len(c.Nodes) != 6 {
		t.Fatalf("%d nodes, want 6", len(c.Nodes))
	}
	primaries := c.Primaries(t)
	if len(primaries) != 3 {
		t.Fatalf("%d primaries, want 3", len(primaries))
	}
	ctx := context.Background()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer rdb.Close()
	for i := 0; i < 30; i++ {
		if err := rdb.Set(ctx, fmt.Sprint("k", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	old := primaries[0]
	promoted := c.Failover(t, old)
	now := c.Primaries(t)
	if len(now) != 3 || slices.Contains(now, old) || !slices.Contains(now, promoted) {
		t.Fatalf("after the failover of %s to %s the primaries are %v", old.Addr(), promoted.Addr(), addrs(now))
	}
	rdb.ReloadState(ctx)
	for i := 0; i < 30; i++ {
		if v, err := rdb.Get(ctx, fmt.Sprint("k", i)).Int(); err != nil || v != i {
			t.Fatalf("k%d after the failover = %d, %v", i, v, err)
		}
	}

	// One Pub/Sub connection on a primary, one on a replica: both closed.
	before := c.KillPubSub(t)
	ps1 := redis.NewClient(&redis.Options{Addr: promoted.Addr()}).Subscribe(ctx, "a")
	ps2 := redis.NewClient(&redis.Options{Addr: old.Addr()}).Subscribe(ctx, "b")
	defer ps1.Close()
	defer ps2.Close()
	for _, ps := range []*redis.PubSub{ps1, ps2} {
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.KillPubSub(t); n != 2 {
		t.Fatalf("CLIENT KILL TYPE pubsub closed %d connections (%d before), want 2", n, before)
	}

	// A command refused as CROSSSLOT is counted.
	n0 := c.ErrorStat(t, "CROSSSLOT")
	err := redis.NewClient(&redis.Options{Addr: promoted.Addr()}).MSet(ctx, "{a}x", 1, "{b}y", 2).Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("MSET across slots: %v, want CROSSSLOT", err)
	}
	if n := c.ErrorStat(t, "CROSSSLOT"); n != n0+1 {
		t.Fatalf("errorstat_CROSSSLOT %d, want %d", n, n0+1)
	}
}

func addrs(ss []*redistest.Server) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Addr()
	}
	return out
}

// TestClusterKillPrimaryPromotesItsReplica: a stopped primary is replaced
// by its replica, which serves its keys.
func TestClusterKillPrimaryPromotesItsReplica(t *testing.T) {
	c := redistest.StartClusterWithReplicas(t, 3, 1)
	ctx := context.Background()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer rdb.Close()
	for i := 0; i < 30; i++ {
		if err := rdb.Set(ctx, fmt.Sprint("k", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// WAIT: the replicas have every write before their primary dies.
	_ = rdb.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		return m.Do(ctx, "WAIT", 1, 5000).Err()
	})
	old := c.Primaries(t)[0]
	promoted := c.KillPrimary(t, old)
	if now := c.Primaries(t); len(now) != 3 || slices.Contains(now, old) || !slices.Contains(now, promoted) {
		t.Fatalf("after %s died the primaries are %v", old.Addr(), addrs(now))
	}
	rdb.ReloadState(ctx)
	for i := 0; i < 30; i++ {
		if v, err := rdb.Get(ctx, fmt.Sprint("k", i)).Int(); err != nil || v != i {
			t.Fatalf("k%d after the failover = %d, %v", i, v, err)
		}
	}
}
