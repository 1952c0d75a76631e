// Package raid simulates a raid on one chat channel: fresh platform accounts (JWTs
// the driver signs with CHAT_JWT_SECRET) send within a short time while many sockets
// read the channel, and the report says when the raid watch switched shield mode on
// and what reached the readers before and after.
package raid

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/apistack/platform/bench/internal/hs256"
	"github.com/apistack/platform/bench/internal/jsonapi"
	"github.com/apistack/platform/bench/internal/netguard"
	chatclient "github.com/apistack/platform/services/chat/client"
)

// Config is one raid.
type Config struct {
	Bases        []string // replicas: readers and raiders go round-robin
	Admin        string   // a moderator's token: switches auto_shield on
	Secret       []byte   // CHAT_JWT_SECRET: the raiders' tokens are signed with it
	Channel      string   // a channel nobody used (the raid watch counts senders never seen there)
	Raiders      int      // fresh accounts, one message each
	Within       time.Duration
	Readers      int
	DialParallel int
	Grace        time.Duration // after the last answer, for deliveries
}

// Result is what a raid did.
type Result struct {
	Raiders, Readers int
	// ShieldAfter is from the first send to the first reader seeing shield_mode on
	// (-1: never); ShieldEventAfter from the first send to the event's own time.
	ShieldAfter, ShieldEventAfter time.Duration
	Stored, Held                  int
	Refused                       map[string]int // by status and reason
	Failed                        int
	FirstError                    string
	// Before and After count raid messages per reader (the mean) by where they came
	// in its stream relative to shield_mode on; Missing counts the stored messages a
	// reader never got (the sum over readers).
	Before, After float64
	Missing       int64
}

// Run dials the readers, switches auto_shield on, sends the raid and waits for the
// deliveries.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if len(cfg.Bases) == 0 || cfg.Raiders < 1 || cfg.Readers < 0 || len(cfg.Secret) == 0 {
		return nil, errors.New("raid: bases, raiders and the JWT secret are required")
	}
	cfg.DialParallel = max(cfg.DialParallel, 1)
	client := &http.Client{Transport: netguard.Transport(64), Timeout: 30 * time.Second}
	api := API{Base: cfg.Bases[0], Client: client}
	on := true
	if status, err := api.Call(ctx, http.MethodPatch, "/channels/"+url.PathEscape(cfg.Channel), cfg.Admin,
		map[string]any{"auto_shield": on}, nil); err != nil || status != http.StatusOK {
		return nil, fmt.Errorf("raid: switch auto_shield on: status %d: %v", status, err)
	}

	rctx, stop := context.WithCancel(ctx)
	defer stop()
	readers, err := dialReaders(rctx, cfg)
	if err != nil {
		return nil, err
	}
	res := &Result{Raiders: cfg.Raiders, Readers: len(readers), Refused: map[string]int{}, ShieldAfter: -1, ShieldEventAfter: -1}

	// Each raider sends once, at its place in the raid's span.
	start := time.Now()
	var mu sync.Mutex
	var stored []int64
	var wg sync.WaitGroup
	for i := range cfg.Raiders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			at := time.Duration(int64(cfg.Within) * int64(i) / int64(cfg.Raiders))
			if d := time.Until(start.Add(at)); d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					return
				}
			}
			run := start.UnixNano()
			token := sign(cfg.Secret, map[string]any{"sub": fmt.Sprintf("raider-%d-%d", run, i),
				"name": fmt.Sprintf("raider%d", i), "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()})
			base := API{Base: cfg.Bases[i%len(cfg.Bases)], Client: client}
			var out struct {
				ID int64 `json:"id"`
			}
			status, err := base.Call(ctx, http.MethodPost, "/messages/send", token,
				chatclient.SendBody{Message: fmt.Sprintf("raid %d", i), Channel: cfg.Channel}, &out)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				res.Failed++
				if res.FirstError == "" {
					res.FirstError = err.Error()
				}
			case status == http.StatusCreated || status == http.StatusOK:
				res.Stored++
				stored = append(stored, out.ID)
			case status == http.StatusAccepted:
				res.Held++
			case status >= 500 || status == http.StatusUnauthorized:
				res.Failed++
				if res.FirstError == "" {
					res.FirstError = base.LastError()
				}
			default:
				res.Refused[fmt.Sprintf("%d %s", status, base.LastReason())]++
			}
		}()
	}
	wg.Wait()
	time.Sleep(cfg.Grace)
	stop()
	for _, r := range readers {
		<-r.done
	}

	var first time.Time
	var before, after int64
	for _, r := range readers {
		if !r.shieldSeen.IsZero() && (first.IsZero() || r.shieldSeen.Before(first)) {
			first = r.shieldSeen
		}
		before += r.before
		after += r.after
		for _, id := range stored {
			if !r.ids[id] {
				res.Missing++
			}
		}
	}
	if !first.IsZero() {
		res.ShieldAfter = first.Sub(start)
	}
	if n := len(readers); n > 0 {
		res.Before, res.After = float64(before)/float64(n), float64(after)/float64(n)
		if ev := readers[0].shieldAt; !ev.IsZero() {
			res.ShieldEventAfter = ev.Sub(start)
		}
	}
	return res, nil
}

