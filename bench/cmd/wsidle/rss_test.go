package main

import (
	"os"
	"strings"
	"testing"
)

func TestParseVmRSS(t *testing.T) {
	status := "Name:\tgo\nVmPeak:\t 99 kB\nVmRSS:\t   10240 kB\nThreads:\t5\n"
	got, err := parseVmRSS(strings.NewReader(status))
	if err != nil || got != 10240*1024 {
		t.Fatalf("got %d, %v", got, err)
	}
	if _, err := parseVmRSS(strings.NewReader("Name:\tkthread\n")); err == nil {
		t.Error("missing VmRSS accepted")
	}
	if _, err := parseVmRSS(strings.NewReader("VmRSS:\tlots\n")); err == nil {
		t.Error("odd VmRSS accepted")
	}
}

func TestReadRSSOfThisProcess(t *testing.T) {
	n, err := readRSS(os.Getpid())
	if err != nil || n <= 0 {
		t.Fatalf("rss %d, %v", n, err)
	}
}
