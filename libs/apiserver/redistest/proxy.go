package redistest

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP connections to a server. A client connection that
// closes leaves the server's side open for Linger: what the client had
// sent is still read and run by the server, as when a client gives up on
// an answer (a timeout) while its request waits in a stalled server's
// socket buffer, and the server learns of it later, if ever (a paused
// container, a cut network). Without Linger the server's side closes with
// the client's and a stalled server may drop what it had not read yet.
type Proxy struct {
	ln     net.Listener
	target string
	linger time.Duration

	mu     sync.Mutex
	conns  []net.Conn
	closed bool
	wg     sync.WaitGroup
}

// StartProxy forwards a loopback port to addr; it stops when the test ends.
func StartProxy(tb testing.TB, addr string, linger time.Duration) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{ln: ln, target: addr, linger: linger}
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.Close)
	return p
}

// Addr is the proxy's address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is a redis:// URL of the proxy (database 0).
func (p *Proxy) URL() string { return "redis://" + p.Addr() + "/0" }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		if !p.track(c, s) {
			return
		}
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(s, c) // until the client closes
			if p.linger > 0 {
				time.AfterFunc(p.linger, func() { _ = s.Close() })
			} else {
				_ = s.Close()
			}
		}()
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(c, s)
			_ = c.Close()
		}()
	}
}

func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	p.conns = append(p.conns, cs...)
	return true
}

// Close stops the proxy and every connection through it.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	_ = p.ln.Close()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
