package soak

import (
	"strings"
	"testing"
	"time"

	chatclient "github.com/apistack/platform/services/chat/client"
)

func samples(rss ...int64) []Sample {
	out := make([]Sample, len(rss))
	for i, r := range rss {
		out[i] = Sample{Elapsed: time.Duration(i+1) * time.Second, RSS: r, Goroutines: 100, RedisMemory: 1000}
	}
	return out
}

func TestJudgeFailsOnGrowthAfterWarmup(t *testing.T) {
	cfg := Config{Warmup: 3 * time.Second, MaxGrowth: 0.10, Rate: 1, Duration: 9 * time.Second, Sockets: 10}
	flat := &Report{Samples: samples(90, 100, 100, 105, 100, 104, 100, 103, 104), Sent: 9, Open: 10}
	judge(cfg, flat)
	if len(flat.Failures) != 0 {
		t.Fatalf("flat run failed: %v", flat.Failures)
	}
	// Growth during the warm-up does not count; after it, 100 -> 120 does.
	grew := &Report{Samples: samples(50, 100, 100, 100, 100, 100, 120, 120, 120), Sent: 9, Open: 10}
	judge(cfg, grew)
	if len(grew.Failures) != 1 || !strings.Contains(grew.Failures[0], "resident memory grew 20.0%") {
		t.Fatalf("failures %q, want one about resident memory", grew.Failures)
	}
	// Under the noise floor a 20% growth passes.
	cfg.NoiseBytes = 20
	grew.Failures = nil
	judge(cfg, grew)
	if len(grew.Failures) != 0 {
		t.Fatalf("growth under the noise floor failed: %v", grew.Failures)
	}
}

func TestJudgeChecksDeliveryAndLoad(t *testing.T) {
	cfg := Config{Warmup: 3 * time.Second, MaxGrowth: 0.10, Rate: 10, Duration: 6 * time.Second, Sockets: 10}
	rep := &Report{Samples: samples(1, 1, 1, 1, 1, 1), Lost: 1, Sent: 10, Open: 5,
		Errors: map[string]int64{"send: status 500": 1}}
	judge(cfg, rep)
	got := strings.Join(rep.Failures, "\n")
	for _, want := range []string{"missed 1 messages", "1 unexpected answers", "10 sends answered, want at least 54", "5 of 10 sockets open"} {
		if !strings.Contains(got, want) {
			t.Errorf("failures lack %q:\n%s", want, got)
		}
	}
}

func TestJudgeNeedsSamplesOnBothSides(t *testing.T) {
	cfg := Config{Warmup: 5 * time.Second, MaxGrowth: 0.10}
	rep := &Report{Samples: samples(1, 1, 1, 1, 1, 1)}
	judge(cfg, rep)
	if len(rep.Failures) != 1 || !strings.Contains(rep.Failures[0], "too few samples after the warm-up") {
		t.Fatalf("failures %q", rep.Failures)
	}
}

func TestSubscriberCountsGapsAndRepeats(t *testing.T) {
	r := &runner{errs: map[string]int64{}}
	s := &subscriber{r: r}
	feed := func(line string, resumed bool) {
		t.Helper()
		if err := chatclient.ParseFrame([]byte(line), func(ev chatclient.Event) { s.event(ev, resumed) }); err != nil {
			t.Fatal(err)
		}
	}
	for _, line := range []string{
		`{"type":"hello","channel":"c","last_id":"41","recovered":false}`,
		`{"type":"message","channel":"c","cursor":"42","message":{"id":42}}`,
		`{"type":"message_deleted","channel":"c","cursor":"42-1","message":{"id":40,"deleted":true}}`,
		`{"type":"message","channel":"c","cursor":"45","message":{"id":45}}`, // 43, 44 lost
		`{"type":"message","channel":"c","cursor":"45","message":{"id":45}}`, // repeated
	} {
		feed(line, false)
	}
	if r.lost.Load() != 2 || r.duplicated.Load() != 1 || r.delivered.Load() != 3 {
		t.Fatalf("lost %d duplicated %d delivered %d, want 2 1 3", r.lost.Load(), r.duplicated.Load(), r.delivered.Load())
	}
	if s.cursor != "45" {
		t.Fatalf("cursor %q, want 45", s.cursor)
	}
	// A resumed session keeps its place when recovered, restarts from last_id when not.
	feed(`{"type":"hello","last_id":"50","recovered":true}`, true)
	if s.cursor != "45" || r.recovered.Load() != 1 {
		t.Fatalf("recovered hello moved the cursor to %q", s.cursor)
	}
	feed(`{"type":"hello","last_id":"50-2","recovered":false}`, true)
	if s.cursor != "50-2" || s.lastID != 50 || r.notRecovered.Load() != 1 {
		t.Fatalf("not recovered: cursor %q last %d", s.cursor, s.lastID)
	}
}

func TestInfoField(t *testing.T) {
	info := "# Memory\r\nused_memory:1234567\r\nused_memory_human:1.18M\r\n"
	if n, err := infoField(info, "used_memory"); err != nil || n != 1234567 {
		t.Fatalf("got %d, %v", n, err)
	}
	if _, err := infoField(info, "used_memory_rss"); err == nil {
		t.Fatal("a missing field read")
	}
}

func TestRedisKeptLeavesBuffersOut(t *testing.T) {
	info := "# Memory\r\nused_memory:5000000\r\nmem_clients_normal:900000\r\nmem_aof_buffer:100000\r\n"
	if n, err := redisKept(info); err != nil || n != 4000000 {
		t.Fatalf("got %d, %v; want 4000000", n, err)
	}
	if _, err := redisKept("# Memory\r\nused_memory:5000000\r\n"); err == nil {
		t.Fatal("read without the buffer fields")
	}
}

func TestWSURLPassesTheCursorOn(t *testing.T) {
	u, err := wsURL("http://127.0.0.1:1", "c-1", "42-1")
	if err != nil || u != "ws://127.0.0.1:1/api/v1/ws?channel=c-1&since=42-1" {
		t.Fatalf("got %q, %v", u, err)
	}
}

func TestJudgeWaitsForFullHistoryWindows(t *testing.T) {
	cfg := Config{Warmup: 2 * time.Second, MaxGrowth: 0.10, Rate: 1, Duration: 8 * time.Second, Sockets: 10, Channels: 2, History: 5}
	ss := samples(100, 100, 100, 100, 100, 100, 100, 100)
	// Redis grows while the windows fill (10 messages), flat after.
	for i := range ss {
		ss[i].Sent = int64(2 * i)
		ss[i].RedisMemory = 1000 + 100*int64(min(i, 5))
	}
	rep := &Report{Samples: ss, Sent: 16, Open: 10}
	judge(cfg, rep)
	if len(rep.Failures) != 0 {
		t.Fatalf("growth while the windows filled counted: %v", rep.Failures)
	}
	if rep.Baseline.RedisMemory != 1500 {
		t.Fatalf("baseline %d, want the one once the windows were full (1500)", rep.Baseline.RedisMemory)
	}
	cfg.History = 50
	rep = &Report{Samples: ss, Sent: 16, Open: 10}
	judge(cfg, rep)
	if len(rep.Failures) != 1 || !strings.Contains(rep.Failures[0], "history windows need 100 messages") {
		t.Fatalf("failures %q", rep.Failures)
	}
}
