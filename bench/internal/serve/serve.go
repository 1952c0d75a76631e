// Package serve runs a floor server on a loopback address until its context ends,
// then shuts it down with a deadline, long-lived WebSocket handlers included.
package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/apistack/platform/bench/internal/netguard"
)

// Options describe the server; WebSocket servers set NoWriteTimeout because a
// hijacked connection keeps the deadline the HTTP server set on it.
type Options struct {
	Addr           string
	Handler        http.Handler
	NoWriteTimeout bool
	// Started is called with the bound address once the listener is open.
	Started func(addr net.Addr)
}

// Run listens on opts.Addr (loopback only) and serves until ctx is done.
func Run(ctx context.Context, opts Options) error {
	host, _, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", opts.Addr, err)
	}
	if err := netguard.CheckHost(host); err != nil {
		return fmt.Errorf("listen address %q: %w", opts.Addr, err)
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", opts.Addr, err)
	}
	baseCtx, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	srv := &http.Server{
		Handler:           opts.Handler,
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       120 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
	}
	if !opts.NoWriteTimeout {
		srv.ReadTimeout = 10 * time.Second
		srv.WriteTimeout = 10 * time.Second
	}
	if opts.Started != nil {
		opts.Started(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	cancelBase() // ends hijacked WebSocket handlers, which Shutdown does not wait for
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shut down %s: %w", ln.Addr(), err)
	}
	return nil
}
