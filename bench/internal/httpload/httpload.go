// Package httpload drives GET requests with random addresses at an HTTP target from
// concurrent keep-alive workers and measures requests/s, errors and latency.
package httpload

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apistack/platform/bench/internal/addrgen"
	"github.com/apistack/platform/bench/internal/hist"
	"github.com/apistack/platform/bench/internal/netguard"
)

// Bounds every run respects whatever the flags say.
const (
	MaxDuration    = 10 * time.Minute
	MaxRequests    = 100_000_000
	MaxConcurrency = 4096
)

// Config describes one measurement against one target.
type Config struct {
	URL         string        // template with an {ip} placeholder, loopback host only
	Concurrency int           // workers, each with its own keep-alive connection
	Duration    time.Duration // upper bound on the run, even when Requests is set
	Requests    int64         // stop after this many requests; 0 means run for Duration
	V6Frac      float64       // share of IPv6 addresses, 0..1
	Timeout     time.Duration // per request
	Seed        uint64
}

func (c Config) validate() error {
	if c.Concurrency < 1 || c.Concurrency > MaxConcurrency {
		return fmt.Errorf("concurrency %d outside 1..%d", c.Concurrency, MaxConcurrency)
	}
	if c.Duration <= 0 || c.Duration > MaxDuration {
		return fmt.Errorf("duration %s outside (0, %s]", c.Duration, MaxDuration)
	}
	if c.Requests < 0 || c.Requests > MaxRequests {
		return fmt.Errorf("request count %d outside 0..%d", c.Requests, MaxRequests)
	}
	if c.Timeout <= 0 {
		return fmt.Errorf("request timeout %s must be positive", c.Timeout)
	}
	return nil
}

// Result is what one run measured. Latency covers successful (2xx) requests only.
type Result struct {
	OK        uint64            `json:"ok"`
	Errors    map[string]uint64 `json:"errors"`
	Elapsed   time.Duration     `json:"elapsed_ns"`
	BodyBytes uint64            `json:"body_bytes"`
	Latency   hist.Summary      `json:"latency"`
	// Hist holds every latency for merging across rounds.
	Hist *hist.Histogram `json:"-"`
}

// RPS is successful requests per second.
func (r *Result) RPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.OK) / r.Elapsed.Seconds()
}

// ErrorCount is the number of failed requests.
func (r *Result) ErrorCount() uint64 {
	var n uint64
	for _, v := range r.Errors {
		n += v
	}
	return n
}

// ErrorKinds lists error kinds in a stable order.
func (r *Result) ErrorKinds() []string {
	ks := make([]string, 0, len(r.Errors))
	for k := range r.Errors {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Runner keeps one transport per target, so connections stay warm across rounds.
type Runner struct {
	client *http.Client
	tr     *http.Transport
}

// NewRunner builds a keep-alive client for up to concurrency connections.
func NewRunner(concurrency int, timeout time.Duration) *Runner {
	tr := netguard.Transport(concurrency)
	return &Runner{
		tr: tr,
		client: &http.Client{
			Transport: tr,
			Timeout:   timeout,
			// a redirect is an answer to count, not to follow
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// Close drops the idle connections.
func (r *Runner) Close() { r.tr.CloseIdleConnections() }

// Run performs one measurement.
func (r *Runner) Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if _, err := netguard.CheckURL(cfg.URL); err != nil {
		return nil, err
	}
	tpl, err := addrgen.ParseTemplate(cfg.URL)
	if err != nil {
		return nil, err
	}
	gens := make([]*addrgen.Generator, cfg.Concurrency)
	for i := range gens {
		if gens[i], err = addrgen.New(cfg.Seed+uint64(i)*7919, cfg.V6Frac); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()

	var (
		h       = &hist.Histogram{}
		ok      atomic.Uint64
		bytes   atomic.Uint64
		issued  atomic.Int64
		errMu   sync.Mutex
		errs    = map[string]uint64{}
		wg      sync.WaitGroup
		started = time.Now()
	)
	countErr := func(kind string) {
		errMu.Lock()
		errs[kind]++
		errMu.Unlock()
	}
	buf := make([][]byte, cfg.Concurrency)
	for w := 0; w < cfg.Concurrency; w++ {
		buf[w] = make([]byte, 32<<10)
		wg.Go(func() {
			gen, scratch := gens[w], buf[w]
			for ctx.Err() == nil {
				if cfg.Requests > 0 && issued.Add(1) > cfg.Requests {
					return
				}
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, tpl.Fill(gen.Next()), nil)
				if err != nil {
					countErr("bad request")
					continue
				}
				t0 := time.Now()
				resp, err := r.client.Do(req)
				if err != nil {
					if ctx.Err() != nil {
						return // the run ended while this request was in flight
					}
					countErr(netguard.ErrorKind(err))
					continue
				}
				n, err := io.CopyBuffer(io.Discard, resp.Body, scratch)
				resp.Body.Close()
				lat := time.Since(t0)
				switch {
				case err != nil && ctx.Err() != nil:
					return
				case err != nil:
					countErr("body " + netguard.ErrorKind(err))
				case resp.StatusCode < 200 || resp.StatusCode > 299:
					countErr(fmt.Sprintf("status %d", resp.StatusCode))
				default:
					ok.Add(1)
					bytes.Add(uint64(n))
					h.RecordDuration(lat)
				}
			}
		})
	}
	wg.Wait()
	res := &Result{
		OK:        ok.Load(),
		Errors:    errs,
		Elapsed:   time.Since(started),
		BodyBytes: bytes.Load(),
		Latency:   h.Summarize(),
		Hist:      h,
	}
	return res, nil
}
