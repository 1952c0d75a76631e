package fanout

import (
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apistack/platform/bench/internal/selfexec"
	"github.com/apistack/platform/bench/internal/wsfloor"
)

// TestMain lets Run start this test binary as its sender child.
func TestMain(m *testing.M) {
	if selfexec.Is(SenderChildEnv) {
		os.Exit(SenderChildMain())
	}
	os.Exit(m.Run())
}

func TestSendProcessAccountsLikeInProcess(t *testing.T) {
	floor := wsfloor.New(wsfloor.Options{Buffer: 1024})
	srv := httptest.NewServer(floor.Handler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := Run(ctx, Config{
		SubscribeBases: []string{srv.URL},
		Subscribers:    20,
		Rate:           100,
		Duration:       500 * time.Millisecond, // 50 messages
		Grace:          20 * time.Second,
		SendProcess:    true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 50 || len(res.SendErrors) != 0 || res.SendLatency.Count != 50 {
		t.Fatalf("sent %d, send errors %v, send latencies %d", res.Sent, res.SendErrors, res.SendLatency.Count)
	}
	if res.Lost != 0 || res.Duplicated != 0 || res.Unexpected != 0 || res.Delivered != 50*20 {
		t.Fatalf("lost %d dup %d unexpected %d delivered %d", res.Lost, res.Duplicated, res.Unexpected, res.Delivered)
	}
}

func TestSendProcessReportsFailedSends(t *testing.T) {
	floor := wsfloor.New(wsfloor.Options{Buffer: 1024})
	srv := httptest.NewServer(floor.Handler())
	defer srv.Close()
	// Subscribers on the floor, sends to a closed port: every send fails, and the
	// child's failures reach the result.
	dead := httptest.NewServer(nil)
	deadURL := dead.URL
	dead.Close()
	res, err := Run(context.Background(), Config{
		SubscribeBases: []string{srv.URL},
		SendBases:      []string{deadURL},
		Subscribers:    2,
		Rate:           20,
		Duration:       200 * time.Millisecond,
		Grace:          100 * time.Millisecond,
		WarmupTimeout:  300 * time.Millisecond,
		SendProcess:    true,
	})
	if err != nil {
		t.Fatal(err)
	}
	var failed int64
	for kind, n := range res.SendErrors {
		if !strings.Contains(kind, "refused") && !strings.Contains(kind, "warm-up") {
			t.Errorf("unexpected kind %q", kind)
		}
		if !strings.HasPrefix(kind, "warm-up") {
			failed += n
		}
	}
	if res.Sent != 0 || failed != 4 {
		t.Fatalf("sent %d, measured sends failed %d (want 4): %v", res.Sent, failed, res.SendErrors)
	}
}

func TestReadChildRefusesGarbage(t *testing.T) {
	for _, in := range []string{"x 1 2\n", "a one 2\n", "a 1 two\n", "d 1\n"} {
		if _, _, _, err := readChild(strings.NewReader(in), func(int64, time.Duration) {}, func(string, int64) {}); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
	var acks, fails int64
	end, issued, done, err := readChild(strings.NewReader("a 0 5\na 2 7\ne 3 status 500\nd 4 1000000000\n"),
		func(n int64, d time.Duration) { acks += n + int64(d) }, func(k string, n int64) {
			if k == "status 500" {
				fails += n
			}
		})
	if err != nil || !done || issued != 4 || !end.Equal(time.Unix(1, 0)) || acks != 14 || fails != 3 {
		t.Fatalf("end %v issued %d done %v err %v acks %d fails %d", end, issued, done, err, acks, fails)
	}
}
