package apiserver

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/apistack/platform/libs/apiserver/ratelimit"
	"github.com/apistack/platform/libs/apiserver/usage"
)

// Principal is an authenticated caller as an IdentityLimit counts it.
type Principal struct {
	// ID names the principal in the limiter and in usage: stable and not secret (an API
	// key's name, never the key; a JWT's sub), at most usage.MaxIDLength bytes.
	ID string
	// Plan selects the principal's limit in IdentityLimit.Plans.
	Plan string
	// Limit, when its Max is set, is the principal's own limit; Plan is then not read.
	Limit ratelimit.Limit
}

// IdentityLimit limits requests per principal (an API key, a JWT subject) rather than
// per client address, with a limit per plan, counted in the same limiter (Redis GCRA
// across replicas when REDIS_URL is set) after authentication. Callers Identify does not
// recognise keep the per-address limit. Each identified request is counted per UTC day
// for Server.Usage. A principal's counter is shared by every operation limited by
// identity, as the global per-address counter is by every route.
type IdentityLimit struct {
	// Identify names the caller's principal; it runs after authentication, so it may
	// read AuthFrom. ok false: an anonymous caller, limited per address. A non-nil err
	// (a credential that names no principal, such as an unknown API key) is answered
	// as it is, once the request has been counted against the address's limit: guessing
	// keys costs what anonymous requests cost.
	Identify func(c *gin.Context) (p Principal, ok bool, err error)
	// Plans are the limits by Principal.Plan; "" is the plan of a principal that names
	// none.
	Plans map[string]ratelimit.Limit
	// Security documents how a caller presents its credential (OpenAPI security
	// schemes). An operation that is not Authenticated lists them as optional.
	Security []SecurityScheme
	// Errors documents Identify's errors by status (403: "Unknown API key"), on every
	// operation limited by identity.
	Errors map[int]string
}

// SecurityScheme is an OpenAPI security scheme: an API key in a query parameter or
// header (Type "apiKey", In, Param), or an HTTP scheme (Type "http", Scheme "bearer").
type SecurityScheme struct {
	Name        string // its name in components.securitySchemes
	Type        string // apiKey or http
	In          string // apiKey: query, header or cookie
	Param       string // apiKey: the parameter's name
	Scheme      string // http: bearer, basic
	Description string
}

func (sc SecurityScheme) doc() map[string]any {
	m := map[string]any{"type": sc.Type}
	if sc.Type == "apiKey" {
		m["in"], m["name"] = sc.In, sc.Param
	} else {
		m["scheme"] = sc.Scheme
	}
	if sc.Description != "" {
		m["description"] = sc.Description
	}
	return m
}

// identityState is the usage counter, made when the first operation limited by identity
// is registered.
type identityState struct {
	once    sync.Once
	counter *usage.Counter
}

// identityLimitOf is the identity limit an operation runs under: its own, else the
// server's; none when its rate limit is disabled.
func (s *Server[A]) identityLimitOf(op *Operation) *IdentityLimit {
	if op.RateLimit != nil && op.RateLimit.Disabled {
		return nil
	}
	if op.IdentityLimit != nil {
		return op.IdentityLimit
	}
	return s.cfg.IdentityLimit
}

// usageCounter starts counting usage, in the limiter's Redis when it has one.
func (s *Server[A]) usageCounter() *usage.Counter {
	s.ident.once.Do(func() {
		var store usage.Store = usage.NewMemory(0)
		client := s.cfg.Redis
		if client == nil {
			client = s.ownRedis
		}
		if client != nil {
			store = usage.NewRedis(client, s.redisPrefix(), 0)
		}
		c := usage.New(usage.Config{Store: store})
		go c.Run(func(err error) { s.log.Warn("usage counts not written; kept for the next flush", "err", err) })
		s.OnShutdown(func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			return c.Close(ctx, true)
		})
		s.ident.counter = c
	})
	return s.ident.counter
}

