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
