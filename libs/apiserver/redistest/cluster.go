package redistest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of primaries (no replicas) owned by a test:
// one redis-server per node with --cluster-enabled yes on free loopback
// ports, joined with redis-cli --cluster create, every slot assigned.
type Cluster struct {
	Nodes []*Server
}

// StartCluster launches a cluster of n primaries (at least 3, as redis-cli
// requires) and waits until every node reports cluster_state:ok. The
// nodes stop when the test ends. Like Start it skips (or fails with
// REQUIRE_REDIS=1) when redis-server or redis-cli is missing.
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	if n < 3 {
		tb.Fatalf("redistest: a cluster needs at least 3 primaries, not %d", n)
	}
	bin, err1 := exec.LookPath("redis-server")
	cli, err2 := exec.LookPath("redis-cli")
	if err1 != nil || err2 != nil {
		if os.Getenv("REQUIRE_REDIS") == "1" {
			tb.Fatalf("redis-server or redis-cli is not installed but REQUIRE_REDIS=1")
		}
		tb.Skip("redis-server or redis-cli is not installed; skipping cluster test (apt-get install redis-server redis-tools)")
	}
	c := &Cluster{}
	args := []string{"create"}
	for i := 0; i < n; i++ {
		s := &Server{tb: tb, bin: bin, port: clusterPort(tb), dir: tb.TempDir(),
			args: []string{"--cluster-enabled", "yes", "--cluster-node-timeout", "5000", "--appendonly", "no"}}
		s.start()
		tb.Cleanup(s.Stop)
		c.Nodes = append(c.Nodes, s)
		args = append(args, s.Addr())
	}
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	cmd := exec.Command(cli, append([]string{"--cluster"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, s := range c.Nodes {
		if err := waitClusterOK(ctx, s.Addr()); err != nil {
			tb.Fatalf("redis cluster node %s: %v", s.Addr(), err)
		}
	}
	return c
}

// Addrs lists the nodes' host:port.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		out[i] = s.Addr()
	}
	return out
}

// URL is a redis+cluster:// URL naming every node as a seed, the form
// libs/apiserver/redisconn (and so REDIS_URL) accepts.
func (c *Cluster) URL() string {
	addrs := c.Addrs()
	u := "redis+cluster://" + addrs[0]
	for i, a := range addrs[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + a
	}
	return u
}

// clusterPort finds a free port whose cluster bus port (port + 10000) is
// free too; ephemeral ports from the kernel may have no room for the bus.
func clusterPort(tb testing.TB) int {
	tb.Helper()
	for attempt := 0; attempt < 200; attempt++ {
		p := 20000 + rand.IntN(20000)
		a, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		b, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+10000)))
		a.Close()
		if err != nil {
			continue
		}
		b.Close()
		return p
	}
	tb.Fatal("redistest: no free port pair for a cluster node")
	return 0
}

// waitClusterOK polls CLUSTER INFO until the node says cluster_state:ok.
func waitClusterOK(ctx context.Context, addr string) error {
	for {
		info, err := command(addr, "CLUSTER", "INFO")
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster not ok: %q %v", info, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// command sends one command in RESP and returns the raw reply.
func command(addr string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write(b.Bytes()); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 8192)
	n, err := c.Read(buf)
	return string(buf[:n]), err
}

// MoveSlot moves a hash slot, with its keys, from the node that owns it to
// the next one in Nodes, the way redis-cli --cluster reshard does: mark it
// importing on the target and migrating on the owner, MIGRATE its keys,
// then give it to the target on every node. The old owner then ends the
// shard Pub/Sub subscriptions of the slot (it sends them sunsubscribe).
// It returns the indexes of the old and the new owner in Nodes.
func (c *Cluster) MoveSlot(tb testing.TB, slot int) (from, to int) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clients := make([]*redis.Client, len(c.Nodes))
	ids := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: s.Addr()})
		defer clients[i].Close()
		id, err := clients[i].ClusterMyID(ctx).Result()
		if err != nil {
			tb.Fatalf("redistest: CLUSTER MYID on %s: %v", s.Addr(), err)
		}
		ids[i] = id
	}
	shards, err := clients[0].ClusterShards(ctx).Result()
	if err != nil {
		tb.Fatalf("redistest: CLUSTER SHARDS: %v", err)
	}
	from = -1
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if int64(slot) < r.Start || int64(slot) > r.End {
				continue
			}
			for _, n := range sh.Nodes {
				if i := slices.Index(ids, n.ID); n.Role == "master" && i >= 0 {
					from = i
				}
			}
		}
	}
	if from < 0 {
		tb.Fatalf("redistest: no node owns slot %d", slot)
	}
	to = (from + 1) % len(c.Nodes)
	must := func(err error, what string) {
		if err != nil {
			tb.Fatalf("redistest: move slot %d: %s: %v", slot, what, err)
		}
	}
	must(clients[to].Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", ids[from]).Err(), "importing")
	must(clients[from].Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", ids[to]).Err(), "migrating")
	host, port, _ := net.SplitHostPort(c.Nodes[to].Addr())
	for {
		keys, err := clients[from].ClusterGetKeysInSlot(ctx, slot, 100).Result()
		must(err, "getkeysinslot")
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		must(clients[from].Do(ctx, args...).Err(), "migrate")
	}
	must(clients[to].Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", ids[to]).Err(), "node on the target")
	must(clients[from].Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", ids[to]).Err(), "node on the owner")
	for i, cl := range clients {
		if i != from && i != to {
			must(cl.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", ids[to]).Err(), "node elsewhere")
		}
	}
	return from, to
}
