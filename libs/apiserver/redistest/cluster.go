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

// Cluster is a Redis Cluster owned by a test: one redis-server per node
// with --cluster-enabled yes on free loopback ports, joined with redis-cli
// --cluster create, every slot assigned. Nodes holds every node, primaries
// and replicas; a failover changes which is which (Primaries asks).
type Cluster struct {
	Nodes []*Server
}

// StartCluster launches a cluster of n primaries (at least 3, as redis-cli
// requires) and no replicas, and waits until every node reports
// cluster_state:ok. The nodes stop when the test ends. Like Start it skips
// (or fails with REQUIRE_REDIS=1) when redis-server or redis-cli is
// missing.
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	return StartClusterWithReplicas(tb, n, 0)
}

// StartClusterWithReplicas launches a cluster of n primaries with
// replicas replicas each (redis-cli gives every primary the same number),
// and waits until every node reports cluster_state:ok and every replica
// is in sync with its primary, so a failover (Failover) can start at once.
func StartClusterWithReplicas(tb testing.TB, n, replicas int) *Cluster {
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
	for i := 0; i < n*(1+replicas); i++ {
		s := &Server{tb: tb, bin: bin, port: clusterPort(tb), dir: tb.TempDir(),
			args: []string{"--cluster-enabled", "yes", "--cluster-node-timeout", "5000", "--appendonly", "no"}}
		s.start()
		tb.Cleanup(s.Stop)
		c.Nodes = append(c.Nodes, s)
		args = append(args, s.Addr())
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
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
	if replicas > 0 {
		c.waitReplicasInSync(tb, ctx)
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

// role is a node's replication role ("master" or "slave") and, for a
// replica, whether its link to its primary is up.
func role(ctx context.Context, rdb *redis.Client) (role string, linkUp bool, err error) {
	info, err := rdb.Info(ctx, "replication").Result()
	if err != nil {
		return "", false, err
	}
	return infoField(info, "role"), infoField(info, "master_link_status") == "up", nil
}

// infoField reads one "name:value" line of an INFO reply.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// waitReplicasInSync waits until every replica's link to its primary is up.
func (c *Cluster) waitReplicasInSync(tb testing.TB, ctx context.Context) {
	tb.Helper()
	for _, s := range c.Nodes {
		rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
		for {
			r, up, err := role(ctx, rdb)
			if err == nil && (r == "master" || up) {
				break
			}
			if ctx.Err() != nil {
				_ = rdb.Close()
				tb.Fatalf("redistest: replica %s not in sync with its primary: role %q, link up %v, %v", s.Addr(), r, up, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = rdb.Close()
	}
}

// Primaries lists the nodes that are primaries now (a failover changes
// them), in the order of Nodes. Stopped nodes are left out.
func (c *Cluster) Primaries(tb testing.TB) []*Server {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []*Server
	for _, s := range c.Nodes {
		if !s.running() {
			continue
		}
		rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
		r, _, err := role(ctx, rdb)
		_ = rdb.Close()
		if err != nil {
			tb.Fatalf("redistest: role of %s: %v", s.Addr(), err)
		}
		if r == "master" {
			out = append(out, s)
		}
	}
	return out
}

// Failover makes a replica of primary take its place with CLUSTER
// FAILOVER (a manual failover: the replica catches up with the primary,
// which stops taking writes meanwhile, then they swap roles, and the
// cluster learns it), and waits until every node's slot map names the
// new primary and says cluster_state:ok. It returns the new primary; the
// old one is now its replica.
func (c *Cluster) Failover(tb testing.TB, primary *Server) *Server {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := redis.NewClient(&redis.Options{Addr: primary.Addr()})
	defer p.Close()
	id, err := p.ClusterMyID(ctx).Result()
	if err != nil {
		tb.Fatalf("redistest: CLUSTER MYID on %s: %v", primary.Addr(), err)
	}
	var replica *Server
	var rc *redis.Client
	for _, s := range c.Nodes {
		if s == primary || !s.running() {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: s.Addr()})
		nodes, err := cl.ClusterNodes(ctx).Result()
		if err == nil && myselfReplicates(nodes, id) {
			replica, rc = s, cl
			break
		}
		_ = cl.Close()
	}
	if replica == nil {
		tb.Fatalf("redistest: %s has no running replica to fail over to", primary.Addr())
	}
	defer rc.Close()
	if err := rc.ClusterFailover(ctx).Err(); err != nil {
		tb.Fatalf("redistest: CLUSTER FAILOVER on %s: %v", replica.Addr(), err)
	}
	newID, err := rc.ClusterMyID(ctx).Result()
	if err != nil {
		tb.Fatalf("redistest: CLUSTER MYID on %s: %v", replica.Addr(), err)
	}
	for {
		if c.everyNodeSees(ctx, newID) {
			return replica
		}
		if ctx.Err() != nil {
			tb.Fatalf("redistest: failover of %s to %s did not complete", primary.Addr(), replica.Addr())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// KillPrimary stops primary's process (as a crash would: its connections
// drop, its port refuses) and waits until the cluster has promoted one of
// its replicas, which takes the cluster node timeout (5 s) and an
// election: every running node's slot map names the new primary and says
// cluster_state:ok. It returns the new primary.
func (c *Cluster) KillPrimary(tb testing.TB, primary *Server) *Server {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := redis.NewClient(&redis.Options{Addr: primary.Addr()})
	id, err := p.ClusterMyID(ctx).Result()
	_ = p.Close()
	if err != nil {
		tb.Fatalf("redistest: CLUSTER MYID on %s: %v", primary.Addr(), err)
	}
	var replicas []*Server
	for _, s := range c.Nodes {
		if s == primary || !s.running() {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: s.Addr()})
		nodes, err := cl.ClusterNodes(ctx).Result()
		_ = cl.Close()
		if err == nil && myselfReplicates(nodes, id) {
			replicas = append(replicas, s)
		}
	}
	if len(replicas) == 0 {
		tb.Fatalf("redistest: %s has no running replica to take its place", primary.Addr())
	}
	primary.Stop()
	for {
		for _, s := range replicas {
			cl := redis.NewClient(&redis.Options{Addr: s.Addr()})
			newID, err := cl.ClusterMyID(ctx).Result()
			r, _, err2 := role(ctx, cl)
			_ = cl.Close()
			if err == nil && err2 == nil && r == "master" && c.everyNodeSees(ctx, newID) {
				return s
			}
		}
		if ctx.Err() != nil {
			tb.Fatalf("redistest: no replica of %s was promoted", primary.Addr())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// myselfReplicates reports whether the CLUSTER NODES reply is of a
// replica of the node primaryID.
func myselfReplicates(nodes, primaryID string) bool {
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && strings.Contains(f[2], "myself") {
			return strings.Contains(f[2], "slave") && f[3] == primaryID
		}
	}
	return false
}

// everyNodeSees reports whether every running node says cluster_state:ok
// and lists the node id as a primary that serves slots.
func (c *Cluster) everyNodeSees(ctx context.Context, id string) bool {
	for _, s := range c.Nodes {
		if !s.running() {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: s.Addr()})
		info, err1 := cl.ClusterInfo(ctx).Result()
		nodes, err2 := cl.ClusterNodes(ctx).Result()
		_ = cl.Close()
		if err1 != nil || err2 != nil || !strings.Contains(info, "cluster_state:ok") {
			return false
		}
		found := false
		for _, line := range strings.Split(nodes, "\n") {
			f := strings.Fields(line)
			if len(f) > 8 && f[0] == id && strings.Contains(f[2], "master") {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// KillPubSub closes every Pub/Sub client connection of every running node
// (CLIENT KILL TYPE pubsub), as a proxy or a network fault would, and
// returns how many were closed.
func (c *Cluster) KillPubSub(tb testing.TB) int64 {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var killed int64
	for _, s := range c.Nodes {
		if !s.running() {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: s.Addr()})
		n, err := cl.ClientKillByFilter(ctx, "TYPE", "pubsub").Result()
		_ = cl.Close()
		if err != nil {
			tb.Fatalf("redistest: CLIENT KILL TYPE pubsub on %s: %v", s.Addr(), err)
		}
		killed += n
	}
	return killed
}

// ErrorStat adds up, over the running nodes, how many error replies named
// name (such as "CROSSSLOT" or "MOVED") they sent: INFO errorstats.
func (c *Cluster) ErrorStat(tb testing.TB, name string) int64 {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var total int64
	for _, s := range c.Nodes {
		if !s.running() {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: s.Addr()})
		info, err := cl.Info(ctx, "errorstats").Result()
		_ = cl.Close()
		if err != nil {
			tb.Fatalf("redistest: INFO errorstats on %s: %v", s.Addr(), err)
		}
		// errorstat_CROSSSLOT:count=3
		v := infoField(info, "errorstat_"+name)
		if n, ok := strings.CutPrefix(v, "count="); ok {
			k, err := strconv.ParseInt(n, 10, 64)
			if err != nil {
				tb.Fatalf("redistest: errorstat_%s on %s: %q", name, s.Addr(), v)
			}
			total += k
		}
	}
	return total
}
