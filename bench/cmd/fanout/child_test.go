package main

import (
	"os"
	"testing"

	"github.com/apistack/platform/bench/internal/fanout"
	"github.com/apistack/platform/bench/internal/selfexec"
)

// TestMain lets the runs of these tests start this test binary as their sender
// child (-send-process is on by default).
func TestMain(m *testing.M) {
	if selfexec.Is(fanout.SenderChildEnv) {
		os.Exit(fanout.SenderChildMain())
	}
	os.Exit(m.Run())
}
