// Command wsfloor serves the chat fan-out floor: a bare coder/websocket broadcast
// server with the chat's subscribe and send endpoints and no storage.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/apistack/platform/bench/internal/serve"
	"github.com/apistack/platform/bench/internal/wsfloor"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "wsfloor:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:8091", "loopback address to listen on")
	buffer := flag.Int("buffer", 16, "frames queued per subscriber; a full buffer drops the message for that subscriber")
	writeTimeout := flag.Duration("write-timeout", 5*time.Second, "timeout for writing one frame")
	verbose := flag.Bool("v", false, "log connection errors")
	flag.Parse()

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := wsfloor.New(wsfloor.Options{Buffer: *buffer, WriteTimeout: *writeTimeout, Logger: log})
	err := serve.Run(ctx, serve.Options{
		Addr:           *addr,
		Handler:        srv.Handler(),
		NoWriteTimeout: true,
		Started: func(a net.Addr) {
			fmt.Printf("wsfloor listening on http://%s (pid %d), buffer %d\n", a, os.Getpid(), *buffer)
		},
	})
	st := srv.Stats()
	log.Info("wsfloor stopped", "published", st.Published, "queued", st.Queued, "dropped", st.Dropped)
	return err
}
