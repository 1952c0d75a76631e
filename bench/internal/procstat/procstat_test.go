package procstat

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
	n, err := RSS(os.Getpid())
	if err != nil || n <= 0 {
		t.Fatalf("rss %d, %v", n, err)
	}
}

func TestParseStatCPU(t *testing.T) {
	stat := "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 1 0 5 1000 10 0"
	got, err := parseStatCPU(stat)
	if err != nil || got != 3.25 {
		t.Fatalf("got %v, %v; want 3.25 s", got, err)
	}
	if _, err := parseStatCPU("42 (x) S 1"); err == nil {
		t.Error("short stat line accepted")
	}
}

func TestCPUSecondsOfThisProcess(t *testing.T) {
	if _, err := CPUSeconds(os.Getpid()); err != nil {
		t.Fatal(err)
	}
}

func TestGauge(t *testing.T) {
	text := "# HELP go_goroutines x\n# TYPE go_goroutines gauge\ngo_goroutines_total 1\ngo_goroutines 10017\n"
	if n, err := Gauge(strings.NewReader(text), "go_goroutines"); err != nil || n != 10017 {
		t.Fatalf("got %d, %v", n, err)
	}
	if _, err := Gauge(strings.NewReader(text), "process_open_fds"); err == nil {
		t.Fatal("a missing gauge read")
	}
}
