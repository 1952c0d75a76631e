package main

import (
	"runtime/debug"

	"github.com/apistack/platform/services/geoip/internal/config"
)

// applyGC sets the collector as cfg says (config.GC): GOGC's percentage, or geoip's
// default in its place, and geoip's soft memory limit unless GOMEMLIMIT set one, which the
// runtime has applied already.
func applyGC(gc config.GC) {
	debug.SetGCPercent(gc.Percent)
	if gc.MemoryLimitEnv == "" {
		debug.SetMemoryLimit(gc.MemoryLimit)
	}
}
