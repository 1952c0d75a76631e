//go:build pprof

package main

import "github.com/apistack/platform/libs/apiserver/pprofserve"

// A profiling build (go build -tags pprof) serves net/http/pprof on
// GEOIP_PPROF_ADDR, a loopback listener of its own, so the benchmarks can profile
// a server under wrk (bench/scripts/geoip-http.sh). The default build has no such endpoint. It is read here, not in
// internal/config, because only this build knows the variable.
func init() { pprofserve.FromEnv("GEOIP_PPROF_ADDR") }
