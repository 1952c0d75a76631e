package soak

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/bench/internal/netguard"
	"github.com/apistack/platform/bench/internal/procstat"
)

// Sample is one reading of the figures that must stay flat.
type Sample struct {
	Elapsed    time.Duration
	RSS        int64 // the replica's VmRSS, bytes
	Goroutines int64 // its go_goroutines gauge
	// RedisMemory is INFO memory's used_memory less the clients' and the AOF's
	// buffers (mem_clients_normal, mem_aof_buffer), bytes: those follow the
	// moment's traffic (a burst of reconnects reading history fills output
	// buffers by a megabyte for a few seconds), not what Redis keeps.
	RedisMemory int64
	Sent        int64 // messages stored so far
}

// probe reads the samples.
type probe struct {
	pid     int
	metrics string
	client  *http.Client
	redis   *redis.Client
}

func newProbe(cfg Config) (*probe, error) {
	p := &probe{pid: cfg.PID, metrics: strings.TrimRight(cfg.Base, "/") + "/metrics",
		client: &http.Client{Transport: netguard.Transport(1), Timeout: 10 * time.Second},
		redis:  redis.NewClient(&redis.Options{Addr: cfg.RedisAddr, Dialer: netguard.Dialer(5 * time.Second).DialContext})}
	if _, err := p.sample(context.Background(), 0); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

func (p *probe) close() { _ = p.redis.Close() }

func (p *probe) sample(ctx context.Context, elapsed time.Duration) (Sample, error) {
	s := Sample{Elapsed: elapsed}
	var err error
	if s.RSS, err = procstat.RSS(p.pid); err != nil {
		return s, err
	}
	if s.Goroutines, err = p.goroutines(ctx); err != nil {
		return s, err
	}
	info, err := p.redis.Info(ctx, "memory").Result()
	if err != nil {
		return s, fmt.Errorf("redis INFO memory: %w", err)
	}
	s.RedisMemory, err = redisKept(info)
	return s, err
}

// goroutines reads go_goroutines from the replica's /metrics.
func (p *probe) goroutines(ctx context.Context) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.metrics, nil)
	if err != nil {
		return 0, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", p.metrics, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("read %s: status %d (METRICS_ENABLED?)", p.metrics, resp.StatusCode)
	}
	return procstat.Gauge(resp.Body, "go_goroutines")
}

// infoField reads an integer field of a Redis INFO answer.
func infoField(info, name string) (int64, error) {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("redis INFO %s %q: %w", name, v, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("redis INFO has no %s", name)
}

// median of the samples, figure by figure.
func median(ss []Sample) Sample {
	if len(ss) == 0 {
		return Sample{}
	}
	pick := func(f func(Sample) int64) int64 {
		v := make([]int64, len(ss))
		for i, s := range ss {
			v[i] = f(s)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return Sample{Elapsed: ss[len(ss)-1].Elapsed,
		RSS:         pick(func(s Sample) int64 { return s.RSS }),
		Goroutines:  pick(func(s Sample) int64 { return s.Goroutines }),
		RedisMemory: pick(func(s Sample) int64 { return s.RedisMemory })}
}

// window is how many samples the baseline and the end are medians of: the
// churn moves goroutines and memory a little from one sample to the next.
const window = 3

// judge compares the end of the run with the end of the warm-up and checks the
// delivery counts.
func judge(cfg Config, rep *Report) {
	// The warm-up ends at cfg.Warmup, or later once every channel's history
	// window is full; the baseline is the median of the first samples after
	// it, the end the median of the last ones.
	full := int64(cfg.History) * int64(cfg.Channels)
	start := len(rep.Samples)
	for i, s := range rep.Samples {
		if s.Elapsed > cfg.Warmup && s.Sent >= full {
			start = i
			break
		}
	}
	after := rep.Samples[start:]
	if len(after) < window {
		msg := fmt.Sprintf("too few samples after the warm-up: %d (want %d)", len(after), window)
		if n := len(rep.Samples); full > 0 && (n == 0 || rep.Samples[n-1].Sent < full) {
			msg += fmt.Sprintf("; the history windows need %d messages stored (%d channels x CHAT_HISTORY %d): lower CHAT_HISTORY or run longer",
				full, cfg.Channels, cfg.History)
		}
		rep.Failures = append(rep.Failures, msg)
		return
	}
	rep.Baseline = median(after[:window])
	rep.End = median(rep.Samples[len(rep.Samples)-window:])
	growth := func(name string, base, end, noise int64) float64 {
		g := float64(end)/float64(max(base, 1)) - 1
		if g > cfg.MaxGrowth && end-base > noise {
			rep.Failures = append(rep.Failures, fmt.Sprintf("%s grew %.1f%% after the warm-up (%d to %d), over %.0f%%",
				name, 100*g, base, end, 100*cfg.MaxGrowth))
		}
		return g
	}
	rep.Growth.RSS = growth("resident memory", rep.Baseline.RSS, rep.End.RSS, cfg.NoiseBytes)
	rep.Growth.Goroutines = growth("goroutines", rep.Baseline.Goroutines, rep.End.Goroutines, cfg.NoiseGoroutines)
	rep.Growth.RedisMemory = growth("Redis used_memory (without client and AOF buffers)", rep.Baseline.RedisMemory, rep.End.RedisMemory, cfg.NoiseBytes)
	if rep.Lost > 0 || rep.Duplicated > 0 {
		rep.Failures = append(rep.Failures, fmt.Sprintf("subscribers missed %d messages and saw %d twice", rep.Lost, rep.Duplicated))
	}
	var errs int64
	for _, n := range rep.Errors {
		errs += n
	}
	if errs > cfg.MaxErrors {
		rep.Failures = append(rep.Failures, fmt.Sprintf("%d unexpected answers or failed exchanges (at most %d): %v", errs, cfg.MaxErrors, rep.Errors))
	}
	if want := int64(0.9 * cfg.Rate * cfg.Duration.Seconds()); rep.Sent+rep.Refused < want {
		rep.Failures = append(rep.Failures, fmt.Sprintf("%d sends answered, want at least %d (90%% of the rate)", rep.Sent+rep.Refused, want))
	}
	if rep.Open < int64(0.9*float64(cfg.Sockets)) {
		rep.Failures = append(rep.Failures, fmt.Sprintf("%d of %d sockets open at the end", rep.Open, cfg.Sockets))
	}
}

// redisKept is used_memory less the clients' and the AOF's buffers.
func redisKept(info string) (int64, error) {
	used, err := infoField(info, "used_memory")
	if err != nil {
		return 0, err
	}
	for _, f := range []string{"mem_clients_normal", "mem_aof_buffer"} {
		n, err := infoField(info, f)
		if err != nil {
			return 0, err
		}
		used -= n
	}
	return used, nil
}
