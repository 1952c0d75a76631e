// Package pprofserve serves net/http/pprof on a loopback listener of its
// own, for the services' opt-in profiling builds (go build -tags pprof):
// the benchmarks profile a server under load without the profile
// endpoints ever sharing the API's listener. The default builds do not
// import it.
package pprofserve

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
)

// Handler serves the profiles under /debug/pprof/.
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// CheckAddr accepts only a loopback host:port: profiles expose the
// process (memory contents, symbols, timing).
func CheckAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("want a loopback host:port such as 127.0.0.1:6060, got %q", addr)
	}
	return nil
}

// FromEnv serves the profiles in the background on the address in the
// environment variable name, when it is set; an address that is not a
// loopback one, or a listener that fails, is logged and nothing is served.
func FromEnv(name string) {
	addr := os.Getenv(name)
	if addr == "" {
		return
	}
	if err := CheckAddr(addr); err != nil {
		slog.Error("pprof: not serving profiles", "variable", name, "err", err)
		return
	}
	go func() {
		if err := http.ListenAndServe(addr, Handler()); err != nil {
			slog.Error("pprof listener", "variable", name, "addr", addr, "err", err)
		}
	}()
}
