// Command geoipfloor serves the geoip floor: a plain gin handler on /:ip/json/ that
// answers a fixed record of a geoip answer's size, for httpload to compare against.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/apistack/platform/bench/internal/geoipfloor"
	"github.com/apistack/platform/bench/internal/serve"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "geoipfloor:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:8090", "loopback address to listen on")
	headers := flag.Bool("headers", false, "send the other headers of a geoip answer too (request id, nosniff, Cache-Control, ETag), fixed values of their length")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve.Run(ctx, serve.Options{
		Addr:    *addr,
		Handler: geoipfloor.New(geoipfloor.Options{AnswerHeaders: *headers}),
		Started: func(a net.Addr) {
			fmt.Printf("geoipfloor listening on http://%s/{ip}/json/ (pid %d)\n", a, os.Getpid())
		},
	})
}
