// Command wsidle opens K idle WebSocket subscriptions to a loopback server and reports
// how much the server's resident memory grew per connection, read from /proc/PID/status,
// and how many goroutines each one holds, read from the server's /metrics.
//
// One source address has about 28,000 ephemeral ports towards one server port and one
// process as many sockets as its open-file limit allows, so -sources spreads the
// sockets over several 127.x addresses and, when the limit is too low for K, wsidle
// starts holder processes of itself that open a share each.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/apistack/platform/bench/internal/fdlimit"
	"github.com/apistack/platform/bench/internal/netguard"
	"github.com/apistack/platform/bench/internal/procstat"
	"github.com/apistack/platform/bench/internal/selfexec"
	chatclient "github.com/apistack/platform/services/chat/client"
)

// MaxConns bounds -k whatever the flag says.
const MaxConns = 200_000

// spareFDs is what a process keeps of its open-file limit for everything but the sockets.
const spareFDs = 100

func main() {
	if selfexec.Is(holderEnv) {
		os.Exit(holderMain())
	}
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "wsidle:", err)
		os.Exit(1)
	}
}

type report struct {
	Base            string           `json:"base"`
	PID             int              `json:"pid"`
	Requested       int              `json:"requested"`
	Channels        int              `json:"channels"`
	Sources         int              `json:"sources"`
	Processes       int              `json:"processes"`
	Connected       int              `json:"connected"`
	Failed          int64            `json:"failed"`
	FailedBy        map[string]int64 `json:"failed_by,omitempty"`
	RSSBefore       int64            `json:"rss_before_bytes"`
	RSSAfter        int64            `json:"rss_after_bytes"`
	BytesPerConn    int64            `json:"bytes_per_conn"`
	GoroutinesAfter int64            `json:"goroutines_after"`
	GoroutinesPer   float64          `json:"goroutines_per_conn"`
	ClosedWhileIdle int64            `json:"closed_while_idle"`
	ClientCPU       float64          `json:"client_cpu_seconds"`
	ClientRSS       int64            `json:"client_rss_bytes"`
	OpenSeconds     float64          `json:"open_seconds"`
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("wsidle", flag.ContinueOnError)
	base := fs.String("base", "", "server base URL, loopback only (e.g. http://127.0.0.1:8080)")
	pid := fs.Int("pid", 0, "server process id, whose VmRSS is read from /proc/PID/status")
	k := fs.Int("k", 1000, "idle connections to open")
	channel := fs.String("channel", "bench", "channel to subscribe to (the prefix of the names with -channels)")
	channels := fs.Int("channels", 1, "spread the connections over this many channels, <channel>0..<channel>N-1, round-robin")
	sources := fs.Int("sources", 1, "loopback source addresses (127.0.1.1, 127.0.2.1, ...), round-robin; 1: the system's choice")
	procs := fs.Int("procs", 0, "holder processes (0: as many as this process's open-file limit needs)")
	settle := fs.Duration("settle", 3*time.Second, "wait after the last connection before reading RSS again")
	parallel := fs.Int("dial-parallel", 32, "concurrent handshakes per process")
	jsonOut := fs.Bool("json", false, "print the report as JSON")
	probe := fs.String("probe", "", "loopback URL fetched after the settle, while the sockets are open; the lines of its answer that start with \"# \" are printed (a pprof heap?debug=1 answer: the Go runtime's memory statistics)")
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
	if *sources < 1 || *sources > 1000 {
		return fmt.Errorf("-sources %d outside 1..1000", *sources)
	}
	if *settle < 0 || *settle > 10*time.Minute {
		return fmt.Errorf("-settle %s outside 0..10m", *settle)
	}
	if *parallel < 1 || *parallel > 1000 {
		return fmt.Errorf("-dial-parallel %d outside 1..1000", *parallel)
	}
	if _, err := netguard.CheckURL(*base); err != nil {
		return err
	}
	if *probe != "" {
		if _, err := netguard.CheckURL(*probe); err != nil {
			return err
		}
	}
	lim, err := fdlimit.Raise()
	if err != nil {
		return err
	}
	if lim <= spareFDs {
		return fmt.Errorf("open-file limit %d is too low", lim)
	}
	per := int(lim) - spareFDs
	if *procs == 0 {
		*procs = (*k + per - 1) / per
	}
	if *procs < 1 || *procs > 64 || (*k+*procs-1) / *procs > per {
		return fmt.Errorf("-procs %d: want 1..64 processes of at most %d sockets each (open-file limit %d) for %d sockets", *procs, per, lim, *k)
	}
	urls := make([]string, *channels)
	for i := range urls {
		name := *channel
		if *channels > 1 {
			name = fmt.Sprint(*channel, i)
		}
		if urls[i], err = chatclient.WSURL(*base, name, ""); err != nil {
			return err
		}
	}
	var srcs []string
	if *sources > 1 {
		addrs, err := netguard.Sources(*sources)
		if err != nil {
			return err
		}
		for _, a := range addrs {
			srcs = append(srcs, a.String())
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	metrics := &http.Client{Transport: netguard.Transport(1), Timeout: 10 * time.Second}
	before, err := procstat.RSS(*pid)
	if err != nil {
		return err
	}
	start := time.Now()
	holders := make([]holder, *procs)
	for i := range holders {
		sh := share{URLs: urls, Sources: srcs, Start: i * *k / *procs, Parallel: *parallel}
		sh.Count = (i+1)**k / *procs - sh.Start
		if *procs == 1 {
			holders[i] = &inProcess{}
		} else {
			holders[i] = &childProcess{}
		}
		if err := holders[i].open(ctx, sh); err != nil {
			for _, h := range holders[:i] {
				h.close()
			}
			return err
		}
	}
	rep := report{Base: *base, PID: *pid, Requested: *k, Channels: *channels, Sources: max(1, len(srcs)), Processes: *procs,
		RSSBefore: before, FailedBy: map[string]int64{}}
	for _, h := range holders {
		st := h.status()
		rep.Connected += st.Connected
		rep.Failed += st.Failed
		for kind, n := range st.FailedBy {
			rep.FailedBy[kind] += n
		}
	}
	rep.OpenSeconds = time.Since(start).Seconds()
	select {
	case <-ctx.Done():
	case <-time.After(*settle):
	}
	after, err := procstat.RSS(*pid)
	if err != nil {
		return err
	}
	rep.RSSAfter = after
	if g, err := goroutines(metrics, *base); err == nil {
		rep.GoroutinesAfter = g
	}
	var probed []string
	if *probe != "" {
		probed = fetchComments(metrics, *probe)
	}
	for _, h := range holders {
		cpu, rss := h.usage()
		rep.ClientCPU += cpu
		rep.ClientRSS += rss
	}
	for _, h := range holders {
		rep.ClosedWhileIdle += h.close()
	}
	// Per socket still open when the memory was read: the server may have
	// closed some meanwhile (a store too slow to join a channel: 1013).
	if open := int64(rep.Connected) - rep.ClosedWhileIdle; open > 0 {
		rep.BytesPerConn = (after - before) / open
		rep.GoroutinesPer = float64(rep.GoroutinesAfter) / float64(open)
	}
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprintf(stdout, "wsidle: %d of %d connections on %d channel(s) from %d source address(es) in %d process(es) to %s open in %.1f s (%d failed%s)\n",
		rep.Connected, rep.Requested, *channels, rep.Sources, *procs, *base, rep.OpenSeconds, rep.Failed, failedBy(rep.FailedBy))
	fmt.Fprintf(stdout, "server pid %d VmRSS: %.1f MiB before, %.1f MiB after; %d goroutines (%.2f per open connection)\n",
		*pid, float64(before)/(1<<20), float64(after)/(1<<20), rep.GoroutinesAfter, rep.GoroutinesPer)
	fmt.Fprintf(stdout, "client (wsidle): %.1f s CPU, %.1f MiB resident\n", rep.ClientCPU, float64(rep.ClientRSS)/(1<<20))
	if rep.ClosedWhileIdle > 0 {
		fmt.Fprintf(stdout, "warning: the server closed %d connections while they were idle\n", rep.ClosedWhileIdle)
	}
	fmt.Fprintf(stdout, "memory per idle connection (of those open): %.1f KB (%d bytes)\n", float64(rep.BytesPerConn)/1000, rep.BytesPerConn)
	for _, l := range probed {
		fmt.Fprintln(stdout, l)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted")
	}
	return nil
}

func failedBy(m map[string]int64) string {
	s := ""
	for k, n := range m {
		s += fmt.Sprintf(", %s: %d", k, n)
	}
	return s
}

// fetchComments returns the lines of url's answer that start with "# ".
func fetchComments(c *http.Client, url string) []string {
	resp, err := c.Get(url)
	if err != nil {
		return []string{"# probe: " + err.Error()}
	}
	defer resp.Body.Close()
	var out []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "# ") {
			out = append(out, sc.Text())
		}
	}
	return out
}

// goroutines reads go_goroutines from the server's /metrics.
func goroutines(c *http.Client, base string) (int64, error) {
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return procstat.Gauge(resp.Body, "go_goroutines")
}
