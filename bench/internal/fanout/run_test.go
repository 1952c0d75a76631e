package fanout

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/apistack/platform/bench/internal/wsfloor"
	chatclient "github.com/apistack/platform/services/chat/client"
)

func TestFanoutAgainstFloorLosesAndDuplicatesNothing(t *testing.T) {
	// a generous buffer: this test is about the driver's accounting, not the floor's drops
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
		Token:          "ignored-by-the-floor",
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Subscribers != 20 || res.Ready != 20 {
		t.Fatalf("connected %d ready %d, conn errors %v", res.Subscribers, res.Ready, res.ConnErrors)
	}
	if res.Sent != 50 || len(res.SendErrors) != 0 {
		t.Fatalf("sent %d, send errors %v", res.Sent, res.SendErrors)
	}
	if res.Lost != 0 || res.Duplicated != 0 || res.Unexpected != 0 || res.OutOfOrder != 0 {
		t.Fatalf("lost %d dup %d unexpected %d out of order %d", res.Lost, res.Duplicated, res.Unexpected, res.OutOfOrder)
	}
	if res.Delivered != 50*20 || res.Expected != 50*20 || res.Latency.Count != 50*20 {
		t.Fatalf("delivered %d expected %d latencies %d", res.Delivered, res.Expected, res.Latency.Count)
	}
	if res.DeliveredPerSec() <= 0 || res.Latency.P99 <= 0 {
		t.Fatalf("no rate or latency: %+v", res)
	}
	if st := floor.Stats(); st.Dropped != 0 {
		t.Fatalf("floor dropped %d", st.Dropped)
	}
}

func TestFanoutSaturationIsBoundedAndAccounted(t *testing.T) {
	floor := wsfloor.New(wsfloor.Options{})
	srv := httptest.NewServer(floor.Handler())
	defer srv.Close()
	res, err := Run(context.Background(), Config{
		SubscribeBases: []string{srv.URL, srv.URL}, // two "replicas"
		Subscribers:    10,
		Saturate:       true,
		InFlight:       4,
		Duration:       300 * time.Millisecond,
		MaxMessages:    500,
		Grace:          5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent == 0 || res.Sent > 500 {
		t.Fatalf("sent %d, want 1..500", res.Sent)
	}
	// whatever the floor dropped shows up as lost, exactly
	if got := res.Delivered + res.Lost; got != res.Expected {
		t.Fatalf("delivered %d + lost %d != expected %d", res.Delivered, res.Lost, res.Expected)
	}
	if st := floor.Stats(); int64(st.Dropped) < res.Lost {
		t.Fatalf("lost %d but the floor dropped only %d", res.Lost, st.Dropped)
	}
}

// faulty broadcasts synchronously but duplicates seq 3 and skips seq 5 for every
// subscriber, and packs two events in one frame for seq 8, to check the accounting.
type faulty struct {
	mu    sync.Mutex
	conns []*websocket.Conn
}

func (f *faulty) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case chatclient.WSPath:
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns = append(f.conns, c)
		f.mu.Unlock()
		<-c.CloseRead(r.Context()).Done()
	case chatclient.SendPath:
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		var b chatclient.SendBody
		_ = json.NewDecoder(r.Body).Decode(&b)
		ev, _ := chatclient.EncodeMessageEvent(chatclient.Message{Text: b.Message, Channel: b.Channel})
		frame := ev
		if t, _ := ParseText(b.Message); t.Seq == 3 {
			frame = append(append(append([]byte{}, ev...), '\n'), ev...)
		} else if t.Seq == 5 {
			frame = nil
		} else if t.Seq == 8 {
			frame = append(append([]byte(`{"type":"presence","count":3}`), '\n'), ev...)
		}
		f.mu.Lock()
		for _, c := range f.conns {
			if frame != nil {
				_ = c.Write(r.Context(), websocket.MessageText, frame)
			}
		}
		f.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}
}

func TestFanoutCountsLossAndDuplicatesPerSubscriber(t *testing.T) {
	srv := httptest.NewServer(&faulty{})
	defer srv.Close()
	res, err := Run(context.Background(), Config{
		SubscribeBases: []string{srv.URL},
		Subscribers:    3,
		Rate:           50,
		Duration:       200 * time.Millisecond, // 10 messages
		Grace:          500 * time.Millisecond,
		Token:          "tok",
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 10 || res.Lost != 3 || res.Duplicated != 3 || res.Delivered != 27 {
		t.Fatalf("sent %d lost %d dup %d delivered %d", res.Sent, res.Lost, res.Duplicated, res.Delivered)
	}
}

func TestFanoutRefusesNonLoopbackTargets(t *testing.T) {
	_, err := Run(context.Background(), Config{SubscribeBases: []string{"http://192.0.2.1:80"}, Subscribers: 1, Rate: 1, Duration: time.Second})
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("err = %v", err)
	}
}