// reader is one socket on the raided channel.
type reader struct {
	conn *websocket.Conn
	done chan struct{}
	// Read by Run after done is closed.
	before, after int64
	ids           map[int64]bool
	shieldSeen    time.Time // when shield_mode on arrived
	shieldAt      time.Time // the event's own time
}

func dialReaders(ctx context.Context, cfg Config) ([]*reader, error) {
	out := make([]*reader, cfg.Readers)
	sem := make(chan struct{}, cfg.DialParallel)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	client := &http.Client{Transport: netguard.Transport(cfg.DialParallel)}
	for i := range out {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			u, err := chatclient.WSURL(cfg.Bases[i%len(cfg.Bases)], cfg.Channel, "")
			if err != nil {
				select {
				case errs <- err:
				default:
				}
				return
			}
			dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			c, _, err := websocket.Dial(dctx, u, &websocket.DialOptions{HTTPClient: client})
			if err == nil {
				// The hello comes first: the subscription is live once it is read.
				_, _, err = c.Read(dctx)
			}
			if err != nil {
				select {
				case errs <- fmt.Errorf("raid: reader %d: %w", i, err):
				default:
				}
				return
			}
			c.SetReadLimit(1 << 20)
			out[i] = &reader{conn: c, done: make(chan struct{}), ids: map[int64]bool{}}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		for _, r := range out {
			if r != nil {
				r.conn.CloseNow()
			}
		}
		return nil, err
	default:
	}
	for _, r := range out {
		go r.read(ctx)
	}
	return out, nil
}

func (r *reader) read(ctx context.Context) {
	defer close(r.done)
	defer r.conn.CloseNow()
	for {
		_, data, err := r.conn.Read(ctx)
		if err != nil {
			return
		}
		_ = chatclient.ParseFrame(data, func(ev chatclient.Event) {
			switch {
			case ev.Type == chatclient.TypeShieldMode && ev.Shield != nil && ev.Shield.On && r.shieldSeen.IsZero():
				r.shieldSeen, r.shieldAt = time.Now(), ev.Shield.At
			case ev.Type == chatclient.TypeMessage && ev.Message != nil && strings.HasPrefix(ev.Message.Text, "raid "):
				r.ids[ev.Message.ID] = true
				if r.shieldSeen.IsZero() {
					r.before++
				} else {
					r.after++
				}
			}
		})
	}
}

// API calls the chat REST API under Base.
type API struct {
	Base   string
	Client *http.Client

	mu         sync.Mutex
	lastError  string
	lastReason string
}

// Call sends a JSON request under /api/v1 and decodes a 2xx answer into out (when
// not nil); it returns the status, or an error for a failed exchange.
func (a *API) Call(ctx context.Context, method, path, token string, body, out any) (int, error) {
	status, refused, err := jsonapi.Call(ctx, a.Client, method, strings.TrimRight(a.Base, "/")+"/api/v1"+path, token, body, out)
	if err != nil || refused == nil {
		return status, err
	}
	var e struct {
		Reason string `json:"reason"`
	}
	_ = json.Unmarshal(refused, &e)
	a.mu.Lock()
	a.lastError = fmt.Sprintf("%s %s: %d %.200s", method, path, status, refused)
	a.lastReason = e.Reason
	a.mu.Unlock()
	return status, nil
}

// LastError is the last non-2xx answer, for messages.
func (a *API) LastError() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lastError
}

// LastReason is the last non-2xx answer's reason field.
func (a *API) LastReason() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lastReason
}

// sign is hs256.Sign of claims that always encode (strings and numbers).
func sign(secret []byte, claims map[string]any) string {
	tok, err := hs256.Sign(secret, claims)
	if err != nil {
		panic(err)
	}
	return tok
}
