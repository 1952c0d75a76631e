package realtime_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver/redisconn"
	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/realtime"
	"github.com/apistack/platform/services/chat/internal/redisstore"
)

// pauseOnScript pauses a Redis server as a script is sent to it, once
// armed: the send's reads are done, its write is in flight.
type pauseOnScript struct {
	rs    *redistest.Server
	armed atomic.Bool
}

func (p *pauseOnScript) DialHook(next redis.DialHook) redis.DialHook { return next }

func (p *pauseOnScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := cmd.Name(); (n == "evalsha" || n == "eval") && p.armed.CompareAndSwap(true, false) {
			p.rs.Pause()
		}
		return next(ctx, cmd)
	}
}

func (p *pauseOnScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestASendPastItsDeadlineIsUnavailable: a WebSocket send whose deadline
// expires while its store script waits for a paused Redis is answered as
// the HTTP send answers a store that does not answer: unavailable, 503,
// retry after a second; not as an internal error. (Which of go-redis's
// errors comes back, the context's or the socket's timeout at the same
// instant, varies: the message is checked in internal/apierr.)
func TestASendPastItsDeadlineIsUnavailable(t *testing.T) {
	rs := redisServer(t)
	rdb, err := redisconn.Open(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	pause := &pauseOnScript{rs: rs}
	rdb.AddHook(pause)
	prefix := testPrefix()
	r := startReplica(t, replicaConfig{redisURL: rs.URL(), publicRead: true,
		store: redisstore.New(rdb, redisstore.Options{History: 1000, Prefix: prefix}),
		opts:  realtime.Options{SendTimeout: 500 * time.Millisecond, Limits: &realtime.Limits{}}}, prefix)
	_, token := r.user(chat.RoleViewer, "pauser")
	c := dial(t, r.base, "channel=general", http.Header{"Authorization": {"Bearer " + token}})
	c.hello()
	if e := c.send("before"); e.Type != "ack" {
		t.Fatalf("send before the pause: %s %s", e.Type, e.Raw)
	}
	pause.armed.Store(true)
	e := c.send("while paused")
	rs.Resume()
	if pause.armed.Load() {
		t.Fatal("the send ran no script: Redis was never paused")
	}
	if e.Type != "error" || e.Code != string(chat.KindUnavailable) || e.Status != http.StatusServiceUnavailable {
		t.Fatalf("send past its deadline: %s %s %d %s, want error unavailable 503", e.Type, e.Code, e.Status, e.Raw)
	}
}
