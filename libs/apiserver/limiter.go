package apiserver

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver/ratelimit"
	"github.com/apistack/platform/libs/apiserver/redisconn"
)

// setupLimiter picks the counter store: the caller's Redis client
// (Config.Redis), else a client of the library's own when REDIS_URL is
// set, else memory. Every limiter call is bounded by
// ratelimit.DefaultRedisTimeout through its context, so a hung Redis adds
// at most that to a request, whichever client it runs on. The library's
// own client is made for that path alone: short socket timeouts and no
// retries (a retry could only finish after the deadline); see
// pipelineBounded for how a call travels.
func (s *Server[A]) setupLimiter() error {
	client := s.cfg.Redis
	if client == nil && s.set.common.RedisURL != "" {
		own, err := redisconn.OpenWith(s.set.common.RedisURL, redisconn.Options{Timeout: ratelimit.DefaultRedisTimeout})
		if err != nil {
			return err
		}
		client, s.ownRedis = own, own
	}
	if client == nil {
		// The memory store cannot fail, but the guard keeps the
		// ratelimit_backend_errors_total series present for dashboards.
		guard := ratelimit.NewGuard(ratelimit.NewMemory(ratelimit.MemoryConfig{}), ratelimit.GuardConfig{Logger: s.log})
		if err := s.registry.Register(guard); err != nil {
			return fmt.Errorf("register rate limiter metrics: %w", err)
		}
		s.limiter = guard
		return nil
	}
	rl, err := ratelimit.NewRedis(client, ratelimit.RedisConfig{KeyPrefix: s.redisPrefix(), DisableAutoPipeline: !pipelineBounded(client)})
	if err != nil {
		_ = s.closeOwnRedis()
		return fmt.Errorf("rate limiter: %w", err)
	}
	guard := ratelimit.NewGuard(rl, ratelimit.GuardConfig{FailClosed: s.set.failClosed, Logger: s.log})
	if err := s.registry.Register(guard); err != nil {
		_ = s.closeOwnRedis()
		return fmt.Errorf("register rate limiter metrics: %w", err)
	}
	s.limiter, s.redisLimited = guard, true
	if s.set.failClosed {
		// Only then does an unreachable Redis refuse requests. Failing
		// open, the service still answers without it: were it a readiness
		// check, a Redis outage would take every replica out of its load
		// balancer (a Kubernetes Service's endpoints) at once. A service
		// whose own data lives in Redis adds a check of its own.
		s.AddReadinessCheck("redis", func(ctx context.Context) error { return client.Ping(ctx).Err() })
	}
	return nil
}

// closeOwnRedis closes the client the library opened itself, if any;
// Config.Redis belongs to the caller and is never closed here.
func (s *Server[A]) closeOwnRedis() error {
	if s.ownRedis == nil {
		return nil
	}
	err := s.ownRedis.Close()
	s.ownRedis = nil
	return err
}

func (s *Server[A]) limiterKind() string {
	if s.redisLimited {
		return "redis"
	}
	return "memory"
}

// peerAddr is the address of the TCP peer, before any header is believed.
func peerAddr(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		a, _ := netip.ParseAddr(r.RemoteAddr)
		return a.Unmap()
	}
	return ap.Addr().Unmap()
}

// addressLimit is an endpoint's limit per client address: its Limit, the
// prefix of its counters' keys and the RateLimit-Limit value it answers.
type addressLimit struct {
	limit  ratelimit.Limit
	prefix string
	header []string
}

// newAddressLimit is the per-address limit of one endpoint: nil rl uses
// the global limit and the shared per-client counter; {Max, Window} a
// counter of its own; Disabled none (nil).
func (s *Server[A]) newAddressLimit(rl *RateLimit, routeKey string) *addressLimit {
	if rl != nil && rl.Disabled {
		return nil
	}
	limit := ratelimit.Limit{Max: s.set.rateMax, Window: s.set.rateWindow}
	prefix := "global:"
	if rl != nil {
		limit.Max = rl.Max
		if rl.Window > 0 {
			limit.Window = rl.Window
		}
		prefix = "route:" + routeKey + ":"
	}
	if err := limit.Validate(); err != nil {
		panic(fmt.Sprintf("apiserver: rate limit of %s: %v", routeKey, err))
	}
	// Header values are shared by every response, as gin shares its
	// Content-Type values: Header.Set and Add replace or copy them.
	return &addressLimit{limit: limit, prefix: prefix, header: []string{strconv.Itoa(limit.Max)}}
}

// rateLimitMiddleware limits one endpoint per client address (see
// newAddressLimit), answering its errors through m (nil: the standard
// body).
func (s *Server[A]) rateLimitMiddleware(rl *RateLimit, routeKey string, m *ErrorMap) gin.HandlerFunc {
	al := s.newAddressLimit(rl, routeKey)
	if al == nil {
		return nil
	}
	return func(c *gin.Context) { s.checkAddress(c, al, m) }
}

