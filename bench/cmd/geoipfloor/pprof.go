//go:build pprof

package main

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
)

// The floor keeps its own copy of libs/apiserver/pprofserve: the bench module does not
// depend on the library it measures against.
//
// A profiling build (go build -tags pprof) serves net/http/pprof on
// GEOIPFLOOR_PPROF_ADDR, a listener of its own, so a profile of the floor can be
// compared with geoip's under the same wrk load. The
// address must be a loopback one: profiles expose the process. The default
// build has no such endpoint.
func init() {
	addr := os.Getenv("GEOIPFLOOR_PPROF_ADDR")
	if addr == "" {
		return
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		slog.Error("pprof: GEOIPFLOOR_PPROF_ADDR must be a loopback host:port; not serving profiles", "addr", addr)
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	go func() {
		if err := http.ListenAndServe(addr, mux); err != nil {
			slog.Error("pprof listener", "addr", addr, "err", err)
		}
	}()
}
