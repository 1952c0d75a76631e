// Package redisconn opens a go-redis client from a REDIS_URL, so every
// service accepts the same forms: one server, Sentinel, or Cluster.
//
//	redis://[user:pass@]host:6379/0           one server (rediss:// for TLS)
//	redis://[user:pass@]s1:26379/0?master_name=mymaster&addr=s2:26379
//	                                          Sentinel: the host and each addr are sentinels
//	redis://[user:pass@]n1:6379?addr=n2:6379&addr=n3:6379
//	                                          Cluster: the host and each addr are seed nodes
//
// These are go-redis's own URL forms (ParseURL, ParseFailoverURL,
// ParseClusterURL), chosen by the query: master_name means Sentinel, addr
// without it means Cluster. The schemes redis+sentinel:// and
// redis+cluster:// (and rediss+...) say the same explicitly. Other query
// parameters are go-redis's (dial_timeout, read_timeout, pool_size...);
// unknown ones are an error.
package redisconn

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Options tune a client beyond what the URL says.
type Options struct {
	// Timeout, when set, bounds dialing, each read and write and the wait
	// for a pooled connection, and turns retries off: for callers on a
	// request's hot path (the rate limiter) that would rather fail fast.
	Timeout time.Duration
	// NoRetry sends every command once. go-redis retries a command whose
	// connection failed or timed out on a fresh connection (MaxRetries,
	// 3 by default), while the first copy may still wait in the server's
	// socket buffer (a paused or slow Redis) and run later: a write that
	// is not idempotent then runs twice or more. A client whose writes
	// must happen exactly once sets it and reports an unanswered write as
	// of unknown outcome instead.
	NoRetry bool
}

// Open returns a client for rawURL with context deadlines honoured on the
// socket. It does not connect: the first command does, so a service can
// start while Redis is still coming up.
func Open(rawURL string) (redis.UniversalClient, error) { return OpenWith(rawURL, Options{}) }

func tune(ctxTimeout *bool, dial, read, write, pool *time.Duration, retries *int, o Options) {
	*ctxTimeout = true
	if o.Timeout > 0 {
		*dial, *read, *write, *pool = o.Timeout, o.Timeout, o.Timeout, o.Timeout
		*retries = -1
	}
	if o.NoRetry {
		*retries = -1 // go-redis: -1 is no retry (0 is its default of 3)
	}
}

// OpenWith is Open with options.
func OpenWith(rawURL string, o Options) (redis.UniversalClient, error) {
	open, err := parse(rawURL, o)
	if err != nil {
		return nil, err
	}
	return open(), nil
}

// Validate reports whether rawURL is a REDIS_URL that Open accepts,
// without making a client: settings are checked at start-up, before any
// connection is opened.
func Validate(rawURL string) error {
	_, err := parse(rawURL, Options{})
	return err
}

// parse checks rawURL and returns what makes its client.
func parse(rawURL string, o Options) (func() redis.UniversalClient, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	switch u.Scheme {
	case "redis", "rediss", "unix":
		if u.Query().Has("master_name") {
			return sentinel(u, u.Scheme, o)
		}
		if u.Scheme != "unix" && u.Query().Has("addr") {
			return cluster(u, u.Scheme, o)
		}
		opts, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		tune(&opts.ContextTimeoutEnabled, &opts.DialTimeout, &opts.ReadTimeout, &opts.WriteTimeout, &opts.PoolTimeout, &opts.MaxRetries, o)
		if o.Timeout > 0 {
			opts.DialerRetries = 1 // a refused dial fails now, not after five tries
		}
		return func() redis.UniversalClient { return redis.NewClient(opts) }, nil
	case "redis+sentinel", "rediss+sentinel":
		return sentinel(u, strings.TrimSuffix(u.Scheme, "+sentinel"), o)
	case "redis+cluster", "rediss+cluster":
		return cluster(u, strings.TrimSuffix(u.Scheme, "+cluster"), o)
	}
	return nil, fmt.Errorf("REDIS_URL: scheme %q: use redis://, rediss://, redis+sentinel:// or redis+cluster://", u.Scheme)
}

func cluster(u *url.URL, scheme string, o Options) (func() redis.UniversalClient, error) {
	c := *u
	c.Scheme = scheme
	opts, err := redis.ParseClusterURL(c.String())
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL (cluster): %w", err)
	}
	tune(&opts.ContextTimeoutEnabled, &opts.DialTimeout, &opts.ReadTimeout, &opts.WriteTimeout, &opts.PoolTimeout, &opts.MaxRetries, o)
	return func() redis.UniversalClient { return redis.NewClusterClient(opts) }, nil
}

func sentinel(u *url.URL, scheme string, o Options) (func() redis.UniversalClient, error) {
	c := *u
	c.Scheme = scheme
	if !c.Query().Has("master_name") {
		return nil, fmt.Errorf("REDIS_URL (sentinel): master_name=... is required")
	}
	opts, err := redis.ParseFailoverURL(c.String())
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL (sentinel): %w", err)
	}
	tune(&opts.ContextTimeoutEnabled, &opts.DialTimeout, &opts.ReadTimeout, &opts.WriteTimeout, &opts.PoolTimeout, &opts.MaxRetries, o)
	return func() redis.UniversalClient { return redis.NewFailoverClient(opts) }, nil
}

// Redacted is rawURL fit for logs: the user and password are replaced by
// "***" (a URL written redis://secret@host puts the secret where the user
// goes), and so is the value of every query parameter whose name says
// password (Sentinel URLs may carry the master's as password=...).
func Redacted(rawURL string) string {
	if rawURL == "" {
		return ""
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable)"
	}
	hadUser := u.User != nil
	u.User = nil
	if q := u.Query(); len(q) > 0 {
		masked := false
		for k := range q {
			if strings.Contains(strings.ToLower(k), "password") {
				q[k] = []string{mask}
				masked = true
			}
		}
		if masked {
			u.RawQuery = strings.ReplaceAll(q.Encode(), url.QueryEscape(mask), mask)
		}
	}
	s := u.String()
	if hadUser {
		s = strings.Replace(s, "://", "://"+mask+"@", 1)
	}
	return s
}

const mask = "***"
