// Command pubsubhop measures Redis Pub/Sub delivery on a Redis Cluster, the
// hop under chat's live delivery: a classic PUBLISH on one primary to a
// subscriber on another (the Cluster relays it over its bus), the same on
// one primary, and a sharded SPUBLISH to an SSUBSCRIBE on the primary that
// owns the channel's slot (what chat uses). One message every -interval,
// timestamps in the payload, one after the other:
//
//	pubsubhop -addrs 127.0.0.1:16379,127.0.0.1:16380,127.0.0.1:16381 -n 1000 -interval 10ms
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/bench/internal/hist"
	"github.com/apistack/platform/bench/internal/netguard"
	"github.com/apistack/platform/bench/internal/pubsubhop"
)

func main() {
	addrs := flag.String("addrs", "127.0.0.1:16379,127.0.0.1:16380,127.0.0.1:16381", "the cluster's nodes, comma-separated")
	n := flag.Int("n", 1000, "messages per measurement")
	interval := flag.Duration("interval", 10*time.Millisecond, "time between messages")
	flag.Parse()
	log.SetFlags(0)
	if err := run(strings.Split(*addrs, ","), *n, *interval); err != nil {
		log.Fatal(err)
	}
}

func run(addrs []string, n int, interval time.Duration) error {
	for _, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		if err == nil {
			err = netguard.CheckHost(host)
		}
		if err != nil {
			return fmt.Errorf("-addrs %s: %w", a, err)
		}
	}
	ctx := context.Background()
	// The dialer refuses non-loopback peers too: the cluster announces its
	// nodes, and those are what the client dials.
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return netguard.Dialer(time.Second).DialContext(ctx, network, addr)
		}})
	defer cluster.Close()
	const channel = "pubsubhop:{hop}"
	owner, err := cluster.MasterForKey(ctx, channel)
	if err != nil {
		return fmt.Errorf("the owner of %s: %w", channel, err)
	}
	var other *redis.Client
	err = cluster.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error {
		if c.Options().Addr != owner.Options().Addr {
			other = c
		}
		return nil
	})
	if err != nil || other == nil {
		return fmt.Errorf("a second primary: %v", err)
	}
	fmt.Printf("# %s, %d messages %s apart, channel's slot on %s\n", time.Now().UTC().Format(time.RFC3339), n, interval, owner.Options().Addr)
	fmt.Printf("%-40s %9s %9s %9s %6s\n", "hop", "p50", "p99", "max", "lost")
	cases := []struct {
		name    string
		sub     func() *redis.PubSub
		publish func(context.Context, string) error
	}{
		{"PUBLISH on another primary (bus)", func() *redis.PubSub { return other.Subscribe(ctx, channel) },
			func(ctx context.Context, p string) error { return owner.Publish(ctx, channel, p).Err() }},
		{"PUBLISH on the subscriber's primary", func() *redis.PubSub { return owner.Subscribe(ctx, channel) },
			func(ctx context.Context, p string) error { return owner.Publish(ctx, channel, p).Err() }},
		{"SPUBLISH to SSUBSCRIBE on the owner", func() *redis.PubSub { return owner.SSubscribe(ctx, channel) },
			func(ctx context.Context, p string) error { return owner.SPublish(ctx, channel, p).Err() }},
	}
	for _, c := range cases {
		ps := c.sub()
		if _, err := ps.Receive(ctx); err != nil { // the confirmation
			return fmt.Errorf("%s: subscribe: %w", c.name, err)
		}
		recv := make(chan string, n)
		go func() {
			for m := range ps.Channel() {
				recv <- m.Payload
			}
		}()
		h, lost, err := pubsubhop.Run(ctx, c.publish, recv, n, interval, 2*time.Second)
		_ = ps.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		fmt.Printf("%-40s %9s %9s %9s %6d\n", c.name, hist.FormatNs(h.Quantile(0.5)), hist.FormatNs(h.Quantile(0.99)), hist.FormatNs(h.Max()), lost)
	}
	return nil
}
