package fanout

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/apistack/platform/bench/internal/hist"
	"github.com/apistack/platform/bench/internal/netguard"
	chatclient "github.com/apistack/platform/services/chat/client"
)

// Bounds every run respects whatever the flags say.
const (
	MaxDuration    = 10 * time.Minute
	MaxSubscribers = 50_000
	MaxMessages    = 10_000_000
	MaxInFlight    = 1024
)

// Config describes one measurement against one target.
type Config struct {
	SubscribeBases []string // base URLs subscribers connect to, round-robin (replicas)
	SendBases      []string // base URLs sends go to, round-robin
	Channel        string
	// Channels spreads subscribers and messages over this many channels
	// (Channel0..ChannelN-1; 1: Channel alone): subscriber i listens to
	// channel i mod N and message n goes to channel n mod N.
	Channels    int
	Subscribers int
	Rate        float64       // messages per second; ignored when Saturate
	Saturate    bool          // send as fast as the server accepts, InFlight at a time
	InFlight    int           // concurrent send requests
	Duration    time.Duration // sending time
	Grace       time.Duration // time after the last send for deliveries to arrive
	MaxMessages int64         // cap on measured messages, 0 = MaxMessages
	Token       string        // bearer token for sends (Centrifugo: the HTTP API key); empty sends none
	// Protocol is ProtocolChat (the default) or ProtocolCentrifugo; with Centrifugo
	// subscribers connect with tokens signed by HMACSecret.
	Protocol      string
	HMACSecret    string
	WarmupTimeout time.Duration // how long to wait for every subscriber to see a warm-up message
	DialParallel  int           // concurrent WebSocket handshakes
	SendTimeout   time.Duration
	// SendProcess runs the measured sends in a child process (this same
	// executable, started with SenderChildEnv set; see sendproc.go), so the
	// subscribers' reading does not hold them up.
	SendProcess bool
}

func (c *Config) fill() error {
	if len(c.SubscribeBases) == 0 {
		return errors.New("no subscriber base URL")
	}
	if len(c.SendBases) == 0 {
		c.SendBases = c.SubscribeBases
	}
	for _, b := range append(append([]string{}, c.SubscribeBases...), c.SendBases...) {
		if _, err := netguard.CheckURL(b); err != nil {
			return err
		}
	}
	if c.Channel == "" {
		c.Channel = "bench"
	}
	switch c.Protocol {
	case "":
		c.Protocol = ProtocolChat
	case ProtocolChat:
	case ProtocolCentrifugo:
		if c.HMACSecret == "" {
			return errors.New("centrifugo protocol without an HMAC secret for connection tokens")
		}
	default:
		return fmt.Errorf("protocol %q: want %s or %s", c.Protocol, ProtocolChat, ProtocolCentrifugo)
	}
	if c.Channels <= 0 {
		c.Channels = 1
	}
	if c.Channels > MaxSubscribers {
		return fmt.Errorf("channels %d above %d", c.Channels, MaxSubscribers)
	}
	if c.Subscribers < 1 || c.Subscribers > MaxSubscribers {
		return fmt.Errorf("subscribers %d outside 1..%d", c.Subscribers, MaxSubscribers)
	}
	if c.Duration <= 0 || c.Duration > MaxDuration {
		return fmt.Errorf("duration %s outside (0, %s]", c.Duration, MaxDuration)
	}
	if c.Grace < 0 || c.Grace > MaxDuration {
		return fmt.Errorf("grace %s outside [0, %s]", c.Grace, MaxDuration)
	}
	if !c.Saturate && (c.Rate <= 0 || c.Rate > 1e6) {
		return fmt.Errorf("rate %v msg/s outside (0, 1e6]", c.Rate)
	}
	if c.InFlight <= 0 {
		c.InFlight = 16
	}
	if c.InFlight > MaxInFlight {
		return fmt.Errorf("in-flight sends %d above %d", c.InFlight, MaxInFlight)
	}
	if c.MaxMessages <= 0 || c.MaxMessages > MaxMessages {
		c.MaxMessages = MaxMessages
	}
	if c.WarmupTimeout <= 0 {
		c.WarmupTimeout = 10 * time.Second
	}
	if c.WarmupTimeout > MaxDuration {
		return fmt.Errorf("warm-up timeout %s above %s", c.WarmupTimeout, MaxDuration)
	}
	if c.DialParallel <= 0 {
		c.DialParallel = 32
	}
	if c.SendTimeout <= 0 {
		c.SendTimeout = 10 * time.Second
	}
	if c.SendTimeout > time.Minute {
		return fmt.Errorf("send timeout %s above 1m", c.SendTimeout)
	}
	return nil
}

