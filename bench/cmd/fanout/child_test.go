package main

import (
	"os"
	"testing"

	"github.com/apistack/platform/bench/internal/fanout"
)

// TestMain lets the runs of these tests start this test binary as their sender
// child (-send-process is on by default).
func TestMain(m *testing.M) {
	if os.Getenv(fanout.SenderChildEnv) != "" {
		os.Exit(fanout.SenderChildMain())
	}
	os.Exit(m.Run())
}
