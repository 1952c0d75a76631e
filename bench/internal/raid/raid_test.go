package raid

import (
	"testing"
	"time"
)

func TestPerSendSumsTheRunsOfAChannel(t *testing.T) {
	r := &CostResult{Runs: []CostRun{
		{Channel: "a", Sends: 100, ChatCPU: 30 * time.Millisecond, RedisCPU: 10 * time.Millisecond},
		{Channel: "b", Sends: 100, ChatCPU: 90 * time.Millisecond},
		{Channel: "a", Sends: 300, ChatCPU: 50 * time.Millisecond, RedisCPU: 30 * time.Millisecond},
	}}
	chat, redis := r.PerSend("a")
	if chat != 200*time.Microsecond || redis != 100*time.Microsecond {
		t.Fatalf("per send = %s, %s", chat, redis)
	}
	if c, _ := r.PerSend("none"); c != 0 {
		t.Fatalf("no runs = %s", c)
	}
}