// newSendClient is the HTTP client of the sends, InFlight connections per base.
func newSendClient(cfg Config) *http.Client {
	return &http.Client{
		Transport:     netguard.Transport(cfg.InFlight),
		Timeout:       cfg.SendTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// channel names channel k of the run.
func (c *Config) channel(k int) string {
	if c.Channels <= 1 {
		return c.Channel
	}
	return fmt.Sprint(c.Channel, k%c.Channels)
}

// total is the number of measured messages the run may send.
func (c *Config) total() int64 {
	if c.Saturate {
		return c.MaxMessages
	}
	return min(int64(c.Rate*c.Duration.Seconds()), c.MaxMessages)
}

// Result is what one run measured.
type Result struct {
	RunID       string `json:"run_id"`
	Subscribers int    `json:"subscribers"` // connected
	Ready       int    `json:"ready"`       // saw a warm-up message before measuring
	// ConnErrors counts failed handshakes and connections that ended during the run.
	ConnErrors  map[string]int64 `json:"conn_errors"`
	ErrorEvents map[string]int64 `json:"error_events"` // "error" events by code
	BadFrames   int64            `json:"bad_frames"`

	Sent        int64            `json:"sent"` // acknowledged sends
	SendErrors  map[string]int64 `json:"send_errors"`
	SendElapsed time.Duration    `json:"send_elapsed_ns"`
	SendLatency hist.Summary     `json:"send_latency"`

	Expected   int64         `json:"expected"`  // Sent x Subscribers
	Delivered  int64         `json:"delivered"` // distinct (subscriber, message) deliveries
	Lost       int64         `json:"lost"`
	Duplicated int64         `json:"duplicated"`
	OutOfOrder int64         `json:"out_of_order"`
	Unexpected int64         `json:"unexpected"` // delivered though the send was not acknowledged
	Window     time.Duration `json:"window_ns"`  // first send to last delivery
	Latency    hist.Summary  `json:"latency"`

	Hist *hist.Histogram `json:"-"`
}

// DeliveredPerSec is distinct deliveries per second over the delivery window.
func (r *Result) DeliveredPerSec() float64 {
	if r.Window <= 0 {
		return 0
	}
	return float64(r.Delivered) / r.Window.Seconds()
}

// SentPerSec is acknowledged sends per second.
func (r *Result) SentPerSec() float64 {
	if r.SendElapsed <= 0 {
		return 0
	}
	return float64(r.Sent) / r.SendElapsed.Seconds()
}

// counter is a small concurrent map of counts by kind.
type counter struct {
	mu sync.Mutex
	m  map[string]int64
}

func (c *counter) add(kind string) { c.addN(kind, 1) }

func (c *counter) addN(kind string, n int64) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]int64{}
	}
	c.m[kind] += n
	c.mu.Unlock()
}

func (c *counter) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.m))
	for k, v := range c.m {
		out[k] = v
	}
	return out
}

type sub struct {
	ch     int // channel index
	conn   *websocket.Conn
	tally  *Tally
	warm   atomic.Bool
	lastAt atomic.Int64 // unix nanos of the last measured delivery
}

// run holds the state shared by one run's goroutines.
type run struct {
	cfg       Config
	id        string
	lat       hist.Histogram
	connErrs  counter
	errEvents counter
	badFrames atomic.Int64
	closing   atomic.Bool
}

