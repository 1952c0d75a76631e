package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/apistack/platform/bench/internal/fdlimit"
	"github.com/apistack/platform/bench/internal/netguard"
	"github.com/apistack/platform/bench/internal/procstat"
	"github.com/apistack/platform/bench/internal/selfexec"
)

// holderEnv, set in a process's environment, makes wsidle a holder process: it reads
// a share on stdin, opens it, prints its status, and holds the sockets until its
// stdin closes.
const holderEnv = "WSIDLE_HOLDER"

// share is the part of the sockets one process opens: sockets Start..Start+Count-1
// of the run, socket i on URLs[i%len] from Sources[i%len].
type share struct {
	URLs     []string `json:"urls"`
	Sources  []string `json:"sources"`
	Start    int      `json:"start"`
	Count    int      `json:"count"`
	Parallel int      `json:"parallel"`
}

type status struct {
	Connected int              `json:"connected"`
	Failed    int64            `json:"failed"`
	FailedBy  map[string]int64 `json:"failed_by"`
}

// holder opens a share and holds it.
type holder interface {
	open(ctx context.Context, sh share) error
	status() status
	usage() (cpuSeconds float64, rss int64) // of the process holding the sockets
	close() (closedWhileIdle int64)
}

// sockets is a share held in this process.
type sockets struct {
	mu     sync.Mutex
	conns  []*websocket.Conn
	st     status
	closed atomic.Int64
}

func (s *sockets) open(ctx context.Context, sh share) error {
	clients := []*http.Client{{Transport: netguard.Transport(sh.Parallel)}}
	if len(sh.Sources) > 0 {
		clients = clients[:0]
		for _, src := range sh.Sources {
			a, err := netip.ParseAddr(src)
			if err != nil {
				return fmt.Errorf("source %q: %w", src, err)
			}
			t, err := netguard.TransportFrom(a, sh.Parallel)
			if err != nil {
				return err
			}
			clients = append(clients, &http.Client{Transport: t})
		}
	}
	s.st.FailedBy = map[string]int64{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, sh.Parallel)
	for i := sh.Start; i < sh.Start+sh.Count && ctx.Err() == nil; i++ {
		sem <- struct{}{}
		u, client := sh.URLs[i%len(sh.URLs)], clients[i%len(clients)]
		wg.Go(func() {
			defer func() { <-sem }()
			dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			c, _, err := websocket.Dial(dctx, u, &websocket.DialOptions{HTTPClient: client})
			s.mu.Lock()
			defer s.mu.Unlock()
			if err != nil {
				s.st.Failed++
				s.st.FailedBy[netguard.ErrorKind(err)]++
				return
			}
			s.conns = append(s.conns, c)
			s.st.Connected++
			// read (and drop) whatever the server sends, so pings are answered
			go func() {
				for {
					if _, _, err := c.Read(context.Background()); err != nil {
						s.closed.Add(1)
						return
					}
				}
			}()
		})
	}
	wg.Wait()
	return nil
}

func (s *sockets) status() status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

func (s *sockets) close() int64 {
	n := s.closed.Load() // before we close them ourselves
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.CloseNow()
	}
	return n
}

// inProcess holds the sockets in this process.
type inProcess struct{ sockets }

func (h *inProcess) usage() (float64, int64) {
	cpu, _ := procstat.CPUSeconds(os.Getpid())
	rss, _ := procstat.RSS(os.Getpid())
	return cpu, rss
}

// childProcess holds them in a holder process of its own.
type childProcess struct {
	child *selfexec.Child
	out   *bufio.Reader
	st    status
}

func (h *childProcess) open(ctx context.Context, sh share) error {
	c, err := selfexec.Start(ctx, holderEnv)
	if err != nil {
		return err
	}
	h.child, h.out = c, bufio.NewReader(c.Stdout)
	pid := c.Cmd.Process.Pid
	if err := json.NewEncoder(c.Stdin).Encode(sh); err != nil {
		return fmt.Errorf("holder %d: send share: %w", pid, err)
	}
	line, err := h.out.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("holder %d: no status: %w", pid, err)
	}
	return json.Unmarshal(line, &h.st)
}

func (h *childProcess) status() status { return h.st }

func (h *childProcess) usage() (float64, int64) {
	cpu, _ := procstat.CPUSeconds(h.child.Cmd.Process.Pid)
	rss, _ := procstat.RSS(h.child.Cmd.Process.Pid)
	return cpu, rss
}

func (h *childProcess) close() int64 {
	h.child.Stdin.Close()
	var n int64
	if line, err := h.out.ReadBytes('\n'); err == nil {
		_ = json.Unmarshal(line, &n)
	}
	_ = h.child.Cmd.Wait()
	return n
}

// holderMain is a holder process: share on stdin, status on stdout, hold until stdin
// closes, then the count of sockets the server closed meanwhile on stdout.
func holderMain() int {
	if _, err := fdlimit.Raise(); err != nil {
		fmt.Fprintln(os.Stderr, "wsidle holder:", err)
		return 1
	}
	in := bufio.NewReader(os.Stdin)
	var sh share
	line, err := in.ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &sh)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "wsidle holder: read share:", err)
		return 1
	}
	var s sockets
	if err := s.open(context.Background(), sh); err != nil {
		fmt.Fprintln(os.Stderr, "wsidle holder:", err)
		return 1
	}
	b, _ := json.Marshal(s.status())
	fmt.Printf("%s\n", b)
	_, _ = io.Copy(io.Discard, in) // until the parent closes stdin
	fmt.Println(s.close())
	return 0
}
