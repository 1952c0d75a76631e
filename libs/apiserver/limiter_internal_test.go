package apiserver

import (
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver/ratelimit"
	"github.com/apistack/platform/libs/apiserver/redisconn"
)

// TestPipelineBounded: the autopipeliner only on a client whose own
// timeouts end an abandoned batch about when the limiter's deadline does.
func TestPipelineBounded(t *testing.T) {
	for _, tc := range []struct {
		url  string
		opts redisconn.Options
		want bool
	}{
		{"redis://127.0.0.1:1/0", redisconn.Options{}, false},                                                                       // a store's client: 3 s, retried
		{"redis://127.0.0.1:1/0?read_timeout=50ms&write_timeout=50ms&dial_timeout=50ms", redisconn.Options{}, false},                // retried
		{"redis://127.0.0.1:1/0?max_retries=-1&read_timeout=50ms&write_timeout=50ms&dial_timeout=50ms", redisconn.Options{}, false}, // five dials
		{"redis://127.0.0.1:1/0", redisconn.Options{Timeout: ratelimit.DefaultRedisTimeout}, true},
		{"redis://127.0.0.1:1/0", redisconn.Options{Timeout: time.Second}, false},
		{"redis://127.0.0.1:1?addr=127.0.0.1:2", redisconn.Options{Timeout: ratelimit.DefaultRedisTimeout}, false}, // cluster: no autopipeliner
	} {
		c, err := redisconn.OpenWith(tc.url, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := pipelineBounded(c); got != tc.want {
			t.Errorf("%s %+v: %v, want %v", tc.url, tc.opts, got, tc.want)
		}
		_ = c.Close()
	}
}