// Run connects the subscribers, warms up, sends for cfg.Duration, waits for
// deliveries up to cfg.Grace and accounts for every message.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	var idb [4]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return nil, fmt.Errorf("make run id: %w", err)
	}
	r := &run{cfg: cfg, id: hex.EncodeToString(idb[:])}

	wsClient := &http.Client{Transport: netguard.Transport(cfg.DialParallel)}
	defer wsClient.CloseIdleConnections()
	sendClient := newSendClient(cfg)
	defer sendClient.CloseIdleConnections()

	var readers sync.WaitGroup
	subs := r.dial(ctx, wsClient, &readers)
	stopReaders := func() {
		r.closing.Store(true)
		for _, sb := range subs {
			sb.conn.CloseNow()
		}
		readers.Wait()
	}
	defer stopReaders()
	if len(subs) == 0 {
		return nil, fmt.Errorf("no subscriber connected: %v", r.connErrs.snapshot())
	}

	s := &sender{run: r, client: sendClient}
	ready := r.warmup(ctx, s, subs)

	total := cfg.total()
	sent := NewSentSet(total)
	var sendLat hist.Histogram
	firstSend := time.Now()
	ack := func(n int64, took time.Duration) {
		sent.Mark(n)
		sendLat.RecordDuration(took)
	}
	var sendEnd time.Time
	var issued int64
	if cfg.SendProcess {
		var err error
		if sendEnd, issued, err = s.measureInChild(ctx, total, ack); err != nil {
			return nil, err
		}
	} else {
		sendEnd, issued = s.measure(ctx, total, ack)
	}

	// wait for deliveries: all acknowledged messages at every subscriber, or the grace ends
	perChannel := make([]int64, cfg.Channels)
	for n := int64(0); n < issued; n++ {
		if sent.Has(n) {
			perChannel[n%int64(cfg.Channels)]++
		}
	}
	var want int64
	for _, sb := range subs {
		want += perChannel[sb.ch]
	}
	graceEnd := sendEnd.Add(cfg.Grace)
	for time.Now().Before(graceEnd) && ctx.Err() == nil {
		var got int64
		for _, sb := range subs {
			got += sb.tally.Unique()
		}
		if got >= want {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopReaders()

	res := &Result{
		RunID:       r.id,
		Subscribers: len(subs),
		Ready:       ready,
		Sent:        sent.Len(),
		SendErrors:  s.errs.snapshot(),
		SendElapsed: sendEnd.Sub(firstSend),
		SendLatency: sendLat.Summarize(),
		Expected:    want,
		Hist:        &r.lat,
	}
	var last int64
	for _, sb := range subs {
		lost, unexpected := sb.tally.CompareChannel(sent, issued, int64(cfg.Channels), int64(sb.ch))
		res.Lost += lost
		res.Unexpected += unexpected
		res.Duplicated += sb.tally.Duplicates
		res.OutOfOrder += sb.tally.OutOfOrder
		res.Delivered += sb.tally.Unique()
		last = max(last, sb.lastAt.Load())
	}
	if last > 0 {
		res.Window = time.Unix(0, last).Sub(firstSend)
	}
	res.Latency = r.lat.Summarize()
	res.ConnErrors = r.connErrs.snapshot()
	res.ErrorEvents = r.errEvents.snapshot()
	res.BadFrames = r.badFrames.Load()
	return res, ctx.Err()
}

// dial opens the subscribers, DialParallel handshakes at a time, and starts a reader for each.
func (r *run) dial(ctx context.Context, client *http.Client, readers *sync.WaitGroup) []*sub {
	var (
		mu   sync.Mutex
		subs []*sub
		wg   sync.WaitGroup
		sem  = make(chan struct{}, r.cfg.DialParallel)
	)
	for i := 0; i < r.cfg.Subscribers && ctx.Err() == nil; i++ {
		base := r.cfg.SubscribeBases[i%len(r.cfg.SubscribeBases)]
		ch := i % r.cfg.Channels
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			centrifugo := r.cfg.Protocol == ProtocolCentrifugo
			var u string
			var err error
			if centrifugo {
				u, err = centrifugoWSURL(base)
			} else {
				u, err = chatclient.WSURL(base, r.cfg.channel(ch), "")
			}
			if err != nil {
				r.connErrs.add("bad url")
				return
			}
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			c, resp, err := websocket.Dial(dctx, u, &websocket.DialOptions{HTTPClient: client})
			if err != nil {
				kind := "dial " + netguard.ErrorKind(err)
				if resp != nil {
					kind = fmt.Sprintf("dial status %d", resp.StatusCode)
				}
				r.connErrs.add(kind)
				return
			}
			c.SetReadLimit(1 << 20)
			if centrifugo {
				tok, err := centrifugoToken(r.cfg.HMACSecret, fmt.Sprint("bench-", i), time.Now())
				if err == nil {
					err = centrifugoSubscribe(dctx, c, tok, r.cfg.channel(ch))
				}
				if err != nil {
					r.connErrs.add("subscribe " + netguard.ErrorKind(err))
					c.CloseNow()
					return
				}
			}
			sb := &sub{ch: ch, conn: c, tally: NewTally()}
			mu.Lock()
			subs = append(subs, sb)
			mu.Unlock()
			readers.Go(func() { r.read(sb) })
		})
	}
	wg.Wait()
	return subs
}

