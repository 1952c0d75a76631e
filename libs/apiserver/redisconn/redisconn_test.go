package redisconn_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver/redisconn"
	"github.com/apistack/platform/libs/apiserver/redistest"
)

func TestOpenForms(t *testing.T) {
	rows := []struct {
		url     string
		kind    string // single, sentinel, cluster
		wantErr string
	}{
		{url: "redis://localhost:6379/0", kind: "single"},
		{url: "rediss://user:pw@localhost:6380/1", kind: "single"},
		{url: "redis://s1:26379/0?master_name=mymaster&addr=s2:26379", kind: "sentinel"},
		{url: "redis+sentinel://s1:26379/0?master_name=mymaster", kind: "sentinel"},
		{url: "redis+cluster://n1:6379?addr=n2:6379&addr=n3:6379", kind: "cluster"},
		{url: "redis://n1:6379?addr=n2:6379&addr=n3:6379", kind: "cluster"},
		{url: "http://localhost", wantErr: "scheme"},
		{url: "redis+sentinel://s1:26379/0", wantErr: "master_name"},
		{url: "redis://localhost:6379/0?bogus=1", wantErr: "REDIS_URL"},
	}
	for _, r := range rows {
		t.Run(r.url, func(t *testing.T) {
			c, err := redisconn.Open(r.url)
			if r.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), r.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, r.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			switch cc := c.(type) {
			case *redis.Client:
				if r.kind == "cluster" {
					t.Fatalf("got a single-node client for %s", r.url)
				}
				if !cc.Options().ContextTimeoutEnabled {
					t.Error("context deadlines are not honoured")
				}
			case *redis.ClusterClient:
				if r.kind != "cluster" {
					t.Fatalf("got a cluster client for %s", r.url)
				}
			default:
				t.Fatalf("unexpected client %T", c)
			}
		})
	}
}

func TestOpenWithTimeoutTalksToRealRedis(t *testing.T) {
	srv := redistest.Start(t)
	c, err := redisconn.OpenWith(srv.URL(), redisconn.Options{Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Set(context.Background(), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got := c.Get(context.Background(), "k").Val(); got != "v" {
		t.Fatalf("GET k = %q", got)
	}
	if o := c.(*redis.Client).Options(); o.ReadTimeout != 200*time.Millisecond || o.MaxRetries > 0 {
		t.Errorf("options not tuned: read %v retries %d", o.ReadTimeout, o.MaxRetries)
	}
}

func TestRedacted(t *testing.T) {
	if got := redisconn.Redacted("redis://user:secret@host:6379/0"); strings.Contains(got, "secret") {
		t.Fatalf("password shown: %s", got)
	}
}

func TestRedactedHidesEverySecret(t *testing.T) {
	rows := []struct{ in, want string }{
		{"", ""},
		{"redis://localhost:6379/0", "redis://localhost:6379/0"},
		{"redis://user:secret@host:6379/0", "redis://***@host:6379/0"},
		{"redis://:secret@host:6379/0", "redis://***@host:6379/0"},
		{"redis://secret@host:6379/0", "redis://***@host:6379/0"},
		{"redis+sentinel://:secret@s1:26379/0?master_name=m&password=secret&sentinel_password=secret",
			"redis+sentinel://***@s1:26379/0?master_name=m&password=***&sentinel_password=***"},
		{"redis://host:6379/0?addr=n2:6379", "redis://host:6379/0?addr=n2:6379"},
	}
	for _, r := range rows {
		got := redisconn.Redacted(r.in)
		if got != r.want || strings.Contains(got, "secret") {
			t.Errorf("Redacted(%q) = %q, want %q", r.in, got, r.want)
		}
	}
}

func TestValidateAgreesWithOpen(t *testing.T) {
	for _, u := range []string{"redis://localhost:6379/0", "redis+cluster://n1:6379?addr=n2:6379", "http://x", "redis+sentinel://s1:26379/0", "redis://h/0?bogus=1"} {
		c, openErr := redisconn.Open(u)
		if c != nil {
			_ = c.Close()
		}
		if err := redisconn.Validate(u); (err == nil) != (openErr == nil) {
			t.Errorf("%s: Validate %v, Open %v", u, err, openErr)
		}
	}
}

// incrScript is a write that is not idempotent, sent as EVALSHA as the
// services' scripts are.
var incrScript = redis.NewScript(`return redis.call('INCR', KEYS[1])`)

// A write sent to a Redis that stalls is sent once: its caller learns
// that it timed out, and the write runs once when Redis resumes. With
// go-redis's default retries the same script ran up to four times.
func TestNoRetrySendsAStalledWriteOnce(t *testing.T) {
	srv := redistest.Start(t)
	// go-redis's own read timeout (3 s): it retries a command that timed
	// out on it (a read_timeout given in the URL behaves otherwise).
	c, err := redisconn.OpenWith(srv.URL(), redisconn.Options{NoRetry: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := incrScript.Load(ctx, c).Err(); err != nil {
		t.Fatal(err)
	}
	srv.Pause()
	resumed := make(chan struct{})
	go func() {
		defer close(resumed)
		time.Sleep(6 * time.Second) // past the first read's timeout, not a retry's
		srv.Resume()
	}()
	err = incrScript.Run(ctx, c, []string{"writes"}).Err()
	<-resumed
	if err == nil {
		t.Fatal("INCR on a paused Redis answered without error")
	}
	deadline := time.Now().Add(5 * time.Second)
	var n int64
	for time.Now().Before(deadline) {
		// The first copy runs once Redis reads its socket again.
		if n, err = c.Get(ctx, "writes").Int64(); err == nil && n > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // room for a retried copy to land
	if n, _ = c.Get(ctx, "writes").Int64(); n != 1 {
		t.Fatalf("the stalled INCR ran %d times, want once", n)
	}
}

func TestNoRetryHoldsForEveryForm(t *testing.T) {
	for _, url := range []string{
		"redis://localhost:6379/0",
		"redis+sentinel://s1:26379/0?master_name=mymaster",
		"redis+cluster://n1:6379?addr=n2:6379",
	} {
		c, err := redisconn.OpenWith(url, redisconn.Options{NoRetry: true})
		if err != nil {
			t.Fatal(err)
		}
		var retries int
		switch cc := c.(type) {
		case *redis.Client:
			retries = cc.Options().MaxRetries
		case *redis.ClusterClient:
			retries = cc.Options().MaxRetries
		}
		_ = c.Close()
		// go-redis stores the -1 it is given as 0 (no retry) once a
		// single-node client is made; a cluster client keeps -1.
		if retries > 0 {
			t.Errorf("%s: MaxRetries = %d, want none", url, retries)
		}
	}
}
