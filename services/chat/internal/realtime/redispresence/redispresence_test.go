package redispresence_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/services/chat/internal/realtime/redispresence"
)

func TestReportSumsReplicasAndForgetsSilentOnes(t *testing.T) {
	srv := redistest.Start(t)
	o, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(o)
	defer rdb.Close()
	ctx := context.Background()
	short := redispresence.New(rdb, "t:", 300*time.Millisecond)
	long := redispresence.New(rdb, "t:", time.Minute)
	step := func(p *redispresence.Presence, replica string, n, want int) {
		t.Helper()
		got, err := p.Report(ctx, "general", replica, n)
		if err != nil || got != want {
			t.Fatalf("Report(%s, %d) = %d, %v; want %d", replica, n, got, err, want)
		}
	}
	step(long, "a", 3, 3)
	step(long, "b", 2, 5)
	step(long, "a", 1, 3)
	step(long, "b", 0, 1)
	// A replica that stops reporting drops out once its entry expires.
	step(short, "c", 4, 5)
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := long.Report(ctx, "general", "a", 1)
		if err != nil {
			t.Fatal(err)
		}
		if got == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("silent replica still counted: %d", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReportBatchMatchesReport: a batch gives each channel the total a
// single Report would, on one server and on a 3-primary cluster (where the
// channels' keys live on different nodes), and fails as a whole when
// Redis is gone.
func TestReportBatchMatchesReport(t *testing.T) {
	srv := redistest.Start(t)
	one := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	defer one.Close()
	c := redistest.StartCluster(t, 3)
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer cluster.Close()
	ctx := context.Background()
	for name, rdb := range map[string]redis.UniversalClient{"one": one, "cluster": cluster} {
		p := redispresence.New(rdb, "b:", time.Minute)
		channels := []string{"a", "b", "c", "d", "e", "f"}
		if _, err := p.Report(ctx, "b", "other", 5); err != nil {
			t.Fatal(err)
		}
		totals, err := p.ReportBatch(ctx, "me", channels, []int{1, 2, 3, 4, 5, 6})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := []int{1, 7, 3, 4, 5, 6}
		for i := range want {
			if totals[i] != want[i] {
				t.Fatalf("%s: totals %v, want %v", name, totals, want)
			}
		}
		if got, err := p.Report(ctx, "b", "other", 0); err != nil || got != 2 {
			t.Fatalf("%s: after the batch, b = %d, %v; want 2", name, got, err)
		}
	}
	srv.Stop()
	if _, err := redispresence.New(one, "b:", time.Minute).ReportBatch(ctx, "me", []string{"a", "b"}, []int{1, 1}); err == nil {
		t.Fatal("a batch to a stopped Redis succeeded")
	}
}