// read consumes one subscriber's frames until the run closes the connection. Reads
// take a context without Done on purpose: coder/websocket registers an AfterFunc per
// read on a cancellable context, which would be shared contention across subscribers.
func (r *run) read(sb *sub) {
	defer sb.conn.CloseNow()
	var buf bytes.Buffer
	for {
		_, rd, err := sb.conn.Reader(context.Background())
		if err == nil {
			buf.Reset()
			_, err = buf.ReadFrom(rd)
		}
		if err != nil {
			if !r.closing.Load() {
				if code := websocket.CloseStatus(err); code != -1 {
					r.connErrs.add(fmt.Sprintf("closed %d", code))
				} else {
					r.connErrs.add("read " + netguard.ErrorKind(err))
				}
			}
			return
		}
		now := time.Now().UnixNano()
		message := func(id int64, text string) {
			t, ok := ParseText(text)
			if !ok || t.RunID != r.id {
				return
			}
			if t.Warmup {
				sb.warm.Store(true)
				return
			}
			if sb.tally.Add(t.Seq, id) {
				r.lat.Record(now - t.SentNano)
				sb.lastAt.Store(now)
			}
		}
		var perr error
		if r.cfg.Protocol == ProtocolCentrifugo {
			// Publications carry no id without history: no order check.
			perr = scanCentrifugo(buf.Bytes(), func(text []byte) { message(0, string(text)) },
				func() { _ = sb.conn.Write(context.Background(), websocket.MessageText, []byte("{}")) },
				r.errEvents.add)
			if perr != nil {
				r.badFrames.Add(1)
			}
			continue
		}
		// ScanFrame reads message events without encoding/json, which took most
		// of the generator's CPU at saturation.
		perr = chatclient.ScanFrame(buf.Bytes(), func(id int64, text []byte) {
			message(id, string(text))
		}, func(ev chatclient.Event) {
			switch ev.Type {
			case chatclient.TypeMessage:
				message(ev.Message.ID, ev.Message.Text)
			case chatclient.TypeError:
				r.errEvents.add(ev.Code)
			}
		})
		if perr != nil {
			r.badFrames.Add(1)
		}
	}
}

