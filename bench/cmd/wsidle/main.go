// Command wsidle opens K idle WebSocket subscriptions to a loopback server and reports
// how much the server's resident memory grew per connection, read from /proc/PID/status.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/apistack/platform/bench/internal/chatwire"
	"github.com/apistack/platform/bench/internal/fdlimit"
	"github.com/apistack/platform/bench/internal/netguard"
	"github.com/apistack/platform/bench/internal/procstat"
)

// MaxConns bounds -k whatever the flag says.
const MaxConns = 50_000

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "wsidle:", err)
		os.Exit(1)
	}
}

type report struct {
	Base            string `json:"base"`
	PID             int    `json:"pid"`
	Requested       int    `json:"requested"`
	Channels        int    `json:"channels"`
	Connected       int    `json:"connected"`
	Failed          int64  `json:"failed"`
	RSSBefore       int64  `json:"rss_before_bytes"`
	RSSAfter        int64  `json:"rss_after_bytes"`
	BytesPerConn    int64  `json:"bytes_per_conn"`
	ClosedWhileIdle int64  `json:"closed_while_idle"`
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("wsidle", flag.ContinueOnError)
	base := fs.String("base", "", "server base URL, loopback only (e.g. http://127.0.0.1:8080)")
	pid := fs.Int("pid", 0, "server process id, whose VmRSS is read from /proc/PID/status")
	k := fs.Int("k", 1000, "idle connections to open")
	channel := fs.String("channel", "bench", "channel to subscribe to (the prefix of the names with -channels)")
	channels := fs.Int("channels", 1, "spread the connections over this many channels, <channel>0..<channel>N-1, round-robin")
	settle := fs.Duration("settle", 3*time.Second, "wait after the last connection before reading RSS again")
	parallel := fs.Int("dial-parallel", 32, "concurrent handshakes")
	jsonOut := fs.Bool("json", false, "print the report as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *base == "" || *pid <= 0 {
		return fmt.Errorf("-base and -pid are required")
	}
	if *k < 1 || *k > MaxConns {
		return fmt.Errorf("-k %d outside 1..%d", *k, MaxConns)
	}
	if *channels < 1 || *channels > *k {
		return fmt.Errorf("-channels %d outside 1..%d (-k)", *channels, *k)
	}
	if *settle < 0 || *settle > 10*time.Minute {
		return fmt.Errorf("-settle %s outside 0..10m", *settle)
	}
	if _, err := netguard.CheckURL(*base); err != nil {
		return err
	}
	lim, err := fdlimit.Raise()
	if err != nil {
		return err
	}
	if lim < uint64(*k)+64 {
		return fmt.Errorf("open-file limit %d is too low for %d connections", lim, *k)
	}
	urls := make([]string, *channels)
	for i := range urls {
		name := *channel
		if *channels > 1 {
			name = fmt.Sprint(*channel, i)
		}
		if urls[i], err = chatwire.WSURL(*base, name, 0); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	before, err := procstat.RSS(*pid)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: netguard.Transport(*parallel)}
	var (
		mu     sync.Mutex
		conns  []*websocket.Conn
		failed atomic.Int64
		closed atomic.Int64
		wg     sync.WaitGroup
		sem    = make(chan struct{}, *parallel)
	)
	for i := 0; i < *k && ctx.Err() == nil; i++ {
		sem <- struct{}{}
		u := urls[i%len(urls)]
		wg.Go(func() {
			defer func() { <-sem }()
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			c, _, err := websocket.Dial(dctx, u, &websocket.DialOptions{HTTPClient: client})
			if err != nil {
				failed.Add(1)
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			// read (and drop) whatever the server sends, so pings are answered
			go func() {
				for {
					if _, _, err := c.Read(context.Background()); err != nil {
						closed.Add(1)
						return
					}
				}
			}()
		})
	}
	wg.Wait()
	select {
	case <-ctx.Done():
	case <-time.After(*settle):
	}
	after, err := procstat.RSS(*pid)
	if err != nil {
		return err
	}
	closedIdle := closed.Load() // before we close them ourselves
	for _, c := range conns {
		c.CloseNow()
	}
	rep := report{Base: *base, PID: *pid, Requested: *k, Channels: *channels, Connected: len(conns), Failed: failed.Load(),
		RSSBefore: before, RSSAfter: after, ClosedWhileIdle: closedIdle}
	if rep.Connected > 0 {
		rep.BytesPerConn = (after - before) / int64(rep.Connected)
	}
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprintf(stdout, "wsidle: %d of %d connections on %d channel(s) to %s open (%d failed)\n", rep.Connected, rep.Requested, *channels, *base, rep.Failed)
	fmt.Fprintf(stdout, "server pid %d VmRSS: %.1f MiB before, %.1f MiB after\n", *pid, float64(before)/(1<<20), float64(after)/(1<<20))
	if closedIdle > 0 {
		fmt.Fprintf(stdout, "warning: the server closed %d connections while they were idle\n", closedIdle)
	}
	fmt.Fprintf(stdout, "memory per idle connection: %.1f KB (%d bytes)\n", float64(rep.BytesPerConn)/1000, rep.BytesPerConn)
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted")
	}
	return nil
}