// redisPrefix is where the library's keys live in Redis: "apiserver:<service>:".
func (s *Server[A]) redisPrefix() string {
	name := s.cfg.ServiceName
	if name == "" {
		name = "api"
	}
	return "apiserver:" + name + ":"
}

// Usage is the principal's requests of the current UTC day (the limit identity limits
// count), read from Redis when the limiter uses it: this replica's requests at once,
// other replicas' within a second. Zero counts when nothing is limited by identity.
func (s *Server[A]) Usage(ctx context.Context, principalID string) (usage.Counts, error) {
	if s.ident.counter == nil {
		return usage.Counts{Day: usage.DayString(time.Now())}, nil
	}
	return s.ident.counter.Today(ctx, principalID)
}

// planLimits are an IdentityLimit's plans checked, with their RateLimit-Limit values.
type planLimits map[string]planLimit

type planLimit struct {
	limit  ratelimit.Limit
	header []string
}

// identityMiddleware authenticates (Authenticated operations), identifies the caller and
// counts the request against its principal's limit, or its address's when anonymous.
func (s *Server[A]) identityMiddleware(op *Operation, routeKey string, il *IdentityLimit) gin.HandlerFunc {
	if il.Identify == nil {
		panic(fmt.Sprintf("apiserver: identity limit of %s: Identify is nil", routeKey))
	}
	plans := planLimits{}
	for name, l := range il.Plans {
		if err := l.Validate(); err != nil {
			panic(fmt.Sprintf("apiserver: identity limit of %s: plan %q: %v", routeKey, name, err))
		}
		plans[name] = planLimit{limit: l, header: []string{strconv.Itoa(l.Max)}}
	}
	anon := s.newAddressLimit(op.RateLimit, routeKey)
	m, authenticated := op.ErrorMap, op.Authenticated
	counter := s.usageCounter()
	return func(c *gin.Context) {
		if authenticated {
			a, err := s.authenticate(c.Request)
			if err != nil {
				if s.checkAddress(c, anon, m) {
					s.answerError(c, err, m)
				}
				return
			}
			c.Set(authContextKey, a)
		}
		p, ok, err := il.Identify(c)
		if err != nil {
			if s.checkAddress(c, anon, m) {
				s.answerError(c, err, m)
			}
			return
		}
		if !ok {
			s.checkAddress(c, anon, m)
			return
		}
		if p.ID == "" || len(p.ID) > usage.MaxIDLength {
			s.answerError(c, fmt.Errorf("identity limit: principal id of %d bytes (want 1-%d)", len(p.ID), usage.MaxIDLength), m)
			return
		}
		limit, header := p.Limit, []string(nil)
		if limit.Max == 0 {
			pl, found := plans[p.Plan]
			if !found {
				s.answerError(c, fmt.Errorf("identity limit: principal %q has plan %q, which Plans lacks", p.ID, p.Plan), m)
				return
			}
			limit, header = pl.limit, pl.header
		} else if err := limit.Validate(); err != nil {
			s.answerError(c, fmt.Errorf("identity limit: principal %q: %w", p.ID, err), m)
			return
		} else {
			header = limitHeaders.of(limit.Max)
		}
		switch s.enforce(c, "principal:"+p.ID, limit, header, m) {
		case limitPassed:
			_ = counter.Add(p.ID, true)
		case limitRefused:
			_ = counter.Add(p.ID, false)
		}
	}
}

// limitHeaders holds the RateLimit-Limit value of the last principal's own limit seen:
// principals with their own limits mostly share a few values, and one above the shared
// small ints would otherwise cost an allocation per request.
var limitHeaders headerCache

type headerCache struct{ last atomic.Pointer[cachedHeader] }

type cachedHeader struct {
	n int
	v []string
}

func (h *headerCache) of(n int) []string {
	if c := h.last.Load(); c != nil && c.n == n {
		return c.v
	}
	v := headerInt(n)
	h.last.Store(&cachedHeader{n: n, v: v})
	return v
}