// checkAddress counts the request against the client address's limit; it
// reports whether the request may go on, having answered it otherwise.
func (s *Server[A]) checkAddress(c *gin.Context, al *addressLimit, m *ErrorMap) bool {
	client := s.clientIP.ResolveRequest(c.Request)
	if s.set.rateAllow.Contains(client) {
		return true
	}
	var buf [96]byte
	key := string(s.limiterKey(append(buf[:0], al.prefix...), client))
	return s.enforce(c, key, al.limit, al.header, m) == limitPassed
}

// limitOutcome is what enforce did with a request.
type limitOutcome int

const (
	limitPassed  limitOutcome = iota // within the limit (or the limiter failed open)
	limitRefused                     // answered 429
	limitFailed                      // answered 503: the limiter is down and fails closed
)

// enforce counts the request under key and limit, sets the RateLimit-*
// headers of that limit, and answers 429 (or 503) when it may not pass.
func (s *Server[A]) enforce(c *gin.Context, key string, limit ratelimit.Limit, limitHeader []string, m *ErrorMap) limitOutcome {
	res, err := s.limiter.Allow(c.Request.Context(), key, limit)
	if err != nil {
		// The Guard has counted and logged the backend failure and
		// applied the policy: Allowed means fail open.
		if res.Allowed {
			return limitPassed
		}
		s.answerError(c, &Error{Status: http.StatusServiceUnavailable, Message: "Rate limiter unavailable, try again later", Cause: err,
			Header: http.Header{"Retry-After": {strconv.Itoa(max(ceilSeconds(res.RetryAfter), 1))}}}, m)
		return limitFailed
	}
	h := c.Writer.Header()
	// Canonical keys set directly: this runs on every limited request.
	h["Ratelimit-Limit"] = limitHeader
	h["Ratelimit-Remaining"] = headerInt(max(res.Remaining, 0))
	h["Ratelimit-Reset"] = headerInt(ceilSeconds(res.ResetAfter))
	if !res.Allowed {
		retry := ceilSeconds(res.RetryAfter)
		s.metrics.limited.WithLabelValues(s.routeLabel(c.FullPath())).Inc()
		s.answerError(c, &Error{
			Status:  http.StatusTooManyRequests,
			Message: fmt.Sprintf("Rate limit exceeded, retry in %s", humanSeconds(retry)),
			Header:  http.Header{"Retry-After": {strconv.Itoa(retry)}},
		}, m)
		return limitRefused
	}
	return limitPassed
}

// smallInts holds the header values of 0..4095, shared by every response:
// with limits of up to a few thousand a window, remaining counts and reset
// seconds cost no allocation.
var smallInts = func() []string {
	v := make([]string, 4096)
	for i := range v {
		v[i] = strconv.Itoa(i)
	}
	return v
}()

// headerInt is n as a header value (a one-element slice, capped so an
// append copies it).
func headerInt(n int) []string {
	if n >= 0 && n < len(smallInts) {
		return smallInts[n : n+1 : n+1]
	}
	return headerValue(func(b []byte) []byte { return strconv.AppendInt(b, int64(n), 10) })
}

func ceilSeconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int(math.Ceil(d.Seconds()))
}

func humanSeconds(n int) string {
	if n == 1 {
		return "1 second"
	}
	return strconv.Itoa(n) + " seconds"
}

// limiterKey appends the name the limiter counts client under: an IPv4
// address, or the IPv6 prefix (RATE_LIMIT_IPV6_PREFIX, /64 by default)
// that holds it, written as "2001:db8::/64". Counting full IPv6 addresses
// would let one subscriber's /64 be 2^64 clients.
func (s *Server[A]) limiterKey(b []byte, client netip.Addr) []byte {
	client = client.Unmap()
	if !client.Is6() || s.set.rateIPv6Bits >= 128 {
		return client.AppendTo(b)
	}
	p, err := client.WithZone("").Prefix(s.set.rateIPv6Bits)
	if err != nil {
		return client.AppendTo(b)
	}
	b = p.Addr().AppendTo(b)
	b = append(b, '/')
	return strconv.AppendInt(b, int64(p.Bits()), 10)
}

// pipelineBounded reports whether client's own timeouts end an
// autopipelined call about when the limiter's deadline does. go-redis's
// autopipeliner runs its batches on its own context, not the call's:
// against a hung Redis the limiter still answers in time, but the
// abandoned batch holds its connection until the client's socket timeouts
// end it, retried (measured: still open 13 s later with go-redis's
// defaults, a store's client). Such a client gets one pooled call per
// check instead, which the deadline ends (ContextTimeoutEnabled); one
// made for the limiter (the library's own, or redisconn.Options.Timeout)
// keeps the autopipeliner's batching.
func pipelineBounded(client redis.UniversalClient) bool {
	c, ok := client.(*redis.Client) // only *redis.Client autopipelines
	if !ok {
		return false
	}
	o, limit := c.Options(), ratelimit.DefaultRedisTimeout
	within := func(d time.Duration) bool { return d > 0 && d <= limit }
	return within(o.DialTimeout) && within(o.ReadTimeout) && within(o.WriteTimeout) && o.MaxRetries <= 0 && o.DialerRetries <= 1
}