// warmup sends warm-up messages until every subscriber has seen one, so that measured
// messages are not lost to subscriptions that are still being set up. Each round sends
// one to every channel that still has a cold subscriber, InFlight at a time.
func (r *run) warmup(ctx context.Context, s *sender, subs []*sub) int {
	deadline := time.Now().Add(r.cfg.WarmupTimeout)
	for k := 0; ; k++ {
		cold := map[int]bool{}
		for _, sb := range subs {
			if !sb.warm.Load() {
				cold[sb.ch] = true
			}
		}
		var wg sync.WaitGroup
		sem := make(chan struct{}, r.cfg.InFlight)
		for ch := range cold {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				if kind, _ := s.post(ctx, FormatWarmup(r.id, k, time.Now()), r.cfg.channel(ch)); kind != "" {
					s.errs.add("warm-up " + kind)
				}
			})
		}
		wg.Wait()
		tick := time.Now().Add(200 * time.Millisecond)
		for time.Now().Before(tick) {
			ready := 0
			for _, sb := range subs {
				if sb.warm.Load() {
					ready++
				}
			}
			if ready == len(subs) || time.Now().After(deadline) || ctx.Err() != nil {
				return ready
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

type sender struct {
	run    *run
	client *http.Client
	errs   counter
	next   atomic.Int64 // round-robin over SendBases
}

// post sends one message; it answers "" when the server acknowledged it (2xx) and
// the kind of failure otherwise, and how long the request took.
func (s *sender) post(ctx context.Context, text, channel string) (string, time.Duration) {
	cfg := s.run.cfg
	base := cfg.SendBases[int(s.next.Add(1))%len(cfg.SendBases)]
	centrifugo := cfg.Protocol == ProtocolCentrifugo
	var body []byte
	var err error
	u := chatclient.SendURL(base)
	if centrifugo {
		u = strings.TrimRight(base, "/") + centrifugoPublishPath
		body, err = centrifugoPublishBody(text, channel)
	} else {
		body, err = json.Marshal(chatclient.SendBody{Message: text, Channel: channel})
	}
	if err != nil {
		return "encode", 0
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return "bad request", 0
	}
	req.Header.Set("Content-Type", "application/json")
	if cfg.Token != "" {
		if centrifugo {
			req.Header.Set("X-API-Key", cfg.Token)
		} else {
			req.Header.Set("Authorization", "Bearer "+cfg.Token)
		}
	}
	t0 := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return netguard.ErrorKind(err), 0
	}
	// The answer is small (an empty object or an error); 64 KiB bounds what is read.
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Sprintf("status %d", resp.StatusCode), 0
	}
	if centrifugo && centrifugoPublishFailed(answer) {
		return "publish error", 0
	}
	return "", time.Since(t0)
}

// measure sends the measured messages, paced at Rate or as fast as InFlight allows,
// calls ack for each one the server acknowledged (from several goroutines), and
// returns when the last send has finished and how many sequence numbers it used.
func (s *sender) measure(ctx context.Context, total int64, ack func(n int64, took time.Duration)) (time.Time, int64) {
	cfg := s.run.cfg
	start := time.Now()
	stop := start.Add(cfg.Duration)
	var seq, issued atomic.Int64
	var wg sync.WaitGroup
	var jobs chan int64
	if !cfg.Saturate {
		jobs = make(chan int64)
		wg.Go(func() {
			defer close(jobs)
			interval := time.Duration(float64(time.Second) / cfg.Rate)
			for i := int64(0); i < total; i++ {
				if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
					time.Sleep(d)
				}
				if time.Now().After(stop.Add(cfg.Grace)) || ctx.Err() != nil {
					return // the sender fell too far behind; stop rather than run on
				}
				issued.Store(i + 1)
				jobs <- i
			}
		})
	}
	for w := 0; w < cfg.InFlight; w++ {
		wg.Go(func() {
			for {
				var n int64
				if cfg.Saturate {
					n = seq.Add(1) - 1
					if n >= total || time.Now().After(stop) || ctx.Err() != nil {
						return
					}
				} else {
					var ok bool
					if n, ok = <-jobs; !ok {
						return
					}
				}
				if kind, took := s.post(ctx, FormatText(s.run.id, n, time.Now()), cfg.channel(int(n%int64(cfg.Channels)))); kind == "" {
					ack(n, took)
				} else if ctx.Err() == nil {
					s.errs.add(kind)
				}
			}
		})
	}
	wg.Wait()
	if cfg.Saturate {
		issued.Store(min(seq.Load(), total))
	}
	return time.Now(), issued.Load()
}

// Kinds lists the keys of a count map in order, for stable reports.
func Kinds(m map[string]int64) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
