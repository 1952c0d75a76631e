// A tiny server for proctest's own tests: it listens on HOST:PORT, answers
// /readyz only after READY_AFTER, echoes an environment variable at
// /env?name=, and stops on SIGTERM unless IGNORE_TERM is set.
package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	if os.Getenv("EXIT_AT_START") != "" {
		fmt.Println("giving up at start")
		os.Exit(3)
	}
	// Ignore SIGTERM before listening: the test stops the server as soon as
	// the port answers, and a signal that arrived before signal.Ignore ran
	// would kill it the default way.
	ignoreTerm := os.Getenv("IGNORE_TERM") != ""
	if ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
	}
	readyAfter, _ := time.ParseDuration(os.Getenv("READY_AFTER"))
	start := time.Now()
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if time.Since(start) < readyAfter {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("/env", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, os.Getenv(r.URL.Query().Get("name")))
	})
	l, err := net.Listen("tcp", net.JoinHostPort(os.Getenv("HOST"), os.Getenv("PORT")))
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("listening on", l.Addr())
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(l) }()
	if ignoreTerm {
		select {}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	fmt.Println("graceful stop")
	_ = srv.Shutdown(context.Background())
}
