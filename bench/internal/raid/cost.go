package raid

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apistack/platform/bench/internal/netguard"
	"github.com/apistack/platform/bench/internal/procstat"
	chatclient "github.com/apistack/platform/services/chat/client"
)

// CostConfig measures what the moderation checks add to a send that passes them:
// the same sends, by the same users, to a channel with nothing set ("plain") and to
// one with the modes set ("modes": unique_chat, first_message_review with senders
// that are chatters already, min_account_age_seconds 1, auto_shield), in alternating
// runs, both with the same channel filter that no message hits. CPU is read from
// /proc for the chat replicas (PIDs) and Redis (RedisPID, 0: none).
type CostConfig struct {
	Bases    []string
	Admin    string
	Secret   []byte
	Prefix   string // the two channels are Prefix-plain and Prefix-modes
	Senders  int
	Sends    int // per run
	Rounds   int // each round runs both channels, the order alternating
	InFlight int
	PIDs     []int
	RedisPID int
}

// CostRun is one run's figures.
type CostRun struct {
	Channel   string
	Sends     int
	Errors    int
	Wall      time.Duration
	ChatCPU   time.Duration // summed over the replicas
	RedisCPU  time.Duration
	FirstFail string
}

// CostResult holds every run, in order.
type CostResult struct {
	Runs []CostRun
}

// PerSend sums the runs of channel: chat and Redis CPU per send.
func (r *CostResult) PerSend(channel string) (chat, redis time.Duration) {
	var n int
	for _, run := range r.Runs {
		if run.Channel == channel {
			chat += run.ChatCPU
			redis += run.RedisCPU
			n += run.Sends
		}
	}
	if n == 0 {
		return 0, 0
	}
	return chat / time.Duration(n), redis / time.Duration(n)
}

// Cost sets the two channels up and runs the rounds.
func Cost(ctx context.Context, cfg CostConfig) (*CostResult, error) {
	if len(cfg.Bases) == 0 || cfg.Senders < 1 || cfg.Sends < 1 || len(cfg.PIDs) == 0 {
		return nil, errors.New("cost: bases, senders, sends and the replicas' pids are required")
	}
	cfg.Rounds, cfg.InFlight = max(cfg.Rounds, 1), max(cfg.InFlight, 1)
	client := &http.Client{Transport: netguard.Transport(cfg.InFlight * 2), Timeout: 30 * time.Second}
	plain, modes := cfg.Prefix+"-plain", cfg.Prefix+"-modes"
	admin := &API{Base: cfg.Bases[0], Client: client}
	for _, ch := range []string{plain, modes} {
		f := map[string]any{"channel": ch, "kind": "blocked_term", "pattern": "zzqqxxnever", "action": "strike"}
		if status, err := admin.Call(ctx, http.MethodPost, "/filters", cfg.Admin, f, nil); err != nil || status != http.StatusCreated {
			return nil, fmt.Errorf("cost: filter in %s: %d %v %s", ch, status, err, admin.LastError())
		}
	}
	run := time.Now().UnixNano()
	tokens := make([]string, cfg.Senders)
	for i := range tokens {
		tokens[i] = sign(cfg.Secret, map[string]any{"sub": fmt.Sprintf("cost-%d-%d", run, i),
			"name": fmt.Sprintf("cost%d", i), "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()})
		// The first message makes the sender a chatter of both channels (and
		// provisions the user), before the modes hold first messages.
		for _, ch := range []string{plain, modes} {
			a := &API{Base: cfg.Bases[i%len(cfg.Bases)], Client: client}
			if status, err := a.Call(ctx, http.MethodPost, "/messages/send", tokens[i],
				chatclient.SendBody{Message: "hello", Channel: ch}, nil); err != nil || status != http.StatusCreated {
				return nil, fmt.Errorf("cost: first message in %s: %d %v %s", ch, status, err, a.LastError())
			}
		}
	}
	set := map[string]any{"unique_chat": true, "first_message_review": true, "min_account_age_seconds": 1, "auto_shield": true}
	if status, err := admin.Call(ctx, http.MethodPatch, "/channels/"+url.PathEscape(modes), cfg.Admin, set, nil); err != nil || status != http.StatusOK {
		return nil, fmt.Errorf("cost: modes: %d %v %s", status, err, admin.LastError())
	}
	time.Sleep(1100 * time.Millisecond) // the senders' accounts are older than the minimum now

	res := &CostResult{}
	seq := 0
	for r := range cfg.Rounds {
		order := []string{plain, modes}
		if r%2 == 1 {
			order = []string{modes, plain}
		}
		for _, ch := range order {
			cr, err := costRun(ctx, cfg, client, tokens, ch, &seq)
			if err != nil {
				return res, err
			}
			res.Runs = append(res.Runs, cr)
		}
	}
	return res, nil
}

func costRun(ctx context.Context, cfg CostConfig, client *http.Client, tokens []string, channel string, seq *int) (CostRun, error) {
	out := CostRun{Channel: channel, Sends: cfg.Sends}
	chat0, redis0, err := cpu(cfg)
	if err != nil {
		return out, err
	}
	start := time.Now()
	var next, errs atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	base := *seq
	*seq += cfg.Sends
	for w := range cfg.InFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := &API{Base: cfg.Bases[w%len(cfg.Bases)], Client: client}
			for {
				n := int(next.Add(1)) - 1
				if n >= cfg.Sends || ctx.Err() != nil {
					return
				}
				// Distinct texts: unique chat refuses none of them.
				status, err := a.Call(ctx, http.MethodPost, "/messages/send", tokens[n%len(tokens)],
					chatclient.SendBody{Message: fmt.Sprintf("cost %d", base+n), Channel: channel}, nil)
				if err != nil || status != http.StatusCreated {
					errs.Add(1)
					mu.Lock()
					if out.FirstFail == "" {
						out.FirstFail = fmt.Sprintf("%d %v %s", status, err, a.LastError())
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	out.Wall = time.Since(start)
	chat1, redis1, err := cpu(cfg)
	if err != nil {
		return out, err
	}
	out.Errors = int(errs.Load())
	out.ChatCPU, out.RedisCPU = chat1-chat0, redis1-redis0
	return out, nil
}

// cpu sums the replicas' CPU time, and Redis's.
func cpu(cfg CostConfig) (chat, redis time.Duration, err error) {
	for _, pid := range cfg.PIDs {
		s, err := procstat.CPUSeconds(pid)
		if err != nil {
			return 0, 0, err
		}
		chat += time.Duration(s * float64(time.Second))
	}
	if cfg.RedisPID > 0 {
		s, err := procstat.CPUSeconds(cfg.RedisPID)
		if err != nil {
			return 0, 0, err
		}
		redis = time.Duration(s * float64(time.Second))
	}
	return chat, redis, nil
}
